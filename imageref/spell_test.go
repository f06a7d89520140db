package imageref

import (
	"reflect"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

const dK = "sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f"

// TestSpellings: every consumer's spelling of one reference, in one table.
// kubelet is KubeletKey, ggcr the Ref FromName reads from
// go-containerregistry's own parse (pullpath's and the keychain's way in),
// kyverno KyvernoName of the string as written, kyvernoNames what
// admission tries today, pc PolicyControllerName, running Running(dA);
// an invalid reference has none.
// The kyverno column repeats cases of Kyverno's own
// pkg/utils/image/infos_test.go (Test_ReferenceAndReferenceWithTag); pc
// is go-containerregistry's name.ParseReference(in).Name(), checked below
// against the library itself.
func TestSpellings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, kubelet  string
		invalid      bool // no runtime pulls it: Parse, KyvernoName and go-containerregistry all refuse it
		ggcr         Ref
		kyverno      string
		kyvernoNames []string
		pc           string
		running      string
	}{
		{in: "nginx", kubelet: "docker.io/library/nginx", ggcr: Ref{Repo: "docker.io/library/nginx", Tag: "latest"},
			kyverno: "docker.io/nginx:latest", kyvernoNames: []string{"docker.io/library/nginx:latest", "docker.io/nginx:latest"},
			pc: "index.docker.io/library/nginx:latest", running: "docker.io/library/nginx@" + dA},
		{in: "library/nginx", kubelet: "docker.io/library/nginx", ggcr: Ref{Repo: "docker.io/library/nginx", Tag: "latest"},
			kyverno: "docker.io/library/nginx:latest", kyvernoNames: []string{"docker.io/library/nginx:latest", "docker.io/nginx:latest"},
			pc: "index.docker.io/library/nginx:latest", running: "docker.io/library/nginx@" + dA},
		{in: "docker.io/nginx", kubelet: "docker.io/library/nginx", ggcr: Ref{Repo: "docker.io/library/nginx", Tag: "latest"},
			kyverno: "docker.io/nginx:latest", kyvernoNames: []string{"docker.io/library/nginx:latest", "docker.io/nginx:latest"},
			pc: "index.docker.io/library/nginx:latest", running: "docker.io/library/nginx@" + dA},
		{in: "index.docker.io/library/nginx:1", kubelet: "docker.io/library/nginx", ggcr: Ref{Repo: "docker.io/library/nginx", Tag: "1"},
			kyverno: "index.docker.io/library/nginx:1", kyvernoNames: []string{"docker.io/library/nginx:1", "docker.io/nginx:1"},
			pc: "index.docker.io/library/nginx:1", running: "docker.io/library/nginx@" + dA},
		{in: "index.docker.io/team/app", kubelet: "docker.io/team/app", ggcr: Ref{Repo: "docker.io/team/app", Tag: "latest"},
			kyverno: "index.docker.io/team/app:latest", kyvernoNames: []string{"docker.io/team/app:latest"},
			pc: "index.docker.io/team/app:latest", running: "docker.io/team/app@" + dA},
		{in: "localhost:5000/a", kubelet: "localhost:5000/a", ggcr: Ref{Repo: "localhost:5000/a", Tag: "latest"},
			kyverno: "localhost:5000/a:latest", kyvernoNames: []string{"localhost:5000/a:latest"},
			pc: "localhost:5000/a:latest", running: "localhost:5000/a@" + dA},
		{in: "localhost:4443/test/nginx", kubelet: "localhost:4443/test/nginx", ggcr: Ref{Repo: "localhost:4443/test/nginx", Tag: "latest"},
			kyverno: "localhost:4443/test/nginx:latest", kyvernoNames: []string{"localhost:4443/test/nginx:latest"},
			pc: "localhost:4443/test/nginx:latest", running: "localhost:4443/test/nginx@" + dA},
		// "host" has no dot, no port and is not localhost: a Docker Hub path.
		{in: "host/a/b:tag@" + dA, kubelet: "docker.io/host/a/b", ggcr: Ref{Repo: "docker.io/host/a/b", Tag: "tag", Digest: dA},
			kyverno: "docker.io/host/a/b@" + dA, kyvernoNames: []string{"docker.io/host/a/b@" + dA},
			pc: "index.docker.io/host/a/b@" + dA, running: "docker.io/host/a/b@" + dA},
		{in: "registry.example.com/a/b:tag@" + dA, kubelet: "registry.example.com/a/b", ggcr: Ref{Repo: "registry.example.com/a/b", Tag: "tag", Digest: dA},
			kyverno: "registry.example.com/a/b@" + dA, kyvernoNames: []string{"registry.example.com/a/b@" + dA},
			pc: "registry.example.com/a/b@" + dA, running: "registry.example.com/a/b@" + dA},
		{in: "docker.io/test/centos@" + dK, kubelet: "docker.io/test/centos", ggcr: Ref{Repo: "docker.io/test/centos", Digest: dK},
			kyverno: "docker.io/test/centos@" + dK, kyvernoNames: []string{"docker.io/test/centos@" + dK},
			pc: "index.docker.io/test/centos@" + dK, running: "docker.io/test/centos@" + dA},
		{in: "[::1]:5000/a", kubelet: "[::1]:5000/a", ggcr: Ref{Repo: "[::1]:5000/a", Tag: "latest"},
			kyverno: "[::1]:5000/a:latest", kyvernoNames: []string{"[::1]:5000/a:latest"},
			pc: "[::1]:5000/a:latest", running: "[::1]:5000/a@" + dA},
		{in: "[::1]/team/app:v1", kubelet: "[::1]/team/app", ggcr: Ref{Repo: "[::1]/team/app", Tag: "v1"},
			kyverno: "[::1]/team/app:v1", kyvernoNames: []string{"[::1]/team/app:v1"},
			pc: "[::1]/team/app:v1", running: "[::1]/team/app@" + dA},
		{in: "127.0.0.1:5000/team/app:v1", kubelet: "127.0.0.1:5000/team/app", ggcr: Ref{Repo: "127.0.0.1:5000/team/app", Tag: "v1"},
			kyverno: "127.0.0.1:5000/team/app:v1", kyvernoNames: []string{"127.0.0.1:5000/team/app:v1"},
			pc: "127.0.0.1:5000/team/app:v1", running: "127.0.0.1:5000/team/app@" + dA},
		{in: "coturn/coturn:4.18.0", kubelet: "docker.io/coturn/coturn", ggcr: Ref{Repo: "docker.io/coturn/coturn", Tag: "4.18.0"},
			kyverno: "docker.io/coturn/coturn:4.18.0", kyvernoNames: []string{"docker.io/coturn/coturn:4.18.0"},
			pc: "index.docker.io/coturn/coturn:4.18.0", running: "docker.io/coturn/coturn@" + dA},
		{in: "nginx@" + dA, kubelet: "docker.io/library/nginx", ggcr: Ref{Repo: "docker.io/library/nginx", Digest: dA},
			kyverno: "docker.io/nginx@" + dA, kyvernoNames: []string{"docker.io/library/nginx@" + dA, "docker.io/nginx@" + dA},
			pc: "index.docker.io/library/nginx@" + dA, running: "docker.io/library/nginx@" + dA},
		// go-containerregistry keeps a registry of its own for registry-1.docker.io, as distribution does.
		{in: "registry-1.docker.io/x/y:1", kubelet: "registry-1.docker.io/x/y", ggcr: Ref{Repo: "registry-1.docker.io/x/y", Tag: "1"},
			kyverno: "registry-1.docker.io/x/y:1", kyvernoNames: []string{"registry-1.docker.io/x/y:1"},
			pc: "registry-1.docker.io/x/y:1", running: "registry-1.docker.io/x/y@" + dA},
		// An uppercase host is a host; only the path must be lowercase.
		{in: "Registry.example.com/a:b", kubelet: "Registry.example.com/a", ggcr: Ref{Repo: "Registry.example.com/a", Tag: "b"},
			kyverno: "Registry.example.com/a:b", kyvernoNames: []string{"Registry.example.com/a:b"},
			pc: "Registry.example.com/a:b", running: "Registry.example.com/a@" + dA},
		{in: "ghcr.io/o/r@" + dB, kubelet: "ghcr.io/o/r", ggcr: Ref{Repo: "ghcr.io/o/r", Digest: dB},
			kyverno: "ghcr.io/o/r@" + dB, kyvernoNames: []string{"ghcr.io/o/r@" + dB},
			pc: "ghcr.io/o/r@" + dB, running: "ghcr.io/o/r@" + dA},
		{in: "Nginx", invalid: true},
		{in: "Nginx:1", invalid: true},
		{in: "ghcr.io/O/r", invalid: true},
		{in: "", invalid: true},
		{in: "nginx:", invalid: true},
		{in: "nginx@sha256:abc", invalid: true},
		{in: "a:b:c", invalid: true},
		{in: "[::1:5000/a", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tt.in)
			if tt.invalid {
				_, kerr := KyvernoName(tt.in)
				_, nerr := name.ParseReference(tt.in)
				if err == nil || kerr == nil || nerr == nil {
					t.Errorf("errors: Parse %v, KyvernoName %v, go-containerregistry %v; want three", err, kerr, nerr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := r.KubeletKey(); got != tt.kubelet {
				t.Errorf("KubeletKey = %q, want %q", got, tt.kubelet)
			}
			var ggcr Ref
			if n, err := name.ParseReference(tt.in); err == nil {
				ggcr = FromName(n)
				if want := n.Name(); tt.pc != want {
					t.Errorf("table: pc %q, go-containerregistry says %q", tt.pc, want)
				}
			}
			if ggcr != tt.ggcr {
				t.Errorf("FromName = %#v, want %#v", ggcr, tt.ggcr)
			}
			if got, err := KyvernoName(tt.in); err != nil || got != tt.kyverno {
				t.Errorf("KyvernoName = %q, %v; want %q", got, err, tt.kyverno)
			}
			if got := r.KyvernoNames(); !reflect.DeepEqual(got, tt.kyvernoNames) {
				t.Errorf("KyvernoNames = %q, want %q", got, tt.kyvernoNames)
			}
			if got := r.PolicyControllerName(); got != tt.pc {
				t.Errorf("PolicyControllerName = %q, want %q", got, tt.pc)
			}
			if got := r.Running(dA); got != tt.running {
				t.Errorf("Running = %q, want %q", got, tt.running)
			}
		})
	}
}

