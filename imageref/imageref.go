package imageref

import (
	// The digests a reference may pin (sha256, sha384, sha512) validate
	// only when their hash is linked in.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"fmt"
	"strings"
	"sync"

	"github.com/distribution/reference"
)

// Ref is an image reference split into its normalized parts. A Ref is
// comparable: two references name the same thing when their Refs are equal.
type Ref struct {
	Repo   string // normalized repository: "nginx" is "docker.io/library/nginx"
	Tag    string // as written; empty when none was given
	Digest string // "sha256:…" when the reference pins one; empty otherwise
}

// Parse parses an image reference as a container runtime does (Docker's
// normalization, github.com/distribution/reference): "nginx" is
// docker.io/library/nginx, "coturn/coturn" is docker.io/coturn/coturn,
// "index.docker.io/x/y" is docker.io/x/y; a first element with a "." or
// ":", or "localhost", is a registry host. Surrounding space is ignored.
// An invalid reference (an uppercase repository, a short digest, an empty
// string) is an error that quotes it.
func Parse(s string) (Ref, error) {
	if r, ok := parsed.get(s); ok {
		return r, nil
	}
	r, err := parse(s)
	if err == nil {
		parsed.put(s, r)
	}
	return r, err
}

// parsed are the answers Parse gave for valid references, most of them
// asked again and again: a cluster of ten thousand pods names a few
// hundred images, each parsed for every pod at every walk. Its strings are
// then held once, however many containers keep them.
var parsed = &parseCache{max: 4096}

// parseCache is a map of references to their parts, emptied when it holds
// max: bounded whatever the input, and still what a cluster's references
// need between two walks.
type parseCache struct {
	mu  sync.Mutex
	max int
	m   map[string]Ref
}

func (c *parseCache) get(s string) (Ref, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[s]
	return r, ok
}

func (c *parseCache) put(s string, r Ref) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[string]Ref, min(c.max, 64))
	}
	c.m[s] = r
}

func parse(s string) (Ref, error) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(s))
	if err != nil {
		return Ref{}, fmt.Errorf("invalid image reference %q: %w", s, err)
	}
	r := Ref{Repo: named.Name()}
	if t, ok := named.(reference.Tagged); ok {
		r.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		r.Digest = d.Digest().String()
	}
	return r, nil
}

// Pinned reports whether r pins a digest: a runtime pulls it by digest,
// whatever its tag says.
func (r Ref) Pinned() bool { return r.Digest != "" }

// EffectiveTag is the tag as a runtime reads it: Tag, or "latest" when r
// has neither tag nor digest; empty for a digest alone.
func (r Ref) EffectiveTag() string {
	if r.Tag == "" && r.Digest == "" {
		return "latest"
	}
	return r.Tag
}

// Domain is the registry host of the repository: "docker.io",
// "localhost:5000".
func (r Ref) Domain() string {
	d, _, _ := strings.Cut(r.Repo, "/")
	return d
}

// Normalized is the reference as runtimes write it:
// "docker.io/library/nginx:latest", "ghcr.io/o/r:v1@sha256:…",
// "docker.io/library/nginx@sha256:…"; empty for the zero Ref. (It is not
// String, so that a Ref printed with %+v shows the tag as written.)
func (r Ref) Normalized() string {
	if r.Repo == "" {
		return ""
	}
	s := r.Repo
	if t := r.EffectiveTag(); t != "" {
		s += ":" + t
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}
