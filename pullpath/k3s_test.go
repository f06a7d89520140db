package pullpath

import (
	"errors"
	"testing"
)

// Cases read in k3s-io/k3s pkg/agent/containerd/config.go (getHostConfigs,
// normalizeEndpointAddress) and its Test_UnitGetHostConfigs, rendered as
// hosts.toml and resolved by containerd's rules.
const k3sMirrorsFile = "testdata/k3s/mirrors.yaml"

var k3sCases = []struct {
	name string
	file string
	opts []Option
	ref  string
	want []ep
}{
	{
		// Rewrites apply to mirror endpoints only; "docker.io" listed last
		// becomes the default endpoint registry-1.docker.io, tried last
		// without rewrites ("if the last endpoint is the default endpoint,
		// move it there").
		name: "k3sMirrorsFile, rewrite, upstream listed last",
		file: k3sMirrorsFile, ref: "rancher/klipper:v1",
		want: []ep{
			{url: "https://mirror.example.com:5000/v2", repo: "mirrorproject/rancher-images/klipper", ns: "docker.io", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:5"},
			{url: "https://registry.example.org/v2", repo: "mirrorproject/rancher-images/klipper", ns: "docker.io", mirror: true, resolve: true, pull: true, flags: "skip", src: "k3s/mirrors.yaml:6"},
			{url: "https://registry-1.docker.io/v2", repo: "rancher/klipper", resolve: true, pull: true, src: "k3s/mirrors.yaml:7"},
		},
	},
	{
		// An endpoint equal to the upstream but not last stays a [host]
		// entry; the default is still tried last, so quay.io is asked twice.
		name: "upstream listed in the middle",
		file: k3sMirrorsFile, ref: "quay.io/foo/bar:1",
		want: []ep{
			{url: "https://registry.example.com:443/v2", repo: "foo/bar", ns: "quay.io", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:17"},
			{url: "https://quay.io/v2", repo: "foo/bar", resolve: true, pull: true, src: "k3s/mirrors.yaml:18"},
			{url: "https://mirror.example.com:5000/v2", repo: "foo/bar", ns: "quay.io", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:19"},
			{url: "https://quay.io/v2", repo: "foo/bar", resolve: true, pull: true, src: "k3s/mirrors.yaml:15"},
		},
	},
	{
		// A path other than "", "/" or "/v2" is kept and marked
		// override_path, with or without /v2 in it; localhost on an odd
		// port without a scheme is plain http. A mirror on the
		// registry's own host gets no ?ns= (containerd isProxy).
		name: "endpoint paths and localhost",
		file: k3sMirrorsFile, ref: "registry.example.com/team/app:1",
		want: []ep{
			{url: "https://registry.example.com/prefix/v2", repo: "team/app", resolve: true, pull: true, src: "k3s/mirrors.yaml:12"},
			{url: "https://proxy.example.com/project/registry", repo: "team/app", ns: "registry.example.com", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:13"},
			{url: "http://localhost:5000/v2", repo: "team/app", ns: "registry.example.com", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:14"},
			{url: "https://registry.example.com/v2", repo: "team/app", resolve: true, pull: true, src: "k3s/mirrors.yaml:10"},
		},
	},
	{
		// http endpoints: plain when untouched; with insecure_skip_verify
		// the hosts.toml entry has TLS settings, so containerd tries https
		// first and falls back to http (config/hosts.go ConfigureHosts).
		// "https://plain.example.net:5000/" is the same endpoint with
		// another scheme, not a duplicate.
		name: "plain http endpoints",
		file: k3sMirrorsFile, ref: "gcr.io/a/b:1",
		want: []ep{
			{url: "http://plain.example.net:5000/v2", repo: "a/b", ns: "gcr.io", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:22"},
			{url: "https://tls.example.net:5000/v2", repo: "a/b", ns: "gcr.io", mirror: true, resolve: true, pull: true, flags: "skip fallback", src: "k3s/mirrors.yaml:23"},
			{url: "https://plain.example.net:5000/v2", repo: "a/b", ns: "gcr.io", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:24"},
			{url: "https://gcr.io/v2", repo: "a/b", resolve: true, pull: true, src: "k3s/mirrors.yaml:20"},
		},
	},
	{
		// A configs entry without a mirror still writes a hosts.toml with
		// the registry as server and its TLS settings.
		name: "configs only",
		file: k3sMirrorsFile, ref: "registry.example.org/a:1",
		want: []ep{{url: "https://registry.example.org/v2", repo: "a", resolve: true, pull: true, flags: "skip", src: "k3s/mirrors.yaml:34"}},
	},
	{
		name: "registry not configured",
		file: k3sMirrorsFile, ref: "ghcr.io/x/y:1",
		want: []ep{{url: "https://ghcr.io/v2", repo: "x/y", resolve: true, pull: true, src: "no host directory: default endpoint"}},
	},
	{
		// --disable-default-registry-endpoint: no server line; the upstream
		// listed last stays a [host] entry, so it is tried, with rewrites
		// (Test_UnitGetHostConfigs "no default endpoint, default endpoint
		// explicitly listed").
		name: "no default endpoint, upstream listed",
		file: k3sMirrorsFile, opts: []Option{WithoutDefaultEndpoint()}, ref: "rancher/klipper:v1",
		want: []ep{
			{url: "https://mirror.example.com:5000/v2", repo: "mirrorproject/rancher-images/klipper", ns: "docker.io", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:5"},
			{url: "https://registry.example.org/v2", repo: "mirrorproject/rancher-images/klipper", ns: "docker.io", mirror: true, resolve: true, pull: true, flags: "skip", src: "k3s/mirrors.yaml:6"},
			{url: "https://registry-1.docker.io/v2", repo: "mirrorproject/rancher-images/klipper", resolve: true, pull: true, src: "k3s/mirrors.yaml:7"},
		},
	},
	{
		name: "no default endpoint",
		file: k3sMirrorsFile, opts: []Option{WithoutDefaultEndpoint()}, ref: "registry.example.com/team/app:1",
		want: []ep{
			{url: "https://registry.example.com/prefix/v2", repo: "team/app", resolve: true, pull: true, src: "k3s/mirrors.yaml:12"},
			{url: "https://proxy.example.com/project/registry", repo: "team/app", ns: "registry.example.com", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:13"},
			{url: "http://localhost:5000/v2", repo: "team/app", ns: "registry.example.com", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:14"},
		},
	},
	{
		// "Disabling the default registry endpoint applies only to
		// registries configured via registries.yaml" (k3s docs).
		name: "no default endpoint, registry not in mirrors",
		file: k3sMirrorsFile, opts: []Option{WithoutDefaultEndpoint()}, ref: "registry.example.org/a:1",
		want: []ep{{url: "https://registry.example.org/v2", repo: "a", resolve: true, pull: true, flags: "skip", src: "k3s/mirrors.yaml:34"}},
	},
	{
		// "*" is written as _default with server = "": containerd fills in
		// the reference's registry as the last host.
		name: "wildcard mirror",
		file: "testdata/k3s/wildcard.yaml", ref: "ghcr.io/x/y:1",
		want: []ep{
			{url: "https://cache.example.com/v2", repo: "x/y", ns: "ghcr.io", mirror: true, resolve: true, pull: true, src: "k3s/wildcard.yaml:5"},
			{url: "https://ghcr.io/v2", repo: "x/y", resolve: true, pull: true, src: "k3s/wildcard.yaml: default endpoint (the upstream registry)"},
		},
	},
	{
		// A registry with its own entry does not get the "*" mirror:
		// containerd uses the first host directory found, alone.
		name: "wildcard mirror beside a specific one",
		file: "testdata/k3s/wildcard.yaml", ref: "nginx:1",
		want: []ep{
			{url: "https://hub-mirror.example.com/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: "k3s/wildcard.yaml:8"},
			{url: "https://registry-1.docker.io/v2", repo: "library/nginx", resolve: true, pull: true, src: "k3s/wildcard.yaml:6"},
		},
	},
	{
		// A "*" config alone: _default holds its TLS settings at the root,
		// with no server, so every other registry gets them.
		name: "wildcard config",
		file: "testdata/k3s/wildcard-config.yaml", ref: "quay.io/foo/bar:1",
		want: []ep{{url: "https://quay.io/v2", repo: "foo/bar", resolve: true, pull: true, flags: "skip", src: "k3s/wildcard-config.yaml: default endpoint (the upstream registry)"}},
	},
	{
		// The same endpoints answer a digest: k3s writes pull and resolve.
		name: "digest",
		file: k3sMirrorsFile, ref: "nginx@" + zeroDigest,
		want: []ep{
			{url: "https://mirror.example.com:5000/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, src: "k3s/mirrors.yaml:5"},
			{url: "https://registry.example.org/v2", repo: "library/nginx", ns: "docker.io", mirror: true, resolve: true, pull: true, flags: "skip", src: "k3s/mirrors.yaml:6"},
			{url: "https://registry-1.docker.io/v2", repo: "library/nginx", resolve: true, pull: true, src: "k3s/mirrors.yaml:7"},
		},
	},
}

// TestK3sEndpoints checks every case of k3sCases.
func TestK3sEndpoints(t *testing.T) {
	t.Parallel()
	for _, tt := range k3sCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tt.file, tt.opts...)
			if c.Format() != FormatK3s {
				t.Fatalf("Format() = %q, want %q", c.Format(), FormatK3s)
			}
			checkEndpoints(t, endpointsOf(t, c, tt.ref), tt.want)
		})
	}
}

// The "*" mirror replaces the _default built from the "*" config, so its
// TLS settings are lost (getHostConfigs looks the mirror up as "*" but
// stores the config as "_default").
func TestK3sWildcardMirrorDropsWildcardConfig(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, "testdata/k3s/wildcard.yaml")
	eps := endpointsOf(t, c, "ghcr.io/x/y:1")
	if last := eps[len(eps)-1]; last.SkipVerify {
		t.Errorf("default endpoint skips verification; k3s drops the \"*\" config when a \"*\" mirror exists")
	}
}

func TestK3sTLSAndAuth(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, "testdata/k3s/mirrors.yaml")
	eps := endpointsOf(t, c, "rancher/klipper:v1")
	m := eps[0]
	if len(m.CAFiles) != 1 || m.CAFiles[0] != "/etc/ssl/mirror-ca.pem" {
		t.Errorf("CAFiles = %v", m.CAFiles)
	}
	if len(m.ClientCerts) != 1 || m.ClientCerts[0] != [2]string{"/etc/ssl/client.pem", "/etc/ssl/client-key.pem"} {
		t.Errorf("ClientCerts = %v", m.ClientCerts)
	}
	if m.Auth == nil || m.Auth.Username != "robot" || m.Auth.Password != "s3cret-pass" {
		t.Errorf("Auth = %v, want robot's credentials", m.Auth)
	}
	if eps[1].Auth != nil || eps[2].Auth != nil {
		t.Errorf("credentials leaked to other endpoints: %v %v", eps[1].Auth, eps[2].Auth)
	}
}

func TestK3sErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		opts       []Option
		line       int
	}{
		{name: "bad indentation", file: "testdata/k3s/bad-indent.yaml", line: 4},
		{name: "endpoint not a list", file: "testdata/k3s/bad-type.yaml", line: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tt.file, tt.opts...)
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

// TestK3sNormalizeEndpoint: an endpoint of registries.yaml as k3s's
// normalizeEndpointAddress reads it: https unless it names a scheme, or it
// is a loopback host on a port other than 443 (plain http then); docker.io
// is registry-1.docker.io; a path other than "", "/" or "/v2" is kept and
// overrides the /v2 prefix.
func TestK3sNormalizeEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint, registry, url string
		override                bool
	}{
		{"localhost:5000", "localhost:5000", "http://localhost:5000/v2", false},
		{"127.0.0.1:5000", "127.0.0.1:5000", "http://127.0.0.1:5000/v2", false},
		{"localhost:443", "localhost:443", "https://localhost:443/v2", false},
		{"localhost", "localhost", "https://localhost/v2", false},
		{"registry.example.com:5000", "registry.example.com:5000", "https://registry.example.com:5000/v2", false},
		{"https://localhost:5000", "localhost:5000", "https://localhost:5000/v2", false},
		{"http://mirror.example.com/", "mirror.example.com", "http://mirror.example.com/v2", false},
		{"docker.io", "docker.io", "https://registry-1.docker.io/v2", false},
		{"mirror.example.com/prefix/v2", "mirror.example.com", "https://mirror.example.com/prefix/v2", true},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			registry, u, override, err := normalizeEndpoint(tc.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			if registry != tc.registry || u.String() != tc.url || override != tc.override {
				t.Errorf("normalizeEndpoint(%q) = %q, %q, override %v; want %q, %q, override %v",
					tc.endpoint, registry, u, override, tc.registry, tc.url, tc.override)
			}
		})
	}
}
