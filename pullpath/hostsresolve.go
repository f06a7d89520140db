package pullpath

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
)

// entries are the hosts a file gives containerd, in order. Under k3s's
// rules a file that lists hosts but has no server key ends with its last
// host (no upstream fallback).
func (f *hostsFile) entries() []hostEntry {
	hosts := slices.Clone(f.hosts)
	if f.k3s && !f.hasServer && len(hosts) > 1 && hosts[len(hosts)-1].root {
		hosts = hosts[:len(hosts)-1]
	}
	return hosts
}

// registryHosts is containerd's ConfigureHosts (config/hosts.go) for one
// registry host, as the CRI plugin calls it (no DefaultScheme, no
// DefaultTLS): the directory's hosts, then the upstream registry filled in
// when the last entry names no host.
func registryHosts(f *hostsFile, host string) []hostEntry {
	var hosts []hostEntry
	if f != nil {
		hosts = f.entries()
	}
	if hosts == nil {
		hosts = []hostEntry{{root: true}}
	}
	if last := &hosts[len(hosts)-1]; last.host == "" {
		fillDefault(last, host)
	}
	return hosts
}

// fillDefault sets the upstream registry: docker.io is
// https://registry-1.docker.io; localhost is https on no port or 443, else
// http, and skips verification unless the port is 80.
func fillDefault(e *hostEntry, host string) {
	switch {
	case host == "docker.io":
		e.scheme, e.host = "https", "registry-1.docker.io"
	case isLocalhost(host):
		e.host = host
		_, port, _ := net.SplitHostPort(host)
		e.scheme = "http"
		if port == "" || port == "443" {
			e.scheme = "https"
		}
		if port != "80" {
			t := true
			e.skipVerify = &t
		}
	default:
		e.scheme, e.host = "https", host
	}
	e.path = "/v2"
	e.caps = allCaps
	e.line = -1 // implied, not configured
}

// httpFallback is ConfigureHosts' rule: an http host with its own TLS
// settings (ca, client or skip_verify) on a port other than 80 is tried
// over https first, then plain http (docker.NewHTTPFallback).
func httpFallback(e hostEntry) (scheme string, fallback bool) {
	explicitTLS := e.caCerts != nil || e.clientPairs != nil || e.skipVerify != nil
	if e.scheme != "http" || !explicitTLS {
		return e.scheme, false
	}
	if _, port, _ := net.SplitHostPort(e.host); port == "80" {
		return e.scheme, false
	}
	return "https", true
}

// isProxy is RegistryHost.isProxy (registry.go): a host other than the
// reference's registry gets ?ns=, registry-1.docker.io for docker.io does
// not.
func isProxy(refHost, host string) bool {
	return refHost != host && (refHost != "docker.io" || host != "registry-1.docker.io")
}

// endpoints answers for a hosts directory.
func (d *hostsDir) endpoints(img image) ([]Endpoint, error) {
	f := d.lookup(img.host)
	if f != nil && f.err != nil {
		return nil, f.err
	}
	hosts := registryHosts(f, img.host)
	// Resolve (resolver.go) asks hosts that have pull, and resolve for a
	// tag; Fetch (fetcher.go) only checks that one host has pull, then asks
	// every host in order for manifests and blobs by digest.
	need := capPull
	if !img.byDigest() {
		need |= capResolve
	}
	anyPull := slices.ContainsFunc(hosts, func(h hostEntry) bool { return h.caps&capPull != 0 })
	eps := make([]Endpoint, 0, len(hosts))
	for _, h := range hosts {
		ep := endpointOf(h, f, img)
		ep.Resolve = h.caps&need == need
		ep.Pull = anyPull
		if anyPull && h.caps&capPull == 0 {
			ep.Notes = append(ep.Notes, "no pull capability, yet containerd's fetcher asks every host for manifests and blobs by digest")
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

func endpointOf(h hostEntry, f *hostsFile, img image) Endpoint {
	scheme, fallback := httpFallback(h)
	p := h.path
	if p != "" {
		p = path.Join("/", p)
	}
	ep := Endpoint{
		URL:          &url.URL{Scheme: scheme, Host: h.host, Path: p},
		Repository:   img.repo,
		HTTPFallback: fallback,
		SkipVerify:   h.skipVerify != nil && *h.skipVerify,
		CAFiles:      h.caCerts,
		ClientCerts:  h.clientPairs,
		Header:       h.header,
		Source:       sourceOf(h, f),
	}
	if isProxy(img.host, h.host) {
		ep.Namespace, ep.Mirror = img.host, true
	}
	if f != nil && f.k3s && len(h.rewrites) > 0 {
		ep.Repository, ep.Notes = rewrite(h.rewrites, img.repo)
	}
	return ep
}

func sourceOf(h hostEntry, f *hostsFile) string {
	switch {
	case f == nil:
		return "no host directory: default endpoint"
	case h.line < 0:
		return f.path + ": default endpoint (the upstream registry)"
	case h.line == 0:
		return f.path
	default:
		return f.path + ":" + strconv.Itoa(h.line)
	}
}

// rewrite is k3s's containerd withRewritesFromHost: the first pattern that
// changes the repository wins. The runtime walks a Go map, so when several
// patterns change it the winner is random; regcheck takes them sorted and
// says so in a note.
func rewrite(rules map[string]string, repo string) (string, []string) {
	var notes []string
	keys := slices.Sorted(maps.Keys(rules))
	out, hits := repo, 0
	for _, pattern := range keys {
		exp, err := regexp.Compile(pattern)
		if err != nil {
			notes = append(notes, fmt.Sprintf("rewrite %q does not compile; containerd skips it: %v", pattern, err))
			continue
		}
		if r := exp.ReplaceAllString(repo, rules[pattern]); r != repo {
			if hits == 0 {
				out = r
			}
			hits++
		}
	}
	if hits > 1 {
		notes = append(notes, fmt.Sprintf("%d rewrites change %q; k3s's containerd applies one in random (map) order, regcheck used the first sorted: %q", hits, repo, out))
	}
	return out, notes
}
