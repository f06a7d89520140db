package render

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/internal/redact"
)

// Fetch says where and how the dependencies of a chart that are not in
// its charts/ folder are fetched: as helm dependency build does, with
// Helm's downloader, from the HTTP chart repositories and OCI registries
// Chart.yaml names, at the versions Chart.lock pins.
type Fetch struct {
	// Dir is where fetched charts are kept (one folder per dependency,
	// and Helm's content cache). Required.
	Dir string
	// Helm are Helm's settings: its repositories file (names and
	// credentials of HTTP repositories), repository cache and registry
	// config (OCI credentials, with Docker's config after it). Nil is
	// cli.New(): Helm's own files, as the helm command finds them.
	Helm *cli.EnvSettings
	// Insecure are the registry hosts (host[:port]) reached over plain
	// HTTP. None by default.
	Insecure []string
	// Timeout bounds each request of a fetch (an index, a package, a
	// registry's manifest or blob), its body read included; 0 is Helm's
	// own, 120 s. scan and pin give their --timeout.
	Timeout time.Duration
	// MaxSize bounds each answer of a fetch (an index.yaml, a package, a
	// blob); 0 is DefaultMaxFetch. An HTTP repository the repositories
	// file gives TLS settings of its own (a CA, a client certificate) is
	// read with Helm's transport, bounded in time only.
	MaxSize int64
	// Transport is the base of every request to an OCI registry (the
	// CA certificates trusted): a scan's own. Nil is
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// DefaultMaxFetch is the default Fetch.MaxSize: the largest public
// index.yaml files are a few tens of MiB.
const DefaultMaxFetch = 64 << 20

// WithFetch fetches the dependencies of charts that are not in their
// charts/ folder (see Fetch). The default fetches nothing: such a
// dependency is left out with a notice, and the chart rendered without
// it when it can be, else its values read by the image conventions.
func WithFetch(f Fetch) Option {
	return func(o *options) { o.fetch = &fetcher{Fetch: f, updated: map[string]bool{}} }
}

// errOffline is why a dependency is not fetched without WithFetch.
var errOffline = errors.New("not fetched: offline")

// fetcher fetches dependencies for one Find.
type fetcher struct {
	Fetch
	mu      sync.Mutex
	all     bool            // the repositories of Helm's repositories file have been updated
	updated map[string]bool // repository URLs whose index has been fetched
}

// dependencies adds to h.raw each dependency of c that is not in its
// charts/ folder: from the tree for file://, else fetched when o says so.
// Each one left out is in h.missing, with a notice naming it and why.
func (h *chartDir) dependencies(c *chart.Chart, o *options) {
	chartFile := filepath.Join(h.disp, "Chart.yaml")
	for _, d := range c.Metadata.Dependencies {
		if d == nil || slices.ContainsFunc(c.Dependencies(), func(sub *chart.Chart) bool { return sub.Name() == d.Name }) {
			continue
		}
		var err error
		switch {
		case strings.HasPrefix(d.Repository, "file://"):
			err = h.local(d)
		case d.Repository == "":
			err = errors.New("not in charts/ and no repository named")
		case o.fetch == nil:
			err = errOffline
		default:
			err = h.fetched(d, lockVersion(c, d), o.fetch)
		}
		if err == nil {
			continue
		}
		h.missing = append(h.missing, d.Name)
		h.t.Errs = append(h.t.Errs, &Error{File: chartFile, Line: lineOf(h.file("Chart.yaml"), "name: "+d.Name), Notice: true,
			Msg: redact.String(fmt.Sprintf("dependency %s (%s) not rendered: %v", d.Name, cmpOr(d.Repository, "charts/"), err))})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// lockVersion is the version Chart.lock pins for d, or "".
func lockVersion(c *chart.Chart, d *chart.Dependency) string {
	if c.Lock == nil {
		return ""
	}
	for _, l := range c.Lock.Dependencies {
		if l.Name == d.Name && l.Repository == d.Repository {
			return l.Version
		}
	}
	return ""
}

// local adds the chart folder a file:// dependency names, relative to
// the chart's folder as Helm resolves it.
func (h *chartDir) local(d *chart.Dependency) error {
	p := strings.TrimPrefix(d.Repository, "file://")
	if !filepath.IsAbs(p) {
		p = filepath.Join(h.dir, filepath.FromSlash(p))
	}
	sub, err := loader.LoadDir(p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", display(h.t.Root, p), err)
	}
	if sub.Name() != d.Name {
		return fmt.Errorf("%s holds chart %s, not %s", display(h.t.Root, p), sub.Name(), d.Name)
	}
	prefix := "charts/" + d.Name + "/"
	if h.localDirs == nil {
		h.localDirs = map[string]string{}
	}
	h.localDirs["charts/"+d.Name] = display(h.t.Root, p)
	for _, f := range sub.Raw {
		h.raw = append(h.raw, &common.File{Name: prefix + f.Name, ModTime: f.ModTime, Data: f.Data})
	}
	return nil
}

// fetched adds dependency d, at version (Chart.lock's, or "" for the
// newest d.Version allows), as f fetches it.
func (h *chartDir) fetched(d *chart.Dependency, version string, f *fetcher) error {
	data, name, err := f.get(d, version)
	if err != nil {
		return err
	}
	h.raw = append(h.raw, &common.File{Name: "charts/" + name, Data: data})
	return nil
}

// get fetches d with Helm's downloader.Manager into a folder of f.Dir of
// its own: a chart whose only dependency is d, as helm dependency update
// fetches it. It returns the packaged chart and its file name.
func (f *fetcher) get(d *chart.Dependency, version string) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dep := &chart.Dependency{Name: d.Name, Version: d.Version, Repository: d.Repository}
	if version != "" {
		dep.Version = version
	}
	sum := sha256.Sum256([]byte(dep.Name + "\x00" + dep.Version + "\x00" + dep.Repository))
	work := filepath.Join(f.Dir, "deps", hex.EncodeToString(sum[:8]))
	if p, ok := fetchedOnce.Load(work); ok {
		got := p.(packaged)
		return got.data, got.name, nil
	}
	if err := writeFetchChart(work, dep); err != nil {
		return nil, "", err
	}
	settings := f.Helm
	if settings == nil {
		settings = cli.New()
	}
	rc, err := f.registryClient()
	if err != nil {
		return nil, "", err
	}
	var out bytes.Buffer
	m := &downloader.Manager{
		Out: &out, ChartPath: work, Getters: f.getters(settings), RegistryClient: rc,
		RepositoryConfig: settings.RepositoryConfig, RepositoryCache: settings.RepositoryCache,
		ContentCache: filepath.Join(f.Dir, "content"),
		// Helm's repositories are updated once a run, an unnamed
		// repository's index once for its URL.
		SkipUpdate: f.all && f.updated[dep.Repository],
	}
	if err := m.Update(); err != nil {
		return nil, "", f.timedOut(withUpdateErrors(err, out.String()))
	}
	f.all, f.updated[dep.Repository] = true, true
	data, name, err := readFetched(work, dep.Name)
	if err == nil {
		fetchedOnce.Store(work, packaged{data: data, name: name})
	}
	return data, name, err
}

// getters are Helm's, each HTTP request bounded by Timeout and, unless a
// repository has TLS settings of its own (which a transport given to
// Helm's getter would drop), each answer by MaxSize.
func (f *fetcher) getters(settings *cli.EnvSettings) getter.Providers {
	var opts []getter.Option
	if f.Timeout > 0 {
		opts = append(opts, getter.WithTimeout(f.Timeout))
	}
	if !customTLS(settings.RepositoryConfig) {
		opts = append(opts, getter.WithTransport(cappedTransport(f.maxSize())))
	}
	return getter.All(settings, opts...)
}

func (f *fetcher) maxSize() int64 { return cmp.Or(f.MaxSize, DefaultMaxFetch) }

// customTLS says whether a repository of Helm's repositories file has TLS
// settings of its own.
func customTLS(repositoryConfig string) bool {
	rf, err := repo.LoadFile(repositoryConfig)
	if err != nil {
		return false // no file: no repository of its own settings
	}
	for _, e := range rf.Repositories {
		if e.CertFile != "" || e.KeyFile != "" || e.CAFile != "" || e.InsecureSkipTLSVerify {
			return true
		}
	}
	return false
}

// cappedTransport is the transport Helm's HTTP getter makes for a
// repository without TLS settings of its own, each connection (one a
// request) failing once limit bytes are read from it: an endless
// index.yaml ends there, not in memory.
func cappedTransport(limit int64) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DisableCompression: true,
		DisableKeepAlives:  true,
		Proxy:              http.ProxyFromEnvironment,
		TLSClientConfig:    &tls.Config{},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cappedConn{Conn: c, left: limit, err: tooLarge(limit)}, nil
		},
	}
}

