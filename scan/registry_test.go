package scan_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// prefix is where the fixtures are pushed in each test registry.
const prefix = "fx/"

// bypassHook is a header that makes the test registry answer a request
// itself, past any hook: another test server's requests carry it.
const bypassHook = "X-Test-Bypass-Hook"

// testRegistry is gcr's in-memory registry behind httptest, with a hook that
// can answer a request in its place (to hide a manifest or blob, or fail),
// and a count of the requests in flight at once.
type testRegistry struct {
	t      *testing.T
	srv    *httptest.Server
	host   string
	images map[string]fixture.Image // by fixture name

	mu   sync.Mutex
	hook hook

	inflight, maxInflight atomic.Int64
}

// hook answers a request itself and returns true, or returns false to let
// the registry answer.
type hook func(w http.ResponseWriter, r *http.Request, next http.Handler) bool

// newRegistry starts a registry with every fixture pushed, and no hook.
func newRegistry(t *testing.T) *testRegistry {
	t.Helper()
	tr := &testRegistry{t: t}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := tr.inflight.Add(1)
		defer tr.inflight.Add(-1)
		for {
			m := tr.maxInflight.Load()
			if n <= m || tr.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		tr.mu.Lock()
		h := tr.hook
		tr.mu.Unlock()
		if h != nil && r.Header.Get(bypassHook) == "" && h(w, r, reg) {
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	tr.host = strings.TrimPrefix(tr.srv.URL, "http://")
	imgs, err := fixture.Push(context.Background(), tr.host, prefix)
	if err != nil {
		t.Fatalf("pushing fixtures: %v", err)
	}
	tr.images = map[string]fixture.Image{}
	for _, im := range imgs {
		tr.images[im.Name] = im
	}
	tr.maxInflight.Store(0)
	return tr
}

func (tr *testRegistry) setHook(h hook) {
	tr.mu.Lock()
	tr.hook = h
	tr.mu.Unlock()
}

// fixture returns a pushed fixture by name.
func (tr *testRegistry) fixture(name string) fixture.Image {
	tr.t.Helper()
	im, ok := tr.images[name]
	if !ok {
		tr.t.Fatalf("no fixture %q", name)
	}
	return im
}

// ref is name:tag in the registry; at is name@digest.
func (tr *testRegistry) ref(name, tag string) string { return fixture.Ref(tr.host, prefix, name, tag) }
func (tr *testRegistry) at(name string, d v1.Hash) string {
	return tr.host + "/" + prefix + name + "@" + d.String()
}

func manifestPath(name, ref string) string { return "/v2/" + prefix + name + "/manifests/" + ref }
func blobPath(name string, d v1.Hash) string {
	return "/v2/" + prefix + name + "/blobs/" + d.String()
}

// hide answers 404 for the given paths, as a registry does once its GC
// deleted them.
func hide(paths ...string) hook {
	set := map[string]bool{}
	for _, p := range paths {
		set[p] = true
	}
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if !set[r.URL.Path] {
			return false
		}
		code := "BLOB_UNKNOWN"
		if strings.Contains(r.URL.Path, "/manifests/") {
			code = "MANIFEST_UNKNOWN"
		}
		registryError(w, http.StatusNotFound, code)
		return true
	}
}

func registryError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"errors":[{"code":"`+code+`","message":"injected by the test"}]}`)
}

// failFirst answers status (with the headers given) to the first n requests
// whose path has the prefix match; n < 0 fails all of them.
func failFirst(match string, n int, status int, header http.Header) hook {
	var mu sync.Mutex
	seen := 0
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if !strings.HasPrefix(r.URL.Path, match) {
			return false
		}
		mu.Lock()
		seen++
		fail := n < 0 || seen <= n
		mu.Unlock()
		if !fail {
			return false
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		registryError(w, status, "INJECTED")
		return true
	}
}

// headNotAllowed answers 405 to HEAD on manifests, as some registries and
// proxies do.
func headNotAllowed(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
	if r.Method != http.MethodHead || !strings.Contains(r.URL.Path, "/manifests/") {
		return false
	}
	w.WriteHeader(http.StatusMethodNotAllowed)
	return true
}

// corrupt serves the manifest at path with a byte changed, headers as the
// registry sent them, so that it no longer hashes to its digest.
func corrupt(path string) hook {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.Method != http.MethodGet || r.URL.Path != path {
			return false
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := bytes.Replace(rec.Body.Bytes(), []byte("{"), []byte("{ "), 1)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
		return true
	}
}

// slow holds every request under /v2/<something> for d, so that requests
// pile up if nothing bounds them.
func slow(d time.Duration) hook {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != "/v2/" {
			time.Sleep(d)
		}
		return false
	}
}

func chain(hs ...hook) hook {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		for _, h := range hs {
			if h(w, r, next) {
				return true
			}
		}
		return false
	}
}

// opts are the options every test scan uses: no credentials from the
// machine running the tests, fast retries, no second pass.
func opts(extra ...scan.Option) []scan.Option {
	return append([]scan.Option{
		scan.WithKeychain(authn.NewMultiKeychain()),
		scan.WithRetry(3, time.Millisecond),
		scan.WithTimeout(10 * time.Second),
		scan.WithReask(0), // one pass: tests of the second pass ask for it
	}, extra...)
}

// findingKey is what tests assert of a finding.
type findingKey struct {
	Code     types.Code
	Digest   string
	Platform string
}

func keys(fs []types.Finding) []findingKey {
	out := []findingKey{}
	for _, f := range fs {
		out = append(out, findingKey{f.Code, f.Digest, f.Platform})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		if a.Platform != b.Platform {
			return a.Platform < b.Platform
		}
		return a.Digest < b.Digest
	})
	return out
}

// requests sums the requests of one kind (and status, unless "").
func requests(rs []types.RequestCount, kind, status string) int {
	n := 0
	for _, r := range rs {
		if r.Kind == kind && (status == "" || r.Status == status) {
			n += r.Count
		}
	}
	return n
}
