package scan_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/cache"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// fixtureNames are the seven fixture shapes newRegistry pushes.
var fixtureNames = []string{"single", "app-a", "app-b", "buildx", "multiarch", "manifestlist", "partial"}

// TestCache scans the fixtures twice with one cache folder, reading no
// cached manifest again: the second run GETs no manifest, HEADs each one
// instead, and says the same. A
// child deleted since, still in the cache, is missing; a fault asking
// about a cached manifest is a fault.
func TestCache(t *testing.T) {
	tr := newRegistry(t)
	var targets []types.Target
	for _, n := range fixtureNames {
		targets = append(targets, types.Target{Ref: tr.ref(n, "v1")})
	}
	dir := filepath.Join(t.TempDir(), "manifests")
	run := func() *types.Result {
		t.Helper()
		res, err := scan.Run(context.Background(), targets, opts(scan.WithCache(dir, 1<<20), scan.WithCacheReverify(cache.Share{}))...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	cold := run()
	gets, heads := requests(cold.Requests, "manifest-get", ""), requests(cold.Requests, "manifest-head", "")
	if gets == 0 || heads != len(targets) {
		t.Fatalf("cold: %d manifest GETs and %d HEADs, want some and one per tag (%d)", gets, heads, len(targets))
	}
	warm := run()
	if n := requests(warm.Requests, "manifest-get", ""); n != 0 {
		t.Errorf("warm: %d manifest GETs, want 0", n)
	}
	if n := requests(warm.Requests, "manifest-head", "200"); n != heads+gets {
		t.Errorf("warm: %d manifest HEADs, want the tags' and one per manifest: %d", n, heads+gets)
	}
	if a, b := requests(cold.Requests, "blob-head", ""), requests(warm.Requests, "blob-head", ""); a != b {
		t.Errorf("blob HEADs: cold %d, warm %d", a, b)
	}
	for i, im := range warm.Images {
		if c := cold.Images[i]; im.Verdict != types.OK || c.Verdict != types.OK || im.Digest != c.Digest || im.Manifests != c.Manifests || im.Blobs != c.Blobs {
			t.Errorf("%s: warm %s %d/%d, cold %s %d/%d", im.Reference, im.Verdict, im.Manifests, im.Blobs, c.Verdict, c.Manifests, c.Blobs)
		}
	}

	// Deleted from the registry, still in the cache: the registry says.
	child := tr.fixture("multiarch").Children[1].Digest
	tr.setHook(hide(manifestPath("multiarch", child.String())))
	res := run()
	im := res.Images[slices.Index(fixtureNames, "multiarch")]
	if k := keys(im.Findings); im.Verdict != types.Broken || len(k) != 1 || k[0].Code != types.ChildMissing || k[0].Digest != child.String() {
		t.Errorf("a deleted child served from the cache: %s %+v, want broken, child-missing %s", im.Verdict, k, child)
	}
	if n := requests(res.Requests, "manifest-get", ""); n != 0 {
		t.Errorf("%d manifest GETs, want 0", n)
	}

	// A fault asking whether a cached manifest is there is a fault.
	tr.setHook(func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/sha256:") {
			registryError(w, http.StatusServiceUnavailable, "UNAVAILABLE")
			return true
		}
		return false
	})
	for _, im := range run().Images {
		if im.Verdict != types.Unknown {
			t.Errorf("%s: %s with the registry failing, want unknown", im.Reference, im.Verdict)
		}
	}
}

// TestCacheHeadNotAllowed: where HEAD is refused, a cached manifest's
// presence is asked with GET, and the scan says what it says without a
// cache.
func TestCacheHeadNotAllowed(t *testing.T) {
	tr := newRegistry(t)
	tr.setHook(headNotAllowed)
	dir := t.TempDir()
	for run := range 2 {
		im, err := scan.Check(context.Background(), tr.ref("buildx", "v1"), opts(scan.WithCache(dir, 1<<20))...)
		if err != nil {
			t.Fatal(err)
		}
		if im.Verdict != types.OK || im.Manifests != 3 {
			t.Errorf("run %d: %s, %d manifests %+v", run, im.Verdict, im.Manifests, im.Findings)
		}
	}
}

