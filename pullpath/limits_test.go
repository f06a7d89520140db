package pullpath

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMaxMirrors: a host with more mirrors than MaxMirrors is asked for
// the first MaxMirrors, in the runtime's order, then the registry itself;
// a notice names the file and the line of the first mirror left out, and
// a mistyped value past the cut does not fail the load.
func TestMaxMirrors(t *testing.T) {
	const n = MaxMirrors + 4
	hosts := func() string {
		var b strings.Builder
		b.WriteString("server = \"https://registry.example.com\"\n") // line 1
		for i := range n {
			fmt.Fprintf(&b, "[host.\"https://m%d.example.com\"]\n  capabilities = [\"pull\", \"resolve\"]\n", i) // line 2+2i
		}
		return b.String()
	}
	k3s := func() string {
		var b strings.Builder
		b.WriteString("mirrors:\n  registry.example.com:\n    endpoint:\n") // lines 1-3
		for i := range n {
			fmt.Fprintf(&b, "      - https://m%d.example.com\n", i) // line 4+i
		}
		return b.String()
	}
	conf := func() string {
		var b strings.Builder
		b.WriteString("[[registry]]\nlocation = \"registry.example.com\"\n") // lines 1-2
		for i := range n {
			fmt.Fprintf(&b, "[[registry.mirror]]\nlocation = \"m%d.example.com\"\n", i) // line 3+2i
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, file, data string
		line             int
	}{
		{"hosts.toml", "registry.example.com/hosts.toml", hosts(), 2 + 2*MaxMirrors},
		{"k3s", "registries.yaml", k3s(), 4 + MaxMirrors},
		{"registries.conf", "registries.conf", conf(), 3 + 2*MaxMirrors},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), tc.file)
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			c := mustLoad(t, path)
			eps := endpointsOf(t, c, "registry.example.com/app@"+zeroDigest)
			if len(eps) != MaxMirrors+1 {
				t.Fatalf("%d endpoints, want %d mirrors and the registry", len(eps), MaxMirrors)
			}
			if got := eps[MaxMirrors-1].URL.Host; got != fmt.Sprintf("m%d.example.com", MaxMirrors-1) {
				t.Errorf("last mirror asked is %s, want m%d: the runtime's order", got, MaxMirrors-1)
			}
			if got := eps[MaxMirrors].URL.Host; got != "registry.example.com" || eps[MaxMirrors].Mirror {
				t.Errorf("last endpoint %s (mirror %v), want the registry itself", got, eps[MaxMirrors].Mirror)
			}
			ns := c.Notices()
			if len(ns) != 1 || ns[0].Path != path || ns[0].Line != tc.line || !strings.Contains(ns[0].Message, "the last 4 are not checked") {
				t.Fatalf("Notices() = %+v, want one at %s:%d about 4 mirrors", ns, path, tc.line)
			}
		})
	}
	t.Run("hosts.toml past the cut is not decoded", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "registry.example.com", "hosts.toml")
		os.MkdirAll(filepath.Dir(path), 0o755)
		data := hosts() + "[host.\"https://late.example.com\"]\n  capabilities = 3\n"
		os.WriteFile(path, []byte(data), 0o644)
		if ns := mustLoad(t, path).Notices(); len(ns) != 1 || !strings.Contains(ns[0].Message, "the last 5 are not checked") {
			t.Errorf("Notices() = %+v", ns)
		}
	})
	t.Run("no notice at the cap", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "registries.yaml")
		var b strings.Builder
		b.WriteString("mirrors:\n  registry.example.com:\n    endpoint:\n")
		for i := range MaxMirrors {
			fmt.Fprintf(&b, "      - https://m%d.example.com\n", i)
		}
		os.WriteFile(path, []byte(b.String()), 0o644)
		c := mustLoad(t, path)
		if ns := c.Notices(); len(ns) != 0 {
			t.Errorf("Notices() = %+v, want none", ns)
		}
		if eps := endpointsOf(t, c, "registry.example.com/app:1"); len(eps) != MaxMirrors+1 {
			t.Errorf("%d endpoints, want %d", len(eps), MaxMirrors+1)
		}
	})
}
