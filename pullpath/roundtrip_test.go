package pullpath

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var roundTripRefs = []string{
	"rancher/klipper:v1", "nginx@" + zeroDigest, "quay.io/foo/bar:1", "registry.example.com/team/app:1",
	"gcr.io/a/b:1", "ghcr.io/x/y:1", "registry.example.org/a:1", "tls.example.net:5000/a:1", "localhost:5000/a:1",
}

// comparable drops what a hosts directory does not carry: where the
// endpoint was configured, and credentials (k3s writes them to
// containerd's config.toml, not hosts.toml).
func comparable(eps []Endpoint) []Endpoint {
	out := make([]Endpoint, len(eps))
	for i, e := range eps {
		e.Source, e.Auth = "", nil
		out[i] = e
	}
	return out
}

// WriteHostsDir writes what k3s writes; read back as a containerd hosts
// directory (its k3s header selects k3s's containerd rules) it gives the
// endpoints the k3s reader gives.
func TestWriteHostsDirRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		opts []Option
	}{
		{name: "mirrors", file: "testdata/k3s/mirrors.yaml"},
		{name: "mirrors, no default endpoint", file: "testdata/k3s/mirrors.yaml", opts: []Option{WithoutDefaultEndpoint()}},
		{name: "wildcard", file: "testdata/k3s/wildcard.yaml"},
		{name: "wildcard config", file: "testdata/k3s/wildcard-config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := mustLoad(t, tt.file, tt.opts...)
			dir := t.TempDir()
			if err := WriteHostsDir(k, dir); err != nil {
				t.Fatalf("WriteHostsDir: %v", err)
			}
			h := mustLoad(t, dir)
			if h.Format() != FormatContainerd {
				t.Fatalf("read back as %q", h.Format())
			}
			for _, ref := range roundTripRefs {
				want := comparable(endpointsOf(t, k, ref))
				got := comparable(endpointsOf(t, h, ref))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s:\nhosts dir %v\nk3s       %v", ref, summarize(got), summarize(want))
				}
			}
		})
	}
}

// k3s writes host:port as host_port_ and "*" as _default.
func TestWriteHostsDirNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := WriteHostsDir(mustLoad(t, "testdata/k3s/mirrors.yaml"), dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"docker.io", "quay.io", "mirror.example.com_5000_", "tls.example.net_5000_"} {
		if _, err := os.Stat(filepath.Join(dir, name, "hosts.toml")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	dir = t.TempDir()
	if err := WriteHostsDir(mustLoad(t, "testdata/k3s/wildcard.yaml"), dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "_default", "hosts.toml")); err != nil {
		t.Errorf("_default: %v", err)
	}
	if err := WriteHostsDir(mustLoad(t, "testdata/certs.d"), t.TempDir()); err == nil {
		t.Errorf("WriteHostsDir accepted a hosts directory")
	}
}

// Given to stock containerd (ctr --hosts-dir), the same directory differs
// where k3s's containerd does: no rewrites, and the upstream even without
// a server key.
func TestWriteHostsDirStockContainerd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := WriteHostsDir(mustLoad(t, "testdata/k3s/mirrors.yaml", WithoutDefaultEndpoint()), dir); err != nil {
		t.Fatal(err)
	}
	stock := mustLoad(t, dir, WithRuntime(RuntimeContainerd))
	eps := endpointsOf(t, stock, "registry.example.com/team/app:1")
	if last := eps[len(eps)-1]; last.URL.String() != "https://registry.example.com/v2" {
		t.Errorf("stock containerd's last endpoint = %s, want the upstream", last.URL)
	}
	hub := endpointsOf(t, stock, "rancher/klipper:v1")
	if hub[0].Repository != "rancher/klipper" {
		t.Errorf("stock containerd rewrote the repository to %s", hub[0].Repository)
	}
}