// TestCacheOptions: WithCache's and WithCacheReverify's values are checked; a folder that cannot
// be made is logged, and the scan runs without it.
func TestCacheOptions(t *testing.T) {
	for _, o := range []scan.Option{scan.WithCache("", 1), scan.WithCache(t.TempDir(), 0), scan.WithCacheReverify(cache.Share{Num: 2, Den: 1})} {
		if _, err := scan.New(o); err == nil {
			t.Error("bad cache values accepted")
		}
	}
	tr := newRegistry(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	im, err := scan.Check(context.Background(), tr.ref("single", "v1"),
		opts(scan.WithCache(filepath.Join(file, "manifests"), 1<<20), scan.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))...)
	if err != nil || im.Verdict != types.OK {
		t.Fatalf("%v %+v", err, im)
	}
	if !strings.Contains(log.String(), "without the manifest cache") {
		t.Errorf("no warning: %q", log.String())
	}
}

// TestCacheReverify: a registry that now serves other bytes under a cached
// digest. Reading no cached manifest again, the warm scan HEADs it and
// says ok; reading every one again, it GETs every manifest and says
// digest-mismatch, broken, as a cold scan does, and deletes the entry, so
// the next scan, whatever its share, asks the registry and says it again.
// A fault on the re-read is a fault (unknown), and the entry stays.
func TestCacheReverify(t *testing.T) {
	tr := newRegistry(t)
	child := tr.fixture("multiarch").Children[0].Digest
	dir := t.TempDir()
	entry := filepath.Join(dir, child.Algorithm, child.Hex)
	run := func(share cache.Share) (*types.Image, int) {
		t.Helper()
		res, err := scan.Run(context.Background(), []types.Target{{Ref: tr.ref("multiarch", "v1")}},
			opts(scan.WithCache(dir, 1<<20), scan.WithCacheReverify(share))...)
		if err != nil {
			t.Fatal(err)
		}
		return res.Images[0], requests(res.Requests, "manifest-get", "")
	}
	if im, gets := run(cache.Share{}); im.Verdict != types.OK || gets != im.Manifests {
		t.Fatalf("cold: %s with %d GETs for %d manifests", im.Verdict, gets, im.Manifests)
	}
	every := cache.Share{Num: 1, Den: 1}
	tr.setHook(corrupt(manifestPath("multiarch", child.String())))
	for _, tc := range []struct {
		name    string
		share   cache.Share
		verdict types.Verdict
		// gets are the manifest GETs, besides one per manifest with
		// perManifest: the mismatching one is asked twice, as on a cold
		// scan (the client asks again after a bad body).
		gets        int
		perManifest bool
		kept        bool
	}{
		{"no re-read", cache.Share{}, types.OK, 0, false, true},
		{"every one re-read", every, types.Broken, 1, true, false},
		{"the next scan, no re-read", cache.Share{}, types.Broken, 2, false, false},
	} {
		im, gets := run(tc.share)
		want := tc.gets
		if tc.perManifest {
			want += im.Manifests
		}
		mismatch := digestsOf(im.Findings, types.DigestMismatch)
		if im.Verdict != tc.verdict || gets != want || (tc.verdict == types.Broken) != slices.Equal(mismatch, []string{child.String()}) {
			t.Errorf("%s: %s, %d GETs, digest-mismatch for %v; want %s, %d GETs (findings %+v)", tc.name, im.Verdict, gets, mismatch, tc.verdict, want, im.Findings)
		}
		if _, err := os.Stat(entry); (err == nil) != tc.kept {
			t.Errorf("%s: entry kept %v, want %v", tc.name, err == nil, tc.kept)
		}
	}

	tr.setHook(nil)
	if im, _ := run(cache.Share{}); im.Verdict != types.OK {
		t.Fatalf("the registry mended: %s", im.Verdict)
	}
	tr.setHook(func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/sha256:") {
			registryError(w, http.StatusServiceUnavailable, "UNAVAILABLE")
			return true
		}
		return false
	})
	if im, _ := run(every); im.Verdict != types.Unknown || len(digestsOf(im.Findings, types.DigestMismatch)) != 0 {
		t.Errorf("a fault on the re-read: %s %+v, want unknown", im.Verdict, im.Findings)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Errorf("a fault on the re-read deleted the entry: %v", err)
	}
}

// digestsOf are the digests of the findings with the code.
func digestsOf(fs []types.Finding, code types.Code) []string {
	var out []string
	for _, f := range fs {
		if f.Code == code {
			out = append(out, f.Digest)
		}
	}
	return out
}
