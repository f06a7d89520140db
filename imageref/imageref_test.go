package imageref

import (
	"fmt"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha512:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in   string
		want       Ref
		normalized string
		domain     string
	}{
		{name: "official image, no tag", in: "nginx", want: Ref{Repo: "docker.io/library/nginx"}, normalized: "docker.io/library/nginx:latest", domain: "docker.io"},
		{name: "official image, tag", in: "nginx:1.27", want: Ref{Repo: "docker.io/library/nginx", Tag: "1.27"}, normalized: "docker.io/library/nginx:1.27", domain: "docker.io"},
		{name: "latest written", in: "nginx:latest", want: Ref{Repo: "docker.io/library/nginx", Tag: "latest"}, normalized: "docker.io/library/nginx:latest", domain: "docker.io"},
		{name: "user image", in: "coturn/coturn:4.18.0", want: Ref{Repo: "docker.io/coturn/coturn", Tag: "4.18.0"}, normalized: "docker.io/coturn/coturn:4.18.0", domain: "docker.io"},
		{name: "docker.io shorthand", in: "docker.io/nginx", want: Ref{Repo: "docker.io/library/nginx"}, normalized: "docker.io/library/nginx:latest", domain: "docker.io"},
		{name: "index.docker.io", in: "index.docker.io/busybox:1", want: Ref{Repo: "docker.io/library/busybox", Tag: "1"}, normalized: "docker.io/library/busybox:1", domain: "docker.io"},
		{name: "full docker.io", in: "docker.io/library/nginx:1", want: Ref{Repo: "docker.io/library/nginx", Tag: "1"}, normalized: "docker.io/library/nginx:1", domain: "docker.io"},
		{name: "registry-1.docker.io is a host of its own", in: "registry-1.docker.io/x/y:1", want: Ref{Repo: "registry-1.docker.io/x/y", Tag: "1"}, normalized: "registry-1.docker.io/x/y:1", domain: "registry-1.docker.io"},
		{name: "digest", in: "nginx@" + dA, want: Ref{Repo: "docker.io/library/nginx", Digest: dA}, normalized: "docker.io/library/nginx@" + dA, domain: "docker.io"},
		{name: "sha512 digest", in: "ghcr.io/o/r@" + dB, want: Ref{Repo: "ghcr.io/o/r", Digest: dB}, normalized: "ghcr.io/o/r@" + dB, domain: "ghcr.io"},
		{name: "tag and digest", in: "ghcr.io/o/r:v1@" + dA, want: Ref{Repo: "ghcr.io/o/r", Tag: "v1", Digest: dA}, normalized: "ghcr.io/o/r:v1@" + dA, domain: "ghcr.io"},
		{name: "latest and digest", in: "nginx:latest@" + dA, want: Ref{Repo: "docker.io/library/nginx", Tag: "latest", Digest: dA}, normalized: "docker.io/library/nginx:latest@" + dA, domain: "docker.io"},
		{name: "localhost with port", in: "localhost:5000/x", want: Ref{Repo: "localhost:5000/x"}, normalized: "localhost:5000/x:latest", domain: "localhost:5000"},
		{name: "localhost with port and tag", in: "localhost:5000/team/app:1", want: Ref{Repo: "localhost:5000/team/app", Tag: "1"}, normalized: "localhost:5000/team/app:1", domain: "localhost:5000"},
		{name: "localhost without port", in: "localhost/x", want: Ref{Repo: "localhost/x"}, normalized: "localhost/x:latest", domain: "localhost"},
		{name: "registry host", in: "registry.k8s.io/pause:3.10", want: Ref{Repo: "registry.k8s.io/pause", Tag: "3.10"}, normalized: "registry.k8s.io/pause:3.10", domain: "registry.k8s.io"},
		{name: "uppercase host", in: "Registry.example.com/a:b", want: Ref{Repo: "Registry.example.com/a", Tag: "b"}, normalized: "Registry.example.com/a:b", domain: "Registry.example.com"},
		{name: "surrounding space", in: " nginx:1\n", want: Ref{Repo: "docker.io/library/nginx", Tag: "1"}, normalized: "docker.io/library/nginx:1", domain: "docker.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if n := got.Normalized(); n != tt.normalized {
				t.Errorf("Parse(%q).Normalized() = %q, want %q", tt.in, n, tt.normalized)
			}
			if d := got.Domain(); d != tt.domain {
				t.Errorf("Parse(%q).Domain() = %q, want %q", tt.in, d, tt.domain)
			}
			if got.Pinned() != (tt.want.Digest != "") {
				t.Errorf("Parse(%q).Pinned() = %v", tt.in, got.Pinned())
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, err string }{
		{"uppercase repository", "Nginx:1", `invalid image reference "Nginx:1": invalid reference format: repository name (library/Nginx) must be lowercase`},
		{"uppercase path", "ghcr.io/O/r", `invalid image reference "ghcr.io/O/r": invalid reference format: repository name (O/r) must be lowercase`},
		{"empty", "", `invalid image reference "": invalid reference format`},
		{"space only", " ", `invalid image reference " ": invalid reference format`},
		{"empty tag", "nginx:", `invalid image reference "nginx:": invalid reference format`},
		{"short digest", "nginx@sha256:abc", `invalid image reference "nginx@sha256:abc": invalid reference format`},
		{"uppercase digest", "nginx@sha256:" + strings.Repeat("A", 64), `invalid image reference "nginx@sha256:` + strings.Repeat("A", 64) + `": invalid checksum digest format`},
		{"two tags", "a:b:c", `invalid image reference "a:b:c": invalid reference format`},
		{"inner space", "nginx latest", `invalid image reference "nginx latest": invalid reference format`},
		{"image ID", strings.Repeat("a", 64), `invalid image reference "` + strings.Repeat("a", 64) + `": invalid repository name (` + strings.Repeat("a", 64) + `), cannot specify 64-byte hexadecimal strings`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if err == nil || err.Error() != tt.err {
				t.Errorf("Parse(%q) error = %v\nwant %s", tt.in, err, tt.err)
			}
			if got != (Ref{}) {
				t.Errorf("Parse(%q) = %#v with an error, want the zero Ref", tt.in, got)
			}
		})
	}
}

