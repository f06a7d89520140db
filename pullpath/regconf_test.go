package pullpath

import (
	"errors"
	"testing"
)

// Cases read in containers/image pkg/sysregistriesv2/system_registries_v2.go
// (PullSourcesFromReference, rewriteReference, FindRegistry,
// refMatchingPrefix, postProcessRegistries) and docker/docker_image_src.go
// newImageSource / docker_client.go newDockerClient.
const regConfFile = "conf/registries.conf"

var regConfCases = []struct {
	name string
	ref  string
	want []ep
}{
	{
		// Mirrors in file order, the primary last; a digest-only mirror is
		// skipped for a tag; a location with a path moves the repository;
		// insecure skips verification and allows plain http.
		name: "tag: pull-from-mirror",
		ref:  "nginx:1.27",
		want: []ep{
			{url: "https://mirror.example.com:5000/v2", repo: "dockerhub/library/nginx", mirror: true, resolve: true, pull: true, src: regConfFile + ":9"},
			{url: "https://tag-mirror.example.com/v2", repo: "library/nginx", mirror: true, resolve: true, pull: true, flags: "skip fallback", src: regConfFile + ":16"},
			{url: "https://registry-1.docker.io/v2", repo: "library/nginx", resolve: true, pull: true, src: regConfFile + ":5"},
		},
	},
	{
		name: "digest: pull-from-mirror",
		ref:  "nginx@" + zeroDigest,
		want: []ep{
			{url: "https://mirror.example.com:5000/v2", repo: "dockerhub/library/nginx", mirror: true, resolve: true, pull: true, src: regConfFile + ":9"},
			{url: "https://digest-mirror.example.com/v2", repo: "library/nginx", mirror: true, resolve: true, pull: true, src: regConfFile + ":12"},
			{url: "https://registry-1.docker.io/v2", repo: "library/nginx", resolve: true, pull: true, src: regConfFile + ":5"},
		},
	},
	{
		// The longest prefix wins, and its location replaces the prefix.
		name: "longest prefix",
		ref:  "busybox:1",
		want: []ep{{url: "https://internal.example.com/v2", repo: "busybox-fork", resolve: true, pull: true, src: regConfFile + ":21"}},
	},
	{
		name: "mirror-by-digest-only, tag",
		ref:  "quay.io/a/b:1",
		want: []ep{{url: "https://quay.io/v2", repo: "a/b", resolve: true, pull: true, src: regConfFile + ":29"}},
	},
	{
		name: "mirror-by-digest-only, digest",
		ref:  "quay.io/a/b@" + zeroDigest,
		want: []ep{
			{url: "https://quay-mirror.example.com/v2", repo: "a/b", mirror: true, resolve: true, pull: true, src: regConfFile + ":34"},
			{url: "https://quay.io/v2", repo: "a/b", resolve: true, pull: true, src: regConfFile + ":29"},
		},
	},
	{
		// A wildcard prefix with no location pulls the reference as is.
		name: "wildcard prefix, blocked",
		ref:  "app.example.org/x:1",
		want: []ep{{url: "https://app.example.org/v2", repo: "x", flags: "blocked", src: regConfFile + ":25"}},
	},
	{
		name: "blocked",
		ref:  "blocked.example.net/x:1",
		want: []ep{{url: "https://blocked.example.net/v2", repo: "x", flags: "blocked", src: regConfFile + ":37"}},
	},
	{
		// Blocking is looked up for the rewritten name: a mirror under a
		// blocked prefix is refused, the primary is not.
		name: "mirror blocked by another entry",
		ref:  "ghcr.io/a/b:1",
		want: []ep{
			{url: "https://sub.example.org/v2", repo: "ghcr/a/b", mirror: true, flags: "blocked", src: regConfFile + ":45"},
			{url: "https://ghcr.io/v2", repo: "a/b", resolve: true, pull: true, src: regConfFile + ":41"},
		},
	},
	{
		name: "no entry matches",
		ref:  "registry.k8s.io/pause:3.10",
		want: []ep{{url: "https://registry.k8s.io/v2", repo: "pause", resolve: true, pull: true, src: regConfFile + ": no [[registry]] matches; the reference itself"}},
	},
}

// TestRegistriesConfEndpoints checks every case of regConfCases.
func TestRegistriesConfEndpoints(t *testing.T) {
	t.Parallel()
	tests := regConfCases
	c := mustLoad(t, "testdata/conf/registries.conf")
	if c.Format() != FormatRegistriesConf {
		t.Fatalf("Format() = %q, want %q", c.Format(), FormatRegistriesConf)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkEndpoints(t, endpointsOf(t, c, tt.ref), tt.want)
		})
	}
}

// prefix "docker.io/library/alpine" with location "docker.io" rewrites
// docker.io/library/alpine:3 to docker.io:3, which is no reference: the
// pull fails before any request (rewriteReference).
func TestRegistriesConfBadRewrite(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, "testdata/conf/registries.conf")
	if _, err := c.Endpoints(mustRef(t, "alpine:3")); err == nil {
		t.Errorf("Endpoints() = nil error, want the rewrite error")
	}
}

func TestRegistriesConfErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		line       int
	}{
		{name: "unsupported pull-from-mirror", file: "testdata/conf/bad-mirror.conf", line: 5},
		{name: "syntax", file: "testdata/conf/bad-syntax.conf", line: 3},
		{name: "location with a scheme", file: "testdata/conf/scheme.conf", line: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tt.file)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Load() error = %v, want a *ParseError", err)
			}
			if pe.Path != tt.file || pe.Line != tt.line {
				t.Errorf("error at %s:%d, want %s:%d (%v)", pe.Path, pe.Line, tt.file, tt.line, err)
			}
		})
	}
}

// refMatchingPrefix's rules as read in system_registries_v2.go.
func TestRefMatchingPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, prefix string
		want        int
	}{
		{"docker.io", "docker.io", 9},
		{"docker.io", "docker.io/", -1},
		{"docker.io/library", "docker.io", 9},
		{"docker.io/library", "docker.io/lib", -1},
		{"docker.io:5000/library", "docker.io", 9}, // upstream: "DON'T RELY ON THE CURRENT BEHAVIOR"
		{"docker.io/library@sha256:x", "docker.io/library", 17},
		{"sub.example.com/x", "*.example.com", 15},
		{"example.com/x", "*.example.com", -1},
		{"a.sub.example.com:5000/x", "*.example.com", 17},
		{"other.com/sub.example.com", "*.example.com", -1},
	}
	for _, tt := range tests {
		if got := refMatchingPrefix(tt.ref, tt.prefix); got != tt.want {
			t.Errorf("refMatchingPrefix(%q, %q) = %d, want %d", tt.ref, tt.prefix, got, tt.want)
		}
	}
}