// TestRegistry: the credential key of a bare registry, and
// FromRepository, as the kubelet spells them.
func TestRegistry(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"index.docker.io": "docker.io", "docker.io": "docker.io", "127.0.0.1:5000": "127.0.0.1:5000", "[::1]:5000": "[::1]:5000"} {
		if got := Registry(in); got != want {
			t.Errorf("Registry(%q) = %q, want %q", in, got, want)
		}
	}
	repo, err := name.NewRepository("index.docker.io/team/app")
	if err != nil {
		t.Fatal(err)
	}
	if got := FromRepository(repo); got != (Ref{Repo: "docker.io/team/app"}) || got.Path() != "team/app" || got.Domain() != "docker.io" {
		t.Errorf("FromRepository = %#v (path %q)", got, got.Path())
	}
}

// FuzzPolicyControllerName: where go-containerregistry and the runtimes'
// parser both accept a reference, PolicyControllerName is
// go-containerregistry's ref.Name(), and FromName gives back the Ref
// Parse gives but for the default tag.
func FuzzPolicyControllerName(f *testing.F) {
	for _, s := range []string{"nginx", "library/nginx:1", "ghcr.io/o/r:v1@" + dA, "[::1]:5000/x@" + dA, "index.docker.io/a/b", "localhost/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		n, nerr := name.ParseReference(s)
		if err != nil || nerr != nil {
			return
		}
		if got := r.PolicyControllerName(); got != n.Name() {
			t.Errorf("PolicyControllerName(%q) = %q, go-containerregistry %q", s, got, n.Name())
		}
		g := FromName(n)
		if g.Repo != r.Repo || g.Digest != r.Digest || g.EffectiveTag() != r.EffectiveTag() {
			t.Errorf("FromName(%q) = %#v, Parse %#v", s, g, r)
		}
	})
}
