package pullpath

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

const zeroDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// ep is the part of an Endpoint most cases check, in one comparable value.
type ep struct {
	url, repo, ns string
	mirror        bool
	resolve, pull bool
	flags         string // "skip", "fallback", "blocked", space separated
	src           string // Source without the testdata/ prefix
}

func (e ep) String() string {
	return fmt.Sprintf("{%s repo=%s ns=%q mirror=%v resolve=%v pull=%v flags=%q src=%q}",
		e.url, e.repo, e.ns, e.mirror, e.resolve, e.pull, e.flags, e.src)
}

func summarize(eps []Endpoint) []ep {
	out := make([]ep, len(eps))
	for i, e := range eps {
		var flags []string
		if e.SkipVerify {
			flags = append(flags, "skip")
		}
		if e.HTTPFallback {
			flags = append(flags, "fallback")
		}
		if e.Blocked {
			flags = append(flags, "blocked")
		}
		out[i] = ep{url: e.URL.String(), repo: e.Repository, ns: e.Namespace, mirror: e.Mirror,
			resolve: e.Resolve, pull: e.Pull, flags: strings.Join(flags, " "), src: strings.TrimPrefix(e.Source, "testdata/")}
	}
	return out
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatalf("parsing %s: %v", s, err)
	}
	return ref
}

func mustLoad(t *testing.T, path string, opts ...Option) *Config {
	t.Helper()
	c, err := Load(path, opts...)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return c
}

func endpointsOf(t *testing.T, c *Config, ref string) []Endpoint {
	t.Helper()
	eps, err := c.Endpoints(mustRef(t, ref))
	if err != nil {
		t.Fatalf("Endpoints(%s): %v", ref, err)
	}
	return eps
}

func checkEndpoints(t *testing.T, got []Endpoint, want []ep) {
	t.Helper()
	g := summarize(got)
	if len(g) != len(want) {
		t.Fatalf("got %d endpoints, want %d:\ngot  %v\nwant %v", len(g), len(want), g, want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("endpoint %d:\ngot  %v\nwant %v", i, g[i], want[i])
		}
	}
}