// tooLarge is what a read past limit bytes of an answer returns.
func tooLarge(limit int64) error {
	return fmt.Errorf("the answer is larger than %d MiB, more than regcheck reads of a chart repository", limit>>20)
}

// cappedConn fails its reads once left bytes are read.
type cappedConn struct {
	net.Conn
	left int64
	err  error
}

func (c *cappedConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, c.err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}

// cappedBodies wraps rt so that reading a body past limit bytes fails.
func cappedBodies(rt http.RoundTripper, limit int64) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body = &cappedBody{ReadCloser: resp.Body, left: limit, err: tooLarge(limit)}
		}
		return resp, err
	})
}

// cappedBody fails its reads once left bytes are read.
type cappedBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// timedOut says, of a fetch that ran into Timeout, which bound it was:
// Helm's words for it are the HTTP client's.
func (f *fetcher) timedOut(err error) error {
	if f.Timeout > 0 && strings.Contains(err.Error(), "Client.Timeout exceeded") {
		return fmt.Errorf("%w: no answer within %s (--timeout)", err, f.Timeout)
	}
	return err
}

// packaged is a chart package fetched, and its file name.
type packaged struct {
	data []byte
	name string
}

// fetchedOnce are the packages this process has fetched, by folder:
// pin renders a tree again after its edits, and fetches nothing twice.
var fetchedOnce sync.Map

