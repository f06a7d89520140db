package pullpath

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Cases read in containerd v2 core/remotes/docker/config/hosts.go
// (ConfigureHosts, parseHostsFile, parseHostConfig, getSortedHosts,
// hostPaths), resolver.go (Resolve, filterHosts, isProxy) and fetcher.go
// (Fetch).
const hubHostsFile = "certs.d/docker.io/hosts.toml"

var containerdCases = []struct {
	name string
	path string
	opts []Option
	ref  string
	want []ep
}{
	{
		// Hosts in file order, server last. For a tag, Resolve asks only
		// hosts with both pull and resolve (filterHosts(Pull|Resolve));
		// Fetch asks every host (it loops over r.hosts, not the filtered
		// list). override_path keeps the path without adding /v2; a path
		// without /v2 gets it appended; an http host with skip_verify is
		// tried over https first.
		name: "tag",
		path: "testdata/certs.d", ref: "nginx:1.27",
		want: []ep{
			{url: "https://pull-only.example.com/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: false, pull: true, src: hubHostsFile + ":4"},
			{url: "https://mirror.example.com:5000/v2/dockerhub", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, flags: "skip", src: hubHostsFile + ":8"},
			{url: "http://plain.example.net:5000/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: hubHostsFile + ":15"},
			{url: "https://tls.example.net:5000/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: false, pull: true, flags: "skip fallback", src: hubHostsFile + ":18"},
			{url: "https://mirror-bak.example.com/us/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: hubHostsFile + ":22"},
			{url: "https://registry-1.docker.io/v2", repo: "library/nginx", resolve: true, pull: true, src: hubHostsFile + ":2"},
		},
	},
	{
		// For a digest, Resolve asks hosts with pull only.
		name: "digest",
		path: "testdata/certs.d", ref: "nginx@" + zeroDigest,
		want: []ep{
			{url: "https://pull-only.example.com/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: hubHostsFile + ":4"},
			{url: "https://mirror.example.com:5000/v2/dockerhub", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, flags: "skip", src: hubHostsFile + ":8"},
			{url: "http://plain.example.net:5000/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: hubHostsFile + ":15"},
			{url: "https://tls.example.net:5000/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: false, pull: true, flags: "skip fallback", src: hubHostsFile + ":18"},
			{url: "https://mirror-bak.example.com/us/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: hubHostsFile + ":22"},
			{url: "https://registry-1.docker.io/v2", repo: "library/nginx", resolve: true, pull: true, src: hubHostsFile + ":2"},
		},
	},
	{
		// host:port is looked up as host_port_ first (hostPaths). With no
		// server key stock containerd still appends the upstream.
		name: "port directory, no server",
		path: "testdata/certs.d", ref: "registry.example.com:5000/a:1",
		want: []ep{
			{url: "https://cache.example.com/v2", repo: "a", ns: "registry.example.com:5000", mirror: true, resolve: true, pull: true, src: "certs.d/registry.example.com_5000_/hosts.toml:2"},
			{url: "https://registry.example.com:5000/v2", repo: "a", resolve: true, pull: true, src: "certs.d/registry.example.com_5000_/hosts.toml: default endpoint (the upstream registry)"},
		},
	},
	{
		// _default serves every registry without its own directory; a
		// host without capabilities has all of them.
		name: "_default",
		path: "testdata/certs.d", ref: "quay.io/foo/bar:1",
		want: []ep{
			{url: "https://catch-all.example.com/v2", repo: "foo/bar", ns: "quay.io", mirror: true, resolve: true, pull: true, src: "certs.d/_default/hosts.toml:2"},
			{url: "https://quay.io/v2", repo: "foo/bar", resolve: true, pull: true, src: "certs.d/_default/hosts.toml: default endpoint (the upstream registry)"},
		},
	},
	{
		// A directory without hosts.toml: Docker-style certificate files
		// for the upstream (loadCertFiles); localhost on an odd port is
		// https with verification off, falling back to http.
		name: "certificate files, localhost",
		path: "testdata/certs.d", ref: "localhost:5000/a:1",
		want: []ep{{url: "https://localhost:5000/v2", repo: "a", resolve: true, pull: true, flags: "skip fallback", src: "certs.d/localhost_5000_: default endpoint (the upstream registry)"}},
	},
	{
		// The k3s header selects k3s's containerd: rewrites apply, and a
		// file with hosts but no server has no upstream fallback.
		name: "k3s-generated, detected",
		path: "testdata/k3s-certs.d", ref: "nginx:1",
		want: []ep{{url: "https://mirror.example.com:5000/v2", repo: "hub/library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: "k3s-certs.d/docker.io/hosts.toml:5"}},
	},
	{
		// Stock containerd ignores rewrite and appends the upstream.
		name: "k3s-generated, stock containerd",
		path: "testdata/k3s-certs.d", opts: []Option{WithRuntime(RuntimeContainerd)}, ref: "nginx:1",
		want: []ep{
			{url: "https://mirror.example.com:5000/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: "k3s-certs.d/docker.io/hosts.toml:5"},
			{url: "https://registry-1.docker.io/v2", repo: "library/nginx", resolve: true, pull: true, src: "k3s-certs.d/docker.io/hosts.toml: default endpoint (the upstream registry)"},
		},
	},
	{
		name: "one hosts.toml given as a file",
		path: "testdata/certs.d/registry.example.com_5000_/hosts.toml", ref: "registry.example.com:5000/a:1",
		want: []ep{
			{url: "https://cache.example.com/v2", repo: "a", ns: "registry.example.com:5000", mirror: true, resolve: true, pull: true, src: "certs.d/registry.example.com_5000_/hosts.toml:2"},
			{url: "https://registry.example.com:5000/v2", repo: "a", resolve: true, pull: true, src: "certs.d/registry.example.com_5000_/hosts.toml: default endpoint (the upstream registry)"},
		},
	},
}

// TestContainerdEndpoints checks every case of containerdCases.
func TestContainerdEndpoints(t *testing.T) {
	t.Parallel()
	for _, tt := range containerdCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tt.path, tt.opts...)
			if c.Format() != FormatContainerd {
				t.Fatalf("Format() = %q, want %q", c.Format(), FormatContainerd)
			}
			checkEndpoints(t, endpointsOf(t, c, tt.ref), tt.want)
		})
	}
}

func TestContainerdTLSAndHeaders(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, "testdata/certs.d")
	eps := endpointsOf(t, c, "nginx:1")
	// A relative ca is taken from the host directory (makeAbsPath).
	if want := []string{filepath.Join("testdata/certs.d/docker.io", "pull-only-ca.pem")}; !reflect.DeepEqual(eps[0].CAFiles, want) {
		t.Errorf("CAFiles = %v, want %v", eps[0].CAFiles, want)
	}
	// A [host.X.header] subtable belongs to host X.
	if want := (http.Header{"x-mirror-token": {"a", "b"}}); !reflect.DeepEqual(eps[1].Header, want) {
		t.Errorf("Header = %v, want %v", eps[1].Header, want)
	}
	// client: pairs and single files mixed in one array.
	if want := [][2]string{{"/etc/certs/client.cert", "/etc/certs/client.key"}, {"/etc/certs/both.pem", ""}}; !reflect.DeepEqual(eps[4].ClientCerts, want) {
		t.Errorf("ClientCerts = %v, want %v", eps[4].ClientCerts, want)
	}
	if len(eps[3].Notes) == 0 {
		t.Errorf("a host without pull that the fetcher still asks has no note")
	}
	local := endpointsOf(t, c, "localhost:5000/a:1")[0]
	wantCerts := [][2]string{{"testdata/certs.d/localhost_5000_/client.cert", "testdata/certs.d/localhost_5000_/client.key"}}
	if !reflect.DeepEqual(local.ClientCerts, wantCerts) || len(local.CAFiles) != 1 {
		t.Errorf("certificate files: CAFiles %v ClientCerts %v", local.CAFiles, local.ClientCerts)
	}
}

func TestContainerdErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, file string
		line             int
	}{
		{name: "unknown capability", path: "testdata/bad/capability", file: "testdata/bad/capability/docker.io/hosts.toml", line: 6},
		{name: "syntax", path: "testdata/bad/syntax/quay.io/hosts.toml", file: "testdata/bad/syntax/quay.io/hosts.toml", line: 3},
		{name: "wrong type", path: "testdata/bad/type", file: "testdata/bad/type/docker.io/hosts.toml", line: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tt.path)
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

// A file named like a registry in the hosts directory makes containerd
// fail every pull of that registry (HostDirFromRoot stats any path, then
// reading <file>/hosts.toml fails).
func TestContainerdStrayFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quay.io"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, dir)
	if _, err := c.Endpoints(mustRef(t, "quay.io/a/b:1")); err == nil {
		t.Errorf("Endpoints() for a registry shadowed by a file: no error")
	}
	if eps := endpointsOf(t, c, "ghcr.io/a/b:1"); len(eps) != 1 {
		t.Errorf("an unrelated registry got %d endpoints, want the default only", len(eps))
	}
}

// Dotted-key and inline-table hosts are not table headers, so
// getSortedHosts never lists them and containerd never tries them.
func TestContainerdInlineHostsIgnored(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "docker.io")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data := "server = \"https://registry-1.docker.io\"\nhost.\"https://dotted.example.com\".capabilities = [\"pull\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	eps := endpointsOf(t, mustLoad(t, dir), "nginx:1")
	if len(eps) != 1 || eps[0].URL.Host != "registry-1.docker.io" {
		t.Errorf("got %v, want only the server", summarize(eps))
	}
}

// parseHostsFile against containerd's parseHostConfig rules: root keys
// belong to the server, a path gets /v2 unless override_path (which may
// leave it empty), a subtable alone still lists its host.
func TestParseHostsFile(t *testing.T) {
	t.Parallel()
	const data = `server = "registry.example.com"
ca = "/etc/ssl/root.pem"
[header]
  x-root = "r"

[host."https://override.example.com"]
  override_path = true

[host."https://cache.example.com/sub/"]
  capabilities = ["Pull", "resolve", "referrers"]
  dial_timeout = "3s"

[host."https://headers.example.com".header]
  x-only = "h"
`
	f, err := parseHostsFile("hosts.toml", "/certs.d/registry.example.com", []byte(data), false)
	if err != nil {
		t.Fatal(err)
	}
	type host struct {
		scheme, host, path string
		caps               caps
		ca                 []string
		header             http.Header
		root               bool
	}
	var got []host
	for _, e := range f.hosts {
		got = append(got, host{e.scheme, e.host, e.path, e.caps, e.caCerts, e.header, e.root})
	}
	want := []host{
		{"https", "override.example.com", "", allCaps, nil, nil, false},
		{"https", "cache.example.com", "/sub/v2", capPull | capResolve | capReferrers, nil, nil, false},
		{"https", "headers.example.com", "/v2", allCaps, nil, http.Header{"x-only": {"h"}}, false},
		{"https", "registry.example.com", "/v2", allCaps, []string{"/etc/ssl/root.pem"}, http.Header{"x-root": {"r"}}, true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if !f.hasServer || f.hosts[3].line != 1 || f.hosts[1].line != 9 {
		t.Errorf("hasServer %v, server line %d, cache line %d", f.hasServer, f.hosts[3].line, f.hosts[1].line)
	}
	if _, err := parseHostsFile("hosts.toml", "/d", []byte("dial_timeout = \"soon\"\n"), false); err == nil {
		t.Errorf("an invalid dial_timeout was accepted")
	}
}

// k3s's containerd withRewritesFromHost: the first pattern that changes the
// repository wins, over a Go map, so several matches are a coin toss.
func TestRewrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules map[string]string
		repo  string
		want  string
		notes int
	}{
		{"one match", map[string]string{"^rancher/(.*)": "mirror/$1"}, "rancher/pause", "mirror/pause", 0},
		{"no match", map[string]string{"^rancher/(.*)": "mirror/$1"}, "library/nginx", "library/nginx", 0},
		{"two matches", map[string]string{"^library/(.*)": "a/$1", "(.*)": "b/$1"}, "library/nginx", "b/library/nginx", 1},
		{"invalid pattern skipped", map[string]string{"(": "x", "^l(.*)": "L$1"}, "library/nginx", "Library/nginx", 1},
	}
	for _, tt := range tests {
		got, notes := rewrite(tt.rules, tt.repo)
		if got != tt.want || len(notes) != tt.notes {
			t.Errorf("%s: rewrite() = %q, %d notes %v; want %q, %d notes", tt.name, got, len(notes), notes, tt.want, tt.notes)
		}
	}
}
