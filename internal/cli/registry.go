package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/regcheck/regcheck/cache"
	"github.com/regcheck/regcheck/credprovider"
	"github.com/regcheck/regcheck/scan"
)

// registryFlags are the flags of every command that asks registries.
type registryFlags struct {
	concurrency int
	timeout     time.Duration
	platforms   []string
	insecure    []string
	blobGet     []string
	caFiles     []string
	cacheDir    string
	noCache     bool
	cacheMax    byteSize
	reverify    cache.Share
	maxPulls    int
	// pullPath is --registries-config: the nodes' registry configuration.
	pullPath string
	// providers are the kubelet's credential provider plugins.
	providers providerFlags
}

// addTo adds the flags; withPlatform is false for commands that walk no
// index or ask the registry itself (gc-check, rescue): they get neither
// --platform nor --registries-config.
func (r *registryFlags) addTo(fs *pflag.FlagSet, withPlatform bool) {
	fs.IntVar(&r.concurrency, "concurrency", 8, "registry requests in flight at once")
	fs.DurationVar(&r.timeout, "timeout", 30*time.Second, "timeout of each registry request, its retries included")
	if withPlatform {
		// The commands that walk images as nodes pull them (scan, pin):
		// gc-check and rescue ask the registry itself.
		fs.StringVar(&r.pullPath, "registries-config", "", "walk each image as a node reading this registry configuration pulls it: its mirrors in order, with their rewrites, then the registry unless disabled (a k3s/RKE2 registries.yaml, a containerd hosts directory such as /etc/containerd/certs.d, a CRI-O registries.conf with its sibling registries.conf.d drop-ins, or a registries.conf.d folder alone; told apart by content). The manifest cache is not used with it")
		fs.StringSliceVar(&r.platforms, "platform", nil, "the platforms the pods run on, os/arch[/variant]: only their index children are required, and pin refuses a single-platform manifest of another (repeatable or comma-separated; default: every child)")
	}
	fs.StringArrayVar(&r.insecure, "insecure-registry", nil, "allow plain HTTP and unverified TLS for this host[:port] only (repeatable)")
	fs.StringArrayVar(&r.blobGet, "blob-get-registry", nil, "prove the blobs of this host[:port] with a ranged GET, as a pull fetches them, never with a HEAD alone: for a front whose HEAD answers 200 for a blob its GET answers 404 (hosts answering with X-Artifactory-Id are treated so anyway); its cached manifests are GET too (repeatable)")
	fs.StringArrayVar(&r.caFiles, "ca-file", nil, "trust the CA certificates in this PEM file, besides the system roots (repeatable)")
	fs.StringVar(&r.cacheDir, "cache-dir", "", "keep the manifests read in this folder, by digest, so that later runs ask only whether each is still there (a HEAD, not a pull) (default: regcheck/manifests in the user cache folder)")
	fs.BoolVar(&r.noCache, "no-cache", false, "keep no manifests on disk: GET every one (overrides --cache-dir)")
	r.cacheMax = 256 << 20
	fs.Var(&r.cacheMax, "cache-max-size", "most the manifest cache holds, least recently used out (bytes, or with KiB, MiB, GiB, kB, MB, GB)")
	fs.TextVar(&r.reverify, "cache-reverify", cache.DefaultReverify, "each run, GET this `share` of the cached manifests it uses again, in turn, and check the bytes against the digest as a first GET does, so that a registry or proxy now serving other bytes is digest-mismatch on a warm run too: 1/30 GETs about 1 in 30 cached manifests and each again at least once in 31 runs; a fraction or a decimal, 0 never, 1 every one")
	fs.IntVar(&r.maxPulls, "max-pulls", 0, "send at most N manifest GETs (Docker Hub's pulls) to each registry host, retries included; 0: no cap. RateLimit headers are heeded anyway, a tenth of the limit kept in reserve")
	fs.StringVar(&r.providers.config, "image-credential-provider-config", "", providerConfigHelp)
	fs.StringVar(&r.providers.binDir, "image-credential-provider-bin-dir", "", providerBinDirHelp)
	fs.DurationVar(&r.providers.timeout, "credential-provider-timeout", credprovider.DefaultTimeout, providerTimeoutHelp)
}

// options are the scan options the flags and the global logger make.
func (r *registryFlags) options(g *globals) []scan.Option {
	opts := []scan.Option{
		scan.WithConcurrency(r.concurrency),
		scan.WithTimeout(r.timeout),
		scan.WithPlatforms(r.platforms...),
		scan.WithInsecureRegistries(r.insecure...),
		scan.WithBlobGetRegistries(r.blobGet...),
		scan.WithCAFiles(r.caFiles...),
		scan.WithMaxPulls(r.maxPulls),
		scan.WithLogger(g.logger),
		scan.WithUserAgent("regcheck/" + Version),
	}
	opts = append(opts, r.providers.options(g)...) // the kubelet's plugins before the Docker config
	if r.pullPath != "" {
		return append(opts, scan.WithPullPathFile(r.pullPath))
	}
	if dir := r.cacheFolder(g); dir != "" {
		opts = append(opts, scan.WithCache(dir, int64(r.cacheMax)), scan.WithCacheReverify(r.reverify))
	}
	return opts
}

// cacheFolder is where manifests are kept: --cache-dir, else regcheck/manifests
// in the user cache folder; "" with --no-cache, or when there is no user
// cache folder (no $HOME).
func (r *registryFlags) cacheFolder(g *globals) string {
	switch {
	case r.noCache:
		return ""
	case r.cacheDir != "":
		return r.cacheDir
	}
	dir, err := userCacheDir()
	if err != nil {
		g.logger.Debug("no manifest cache", "err", err)
		return ""
	}
	return filepath.Join(dir, "regcheck", "manifests")
}

// userCacheDir is os.UserCacheDir; the tests keep theirs apart.
var userCacheDir = os.UserCacheDir

// byteSize is a flag value in bytes, written with an optional unit.
type byteSize int64

var units = map[string]int64{"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1e3, "mb": 1e6, "gb": 1e9}

func (b *byteSize) Set(s string) error {
	num := strings.TrimRight(s, "BbKkMmGgIi ")
	n, err := strconv.ParseInt(num, 10, 64)
	unit, ok := units[strings.ToLower(strings.TrimSpace(s[len(num):]))]
	if err != nil || !ok || n <= 0 || n > math.MaxInt64/unit {
		return fmt.Errorf("%q: want a positive size: bytes, or with KiB, MiB, GiB, kB, MB or GB", s)
	}
	*b = byteSize(n * unit)
	return nil
}

func (b *byteSize) String() string {
	for _, u := range []string{"GiB", "MiB", "KiB"} {
		if n := units[strings.ToLower(u)]; int64(*b) >= n && int64(*b)%n == 0 {
			return fmt.Sprintf("%d%s", int64(*b)/n, u)
		}
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Type() string { return "size" }