// writeFetchChart writes in folder work a Chart.yaml whose only
// dependency is dep, and no Chart.lock.
func writeFetchChart(work string, dep *chart.Dependency) error {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	meta := chart.Metadata{APIVersion: chart.APIVersionV2, Name: "regcheck-fetch", Version: "0.0.0", Dependencies: []*chart.Dependency{dep}}
	raw, err := sigsyaml.Marshal(&meta)
	if err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(work, "Chart.lock"))
	if err := os.WriteFile(filepath.Join(work, "Chart.yaml"), raw, 0o644); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	return nil
}

// readFetched reads the package of chart name that Helm saved in
// work/charts.
func readFetched(work, name string) ([]byte, string, error) {
	entries, err := os.ReadDir(filepath.Join(work, "charts"))
	if err != nil {
		return nil, "", fmt.Errorf("chart cache: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), name+"-") || !strings.HasSuffix(e.Name(), ".tgz") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(work, "charts", e.Name()))
		if err != nil {
			return nil, "", fmt.Errorf("chart cache: %w", err)
		}
		return data, e.Name(), nil
	}
	return nil, "", fmt.Errorf("helm saved no package of %s", name)
}

// plainHTTP is a transport that reaches the hosts named over plain HTTP,
// as helm --plain-http does, and every other over HTTPS.
func plainHTTP(base http.RoundTripper, hosts []string) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if len(hosts) == 0 {
		return base
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.URL.Scheme == "https" && slices.Contains(hosts, req.URL.Host) {
			r := req.Clone(req.Context())
			r.URL.Scheme = "http"
			return base.RoundTrip(r)
		}
		return base.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var _ http.RoundTripper = roundTripper(nil)

// stub adds to c, for each dependency left out, a chart with no
// templates and no values of the version c asks for: the parent's own
// templates render as they would with that dependency disabled or
// empty, and .Values.<dependency> is a mapping.
func stub(c *chart.Chart, missing []string) {
	added := map[string]bool{}
	for _, d := range c.Metadata.Dependencies {
		if d == nil || !slices.Contains(missing, d.Name) {
			continue
		}
		d.Version = "0.0.0"
		if added[d.Name] {
			continue
		}
		added[d.Name] = true
		c.AddDependency(&chart.Chart{
			Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: d.Name, Version: "0.0.0"},
			Values:   map[string]any{},
		})
	}
}

// withUpdateErrors adds to err why Helm could not update a repository's
// index, which it writes to its output and goes on without.
func withUpdateErrors(err error, out string) error {
	var why []string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "Unable to get an update") && i+1 < len(lines) {
			why = append(why, strings.TrimSpace(lines[i+1]))
		}
	}
	if len(why) == 0 {
		return err
	}
	return fmt.Errorf("%w (updating the index: %s)", err, strings.Join(why, "; "))
}
