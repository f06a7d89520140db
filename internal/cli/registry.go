package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/regcheck/regcheck/scan"
)

// registryFlags are the flags of every command that asks registries.
type registryFlags struct {
	concurrency int
	timeout     time.Duration
	platforms   []string
	insecure    []string
	caFiles     []string
	maxPulls    int
}

// addTo adds the flags; withPlatform is false for commands that walk no
// index (gc-check's API mode).
func (r *registryFlags) addTo(fs *pflag.FlagSet, withPlatform bool) {
	fs.IntVar(&r.concurrency, "concurrency", 8, "registry requests in flight at once")
	fs.DurationVar(&r.timeout, "timeout", 30*time.Second, "timeout of each registry request, its retries included")
	if withPlatform {
		fs.StringArrayVar(&r.platforms, "platform", nil, "only require index children for this os/arch[/variant] (repeatable; default: every child)")
	}
	fs.StringArrayVar(&r.insecure, "insecure-registry", nil, "allow plain HTTP and unverified TLS for this host[:port] only (repeatable)")
	fs.StringArrayVar(&r.caFiles, "ca-file", nil, "trust the CA certificates in this PEM file, besides the system roots (repeatable)")
	fs.IntVar(&r.maxPulls, "max-pulls", 0, "send at most N manifest GETs (Docker Hub's pulls) to each registry host, retries included; 0: no cap. RateLimit headers are heeded anyway, a tenth of the limit kept in reserve")
}

// options are the scan options the flags and the global logger make.
func (r *registryFlags) options(g *globals) []scan.Option {
	return []scan.Option{
		scan.WithConcurrency(r.concurrency),
		scan.WithTimeout(r.timeout),
		scan.WithPlatforms(r.platforms...),
		scan.WithInsecureRegistries(r.insecure...),
		scan.WithCAFiles(r.caFiles...),
		scan.WithMaxPulls(r.maxPulls),
		scan.WithLogger(g.logger),
		scan.WithUserAgent("regcheck/" + Version),
	}
}
