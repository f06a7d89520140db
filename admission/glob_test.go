package admission

import (
	"testing"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// Kyverno matches imageReferences with wildcards over the whole
// reference, registry included (docs: verify-images, imageReferences
// such as ghcr.io/kyverno/test-verify-image*).
func TestKyvernoMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, image string
		want           bool
	}{
		{"ghcr.io/kyverno/test-verify-image*", "ghcr.io/kyverno/test-verify-image:signed", true},
		{"ghcr.io/kyverno/test-verify-image:*", "ghcr.io/kyverno/test-verify-image@sha256:b31bfb4d0213f254d361e0079deaaebefa4f82ba7aa76ef82e90b4935ad5b105", false},
		{"ghcr.io/kyverno/test-verify-image*", "ghcr.io/kyverno/test-verify-image@sha256:b31bfb4d0213f254d361e0079deaaebefa4f82ba7aa76ef82e90b4935ad5b105", true},
		{"*", "registry.example.com:5000/team/app:v1", true},
		{"ghcr.io/*", "ghcr.io/a/b/c:v1", true}, // * crosses /
		{"ghcr.io/kyverno/*:v?", "ghcr.io/kyverno/app:v1", true},
		{"ghcr.io/kyverno/*:v?", "ghcr.io/kyverno/app:v10", false}, // ? is exactly one
		{"kyverno/*", "ghcr.io/kyverno/app:v1", false},             // the registry is part of the reference
		{"docker.io/nginx:*", "nginx:1.27", true},                  // Kyverno adds docker.io but not library/
		{"docker.io/library/nginx:*", "nginx:1.27", false},         // so the normalized name is not tried
		{"docker.io/library/nginx:*", "library/nginx:1.27", true},  // unless written so
		{"nginx:*", "nginx:1.27", false},                           // the default registry is added
		{"ghcr.io/org/app:latest", "ghcr.io/org/app", true},
		{"", "ghcr.io/org/app", false},
	} {
		t.Run(c.pattern+"|"+c.image, func(t *testing.T) {
			ref, err := imageref.Parse(c.image)
			if err != nil {
				t.Fatal(err)
			}
			names := kyvernoNames(types.Use{Written: c.image}, ref)
			if got := kyvernoMatches([]string{c.pattern}, names); got != c.want {
				t.Errorf("kyvernoMatches(%q, %q) = %v, want %v (names %v)", c.pattern, c.image, got, c.want, names)
			}
		})
	}
}

// TestKyvernoNamesWithoutWritten: where a use does not say how the image
// was written (a result read back, the watcher), every name it may have
// been written as is tried: docker.io/library/nginx and docker.io/nginx.
func TestKyvernoNamesWithoutWritten(t *testing.T) {
	ref, err := imageref.Parse("nginx:1.27")
	if err != nil {
		t.Fatal(err)
	}
	names := kyvernoNames(types.Use{}, ref)
	for _, p := range []string{"docker.io/library/nginx:*", "docker.io/nginx:*"} {
		if !kyvernoMatches([]string{p}, names) {
			t.Errorf("%s does not match %v", p, names)
		}
	}
}

// policy-controller's globs: * stays within a path element, ** crosses
// /, Docker Hub names are index.docker.io/library/… (its
// pkg/apis/glob documentation).
func TestGlobMatches(t *testing.T) {
	for _, c := range []struct {
		glob, image string
		want        bool
	}{
		{"index.docker.io/library/busybox:*", "busybox", true},
		{"index.docker.io/library/*", "busybox:1.36", true},
		{"index.docker.io/*/*", "myuser/myapp", true},
		{"index.docker.io/**", "myuser/myapp:v2", true},
		{"*", "busybox", true},                          // * alone is index.docker.io/library/*
		{"*/*", "myuser/myapp", true},                   // */* is index.docker.io/*/*
		{"*", "ghcr.io/org/app", false},                 // not a Docker Hub official image
		{"docker.io/library/busybox", "busybox", false}, // the glob must say index.docker.io
		{"ghcr.io/*/*", "ghcr.io/org/app:v1", true},
		{"ghcr.io/*/*", "ghcr.io/org", false},
		{"ghcr.io/*", "ghcr.io/org/team/app", false},
		{"ghcr.io/**", "ghcr.io/org/team/app:v1", true},
		{"ghcr.io/org/app", "ghcr.io/org/app:v1", false}, // the tag is part of the name
		{"ghcr.io/org/app*", "ghcr.io/org/app:v1", true},
		{"ghcr.io/org/app@sha256:*", "ghcr.io/org/app@sha256:b31bfb4d0213f254d361e0079deaaebefa4f82ba7aa76ef82e90b4935ad5b105", true},
		{"ghcr.io/**", "ghcrxio/org/app", false}, // . is literal
		{"127.0.0.1:5000/**", "127.0.0.1:5000/team/app:v1", true},
		{"[a-z]*", "busybox", false}, // not a glob policy-controller accepts
	} {
		t.Run(c.glob+"|"+c.image, func(t *testing.T) {
			ref, err := imageref.Parse(c.image)
			if err != nil {
				t.Fatal(err)
			}
			if got := globMatches([]string{c.glob}, ref); got != c.want {
				t.Errorf("globMatches(%q, %q) = %v, want %v (name %v)", c.glob, c.image, got, c.want, ref.PolicyControllerName())
			}
		})
	}
}

func TestWildcard(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"a*b*c", "aXXbYYc", true}, {"a*b*c", "aXXbYY", false}, {"***", "", true},
		{"?", "", false}, {"a?c", "abc", true}, {"abc", "abcd", false}, {"*d", "abcd", true},
	} {
		if got := wildcard(c.p, c.s); got != c.want {
			t.Errorf("wildcard(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}
