package artifacts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
)

// behind serves host (a real registry) through a proxy on loopback that
// answers 503 in its place to the requests fail picks (nil: none), and
// returns the proxy's host.
func behind(t testing.TB, host string, fail func(r *http.Request) bool) string {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail != nil && fail(r) {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestFindReferrersTagFaults: on distribution 3.1.2 (no referrers API, so
// the referrers tag schema and cosign's tags), a fault on the way to an
// artifact hides it: the artifact the subject may have is unknown, with a
// fault finding, never missing. Each row is a case a mutation audit left
// alive.
func TestFindReferrersTagFaults(t *testing.T) {
	reg := startV3(t)
	const slsa = "https://slsa.dev/provenance/v1"
	tests := []struct {
		name string
		// setup pushes to repo (on the registry itself) and returns the
		// subject and which requests through the proxy answer 503.
		setup func(t *testing.T, repo name.Repository) (string, func(r *http.Request) bool)
		kind  artifacts.Kind
	}{
		{
			name: "the referrers tag's index answers 503",
			setup: func(t *testing.T, repo name.Repository) (string, func(r *http.Request) bool) {
				d := pushImage(t, repo, "v1", "index 503")
				bundle(d, "dsse-envelope", slsa).push(t, repo, "")
				idx, err := remote.Head(repo.Tag(scan.ReferrersTag(d)))
				if err != nil {
					t.Fatal(err)
				}
				return d, func(r *http.Request) bool {
					return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/manifests/"+idx.Digest.String())
				}
			},
			kind: artifacts.Attestation,
		},
		{
			name: "the referrers tag points at an image manifest, not an index",
			setup: func(t *testing.T, repo name.Repository) (string, func(r *http.Request) bool) {
				d := pushImage(t, repo, "v1", "not an index")
				pushImage(t, repo, scan.ReferrersTag(d), "an image under the referrers tag")
				return d, nil
			},
			kind: artifacts.Attestation,
		},
		{
			name: "the .sig tag answers 503 while the tag list answers",
			setup: func(t *testing.T, repo name.Repository) (string, func(r *http.Request) bool) {
				d := pushImage(t, repo, "v1", "sig 503")
				legacySig("payload sig 503").push(t, repo, cosignTag(d, ".sig"))
				return d, func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/manifests/"+cosignTag(d, ".sig")) }
			},
			kind: artifacts.Signature,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repoName := "reftag/case" + string(rune('a'+i))
			d, fail := tt.setup(t, repoOf(t, reg.Host(), repoName))
			host := behind(t, reg.Host(), fail)
			s, repo := newFinder(t, host)
			set, err := artifacts.NewFinder(s).Find(context.Background(), repo(repoName), d)
			if err != nil {
				t.Fatal(err)
			}
			if got := set.Presence(artifacts.Query{Kind: tt.kind}); got != artifacts.Unknown {
				t.Errorf("%s presence %s, want unknown (faults %+v, artifacts %+v)", tt.kind, got, set.Faults, set.Artifacts)
			}
			faults := 0
			for _, f := range set.Faults {
				if f.Code.Fault() {
					faults++
				}
			}
			for _, a := range set.Artifacts {
				for _, f := range a.Findings {
					if !f.Code.Fault() {
						t.Errorf("a fault reported as %s: %s", f.Code, f.Message)
					}
				}
			}
			if faults == 0 {
				t.Errorf("no fault finding: %+v", set.Faults)
			}
		})
	}
}
