package pullpath

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/distribution/reference"
)

// find is FindRegistry: the registry whose prefix matches ref and is
// longest; among prefixes of one length the first in sorted order.
func (c *regConfig) find(ref string) *regRegistry {
	var best *regRegistry
	for i := range c.registries {
		r := &c.registries[i]
		if refMatchingPrefix(ref, r.Prefix) != -1 && (best == nil || len(r.Prefix) > len(best.Prefix)) {
			best = r
		}
	}
	return best
}

// refMatchingPrefix returns how much of ref the prefix matches, or -1. A
// prefix matches at a ':', '/' or '@' boundary; "*.example.com" matches any
// subdomain in the host part.
func refMatchingPrefix(ref, prefix string) int {
	switch {
	case strings.HasPrefix(prefix, "*."):
		return refMatchingSubdomainPrefix(ref, prefix)
	case len(ref) < len(prefix):
		return -1
	case len(ref) == len(prefix):
		if ref == prefix {
			return len(prefix)
		}
		return -1
	}
	if !strings.HasPrefix(ref, prefix) {
		return -1
	}
	// As upstream notes, this lets "example.com:5000" match "example.com".
	if c := ref[len(prefix)]; c == ':' || c == '/' || c == '@' {
		return len(prefix)
	}
	return -1
}

func refMatchingSubdomainPrefix(ref, prefix string) int {
	index := strings.Index(ref, prefix[1:])
	if index == -1 || strings.Contains(ref[:index], "/") {
		return -1
	}
	index += len(prefix[1:])
	if index == len(ref) {
		return index
	}
	switch ref[index] {
	case ':', '/', '@':
		return index
	}
	return -1
}

// endpoints is PullSourcesFromReference plus what the docker transport does
// with each source (docker/docker_image_src.go newImageSource): mirrors in
// file order, filtered by mirror-by-digest-only and pull-from-mirror, then
// the registry's own location last; each source is tried whole.
func (c *regConfig) endpoints(img image) ([]Endpoint, error) {
	reg := c.find(img.named())
	if reg == nil {
		reg = &regRegistry{Prefix: img.String(), regEndpoint: regEndpoint{Location: img.String(), line: -1}}
	}
	var sources []regEndpoint
	for _, m := range reg.Mirrors {
		switch {
		case reg.MirrorByDigestOnly && !img.byDigest():
		case m.PullFromMirror == mirrorDigestOnly && !img.byDigest():
		case m.PullFromMirror == mirrorTagOnly && img.byDigest():
		default:
			sources = append(sources, m)
		}
	}
	sources = append(sources, reg.regEndpoint)
	eps := make([]Endpoint, 0, len(sources))
	for i, src := range sources {
		ep, err := c.endpointOf(img, reg, src)
		if err != nil {
			return nil, err
		}
		ep.Mirror = i < len(sources)-1
		eps = append(eps, ep)
	}
	return eps, nil
}

// endpointOf rewrites the reference for one source (rewriteReference) and
// sets what newImageSourceAttempt and newDockerClient decide: blocked by
// the registry that matches the rewritten name, certificate checks and the
// http fallback by the source's own insecure flag.
func (c *regConfig) endpointOf(img image, reg *regRegistry, src regEndpoint) (Endpoint, error) {
	refString := img.String()
	physical := refString
	if src.Location != "" {
		n := refMatchingPrefix(refString, reg.Prefix)
		if n == -1 {
			return Endpoint{}, fmt.Errorf("invalid prefix '%v' for reference '%v'", reg.Prefix, refString)
		}
		physical = src.Location + refString[n:]
	}
	named, err := reference.ParseNamed(physical)
	if err != nil {
		return Endpoint{}, fmt.Errorf("rewriting reference %s for %s: %w", refString, src.Location, err)
	}
	host := reference.Domain(named)
	ep := Endpoint{
		URL:          &url.URL{Scheme: "https", Host: defaultHost(host), Path: "/v2"},
		Repository:   reference.Path(named),
		SkipVerify:   src.Insecure,
		HTTPFallback: src.Insecure,
		Source:       c.sourceOf(reg, src),
	}
	if r := c.find(named.Name()); r != nil && r.Blocked {
		ep.Blocked = true
		ep.Notes = append(ep.Notes, fmt.Sprintf("registry %s is blocked", r.Prefix))
	} else {
		ep.Resolve, ep.Pull = true, true
	}
	return ep, nil
}

func (c *regConfig) sourceOf(reg *regRegistry, src regEndpoint) string {
	file := reg.file
	if file == "" {
		file = c.path
	}
	switch {
	case src.line < 0:
		return c.path + ": no [[registry]] matches; the reference itself"
	case src.line == 0:
		return file
	default:
		return file + ":" + strconv.Itoa(src.line)
	}
}
