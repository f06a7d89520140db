package scan_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/cache"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// blobHead answers every blob HEAD status, as a front does whatever the
// registry behind holds; GETs go on.
func blobHead(status int, code string) hook {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.Method != http.MethodHead || !strings.Contains(r.URL.Path, "/blobs/") {
			return false
		}
		if status == http.StatusOK {
			w.WriteHeader(status)
		} else {
			registryError(w, status, code)
		}
		return true
	}
}

// blobGet answers status to the GETs of the paths given.
func blobGet(status int, paths ...string) hook {
	set := map[string]bool{}
	for _, p := range paths {
		set[p] = true
	}
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.Method != http.MethodGet || !set[r.URL.Path] {
			return false
		}
		registryError(w, status, "BLOB_UNKNOWN")
		return true
	}
}

// artifactory marks every answer with X-Artifactory-Id, as Artifactory does.
func artifactory(w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
	w.Header().Set("X-Artifactory-Id", "test")
	return false
}

// TestBlobProof: a blob's absence is what the node's GET gets. A HEAD that
// proves nothing (404 from a pull-through cache, 403, 405) is asked again
// as a ranged GET, whose answer is the proof; only the GET's own 404 is
// blob-missing, any other answer a fault. A host whose HEAD 200 proves
// nothing (named, or recognised by X-Artifactory-Id) is asked by GET only.
// A registry that answers HEAD truthfully gets no GET.
func TestBlobProof(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	n := len(single.Blobs)
	gone := blobPath("single", single.Blobs[1])
	missing := []findingKey{{types.BlobMissing, single.Blobs[1].String(), ""}}
	tests := []struct {
		name    string
		hook    hook
		extra   []scan.Option
		verdict types.Verdict
		want    []findingKey
		// the blob requests the scan must have sent.
		heads, gets int
	}{
		{name: "truthful registry", verdict: types.OK, want: []findingKey{}, heads: n},
		{name: "truthful registry, a blob gone", hook: hide(gone), verdict: types.Broken, want: missing, heads: n, gets: 1},
		{name: "pull-through cache: HEAD 404, GET fetches", hook: blobHead(http.StatusNotFound, "BLOB_UNKNOWN"), verdict: types.OK, want: []findingKey{}, heads: n, gets: n},
		{name: "pull-through cache, a blob gone upstream", hook: chain(blobHead(http.StatusNotFound, "BLOB_UNKNOWN"), blobGet(http.StatusNotFound, gone)), verdict: types.Broken, want: missing, heads: n, gets: n},
		{name: "HEAD 403, GET allowed (ECR Public)", hook: blobHead(http.StatusForbidden, "DENIED"), verdict: types.OK, want: []findingKey{}, heads: n, gets: n},
		{name: "HEAD 405", hook: blobHead(http.StatusMethodNotAllowed, "UNSUPPORTED"), verdict: types.OK, want: []findingKey{}, heads: n, gets: n},
		{name: "HEAD 404, GET 503", hook: chain(blobHead(http.StatusNotFound, "BLOB_UNKNOWN"), blobGet(http.StatusServiceUnavailable, gone)), verdict: types.Unknown,
			want: []findingKey{{types.RegistryFault, single.Blobs[1].String(), ""}}, heads: n, gets: n + 2},
		{name: "HEAD 404, GET 401", hook: chain(blobHead(http.StatusNotFound, "BLOB_UNKNOWN"), blobGet(http.StatusUnauthorized, gone)), verdict: types.Unknown,
			want: []findingKey{{types.Unauthorized, single.Blobs[1].String(), ""}}, heads: n, gets: n},
		{name: "HEAD 404, GET 429", hook: chain(blobHead(http.StatusNotFound, "BLOB_UNKNOWN"), blobGet(http.StatusTooManyRequests, gone)), verdict: types.Unknown,
			want: []findingKey{{types.RateLimited, single.Blobs[1].String(), ""}}, heads: n, gets: n + 2},
		{name: "HEAD 200 for all, X-Artifactory-Id", hook: chain(artifactory, blobHead(http.StatusOK, ""), blobGet(http.StatusNotFound, gone)), verdict: types.Broken, want: missing, heads: 0, gets: n},
		{name: "HEAD 200 for all, host named", hook: chain(blobHead(http.StatusOK, ""), blobGet(http.StatusNotFound, gone)), extra: []scan.Option{scan.WithBlobGetRegistries(tr.host)},
			verdict: types.Broken, want: missing, heads: 0, gets: n},
		{name: "HEAD 200 for all, another host named", hook: chain(blobHead(http.StatusOK, ""), blobGet(http.StatusNotFound, gone)), extra: []scan.Option{scan.WithBlobGetRegistries("registry.example")},
			verdict: types.OK, want: []findingKey{}, heads: n},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr.setHook(tc.hook)
			defer tr.setHook(nil)
			res, err := scan.Run(context.Background(), []types.Target{{Ref: single.Ref}}, opts(tc.extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			im := res.Images[0]
			if got := keys(im.Findings); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings %+v\nwant %+v\n(%+v)", got, tc.want, im.Findings)
			}
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", im.Verdict, tc.verdict)
			}
			if h, g := requests(res.Requests, "blob-head", ""), requests(res.Requests, "blob-get", ""); h != tc.heads || g != tc.gets {
				t.Errorf("%d blob HEADs and %d blob GETs, want %d and %d: %+v", h, g, tc.heads, tc.gets, res.Requests)
			}
		})
	}
}

// TestBlobProofWarmCache: a warm manifest cache keeps no HEAD-only proof
// from a host whose HEAD proves nothing: each cached manifest is GET
// again, where a truthful registry's are only HEADed.
func TestBlobProofWarmCache(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	tests := []struct {
		name       string
		hook       hook
		heads, get int // manifest requests of the warm run
	}{
		{name: "truthful registry", heads: 2}, // the tag, and the cached manifest
		{name: "X-Artifactory-Id", hook: artifactory, heads: 1, get: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := opts(scan.WithCache(dir, 1<<20), scan.WithCacheReverify(cache.Share{}))
			if _, err := scan.Run(context.Background(), []types.Target{{Ref: single.Ref}}, o...); err != nil {
				t.Fatal(err)
			}
			tr.setHook(tc.hook)
			defer tr.setHook(nil)
			res, err := scan.Run(context.Background(), []types.Target{{Ref: single.Ref}}, o...)
			if err != nil {
				t.Fatal(err)
			}
			if v := res.Images[0].Verdict; v != types.OK {
				t.Errorf("verdict %s, want ok: %+v", v, res.Images[0].Findings)
			}
			if h, g := requests(res.Requests, "manifest-head", ""), requests(res.Requests, "manifest-get", ""); h != tc.heads || g != tc.get {
				t.Errorf("warm run: %d manifest HEADs and %d GETs, want %d and %d: %+v", h, g, tc.heads, tc.get, res.Requests)
			}
		})
	}
}