func TestEffectiveTag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref  Ref
		want string
	}{
		{Ref{Repo: "docker.io/library/nginx"}, "latest"},
		{Ref{Repo: "docker.io/library/nginx", Tag: "1"}, "1"},
		{Ref{Repo: "docker.io/library/nginx", Digest: dA}, ""},
		{Ref{Repo: "docker.io/library/nginx", Tag: "1", Digest: dA}, "1"},
	}
	for _, tt := range tests {
		if got := tt.ref.EffectiveTag(); got != tt.want {
			t.Errorf("%#v.EffectiveTag() = %q, want %q", tt.ref, got, tt.want)
		}
	}
	if n := (Ref{}).Normalized(); n != "" {
		t.Errorf("zero Ref normalizes to %q, want empty", n)
	}
}

// FuzzParse: Normalized and Domain are what distribution/reference says
// for the reference with the default tag added, and Normalized parses back
// to the same Ref but for that tag.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"nginx", "nginx:1", "ghcr.io/o/r:v1@" + dA, "localhost:5000/x@" + dA, "index.docker.io/a/b", "Nginx", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		named, rerr := reference.ParseNormalizedNamed(strings.TrimSpace(s))
		if (err == nil) != (rerr == nil) {
			t.Fatalf("Parse(%q) error %v, reference error %v", s, err, rerr)
		}
		if err != nil {
			return
		}
		if want := reference.TagNameOnly(named).String(); r.Normalized() != want {
			t.Errorf("Parse(%q).Normalized() = %q, want %q", s, r.Normalized(), want)
		}
		if d := reference.Domain(named); r.Domain() != d {
			t.Errorf("Parse(%q).Domain() = %q, want %q", s, r.Domain(), d)
		}
		again, err := Parse(r.Normalized())
		if err != nil {
			t.Fatalf("Parse(%q) again: %v", r.Normalized(), err)
		}
		if again.Repo != r.Repo || again.Digest != r.Digest || again.EffectiveTag() != r.EffectiveTag() {
			t.Errorf("Parse(%q) = %#v, parsed again %#v", s, r, again)
		}
	})
}

// TestParseCache: an answer from the cache is the parser's own, and the
// cache never holds more than its bound, however many references come.
func TestParseCache(t *testing.T) {
	c := parsed
	t.Cleanup(func() { parsed = c })
	parsed = &parseCache{max: 8}
	for i := range 100 {
		s := fmt.Sprintf("registry.example:5000/team/app%d:v%d", i, i)
		first, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(s)
		if err != nil || again != first {
			t.Fatalf("Parse(%q) again = %+v, %v; first %+v", s, again, err, first)
		}
		if want, _ := parse(s); first != want {
			t.Fatalf("Parse(%q) = %+v, the parser says %+v", s, first, want)
		}
		if n := len(parsed.m); n > parsed.max {
			t.Fatalf("the cache holds %d answers, more than its bound %d", n, parsed.max)
		}
	}
	if _, err := Parse("Upper/Case"); err == nil {
		t.Fatal("an invalid reference parsed")
	}
	if _, ok := parsed.get("Upper/Case"); ok {
		t.Fatal("an invalid reference's answer was kept")
	}
}
