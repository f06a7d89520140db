package cli

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
)

// TestMain keeps the tests' manifest cache out of the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "regcheck-cli-test-")
	if err != nil {
		panic(err)
	}
	userCacheDir = func() (string, error) { return dir, nil }
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestByteSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64 // 0: an error
		out  string
	}{
		{"256MiB", 256 << 20, "256MiB"},
		{"1GiB", 1 << 30, "1GiB"},
		{"64kib", 64 << 10, "64KiB"},
		{"10 MiB", 10 << 20, "10MiB"},
		{"500MB", 500e6, "500000000"},
		{"2kB", 2000, "2000"},
		{"4096", 4096, "4KiB"},
		{"100B", 100, "100"},
		{"0", 0, ""},
		{"-1MiB", 0, ""},
		{"1.5GiB", 0, ""},
		{"MiB", 0, ""},
		{"12TiB", 0, ""},
		{"9999999999GiB", 0, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var b byteSize
			err := b.Set(tc.in)
			switch {
			case tc.want == 0 && err == nil:
				t.Fatalf("accepted as %d", b)
			case tc.want != 0 && (err != nil || int64(b) != tc.want):
				t.Fatalf("%d, %v; want %d", b, err, tc.want)
			case tc.want != 0 && b.String() != tc.out:
				t.Errorf("written %q, want %q", b.String(), tc.out)
			}
		})
	}
}

func TestCacheFolder(t *testing.T) {
	t.Parallel()
	def, _ := userCacheDir()
	g := &globals{}
	for _, tc := range []struct {
		name string
		r    registryFlags
		want string
	}{
		{"default", registryFlags{}, filepath.Join(def, "regcheck", "manifests")},
		{"--cache-dir", registryFlags{cacheDir: "/c"}, "/c"},
		{"--no-cache", registryFlags{noCache: true}, ""},
		{"--no-cache wins", registryFlags{noCache: true, cacheDir: "/c"}, ""},
	} {
		if got := tc.r.cacheFolder(g); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCacheFlags: a bad --cache-max-size is a usage error, and --cache-dir
// is where manifests go (mode 0700).
func TestCacheFlags(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, []string{"scan", "--cache-max-size", "lots", "x:v1"}); code != ExitUsage || !strings.Contains(errb.String(), "cache-max-size") {
		t.Errorf("exit %d: %s", code, errb.String())
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/app:v1"
	d, err := fixture.PushSingle(context.Background(), ref, "cache flags")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "m")
	for _, args := range [][]string{{"--no-cache", "--cache-dir", dir}, {"--cache-dir", dir}} {
		if _, err := os.Stat(dir); err == nil {
			t.Fatalf("%v made the folder", args)
		}
		out.Reset()
		errb.Reset()
		if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append(append([]string{"scan"}, args...), ref)); code != ExitClean {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "sha256", strings.TrimPrefix(d, "sha256:"))); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the manifest is not kept in --cache-dir: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("--cache-dir: %v, %v; want mode 0700", fi.Mode(), err)
	}
}

// TestBlobGetRegistryFlag: behind a front whose blob HEAD answers 200 for
// a blob its GET answers 404, the image is ok unless --blob-get-registry
// names the host, then broken; a value that is not a host is a usage error.
func TestBlobGetRegistryFlag(t *testing.T) {
	t.Parallel()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	ls, _ := fixture.Single("blob get flag").Layers()
	d, _ := ls[0].Digest()
	layer := d.String()
	var pushed atomic.Bool // the front lies once the image is pushed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !pushed.Load():
			reg.ServeHTTP(w, r)
		case r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/blobs/"):
			w.WriteHeader(http.StatusOK) // whether the registry has it or not
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+layer):
			w.WriteHeader(http.StatusNotFound)
		default:
			reg.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := host + "/app:v1"
	if _, err := fixture.PushSingle(context.Background(), ref, "blob get flag"); err != nil {
		t.Fatal(err)
	}
	pushed.Store(true)
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"HEAD believed", nil, ExitClean},
		{"host named", []string{"--blob-get-registry", host}, ExitFindings},
		{"another host named", []string{"--blob-get-registry", "registry.example"}, ExitClean},
		{"not a host", []string{"--blob-get-registry", "registry.example/team"}, ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append(append([]string{"scan", "--no-cache"}, tc.args...), ref)
			if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args); code != tc.want {
				t.Errorf("exit %d, want %d:\n%s%s", code, tc.want, out.String(), errb.String())
			}
		})
	}
}
