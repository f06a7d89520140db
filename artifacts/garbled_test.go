package artifacts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/types"
)

// TestFindReferrersAPIGarbled puts a proxy in front of the real
// distribution v3.1.2 registry that answers the referrers endpoint 200
// with an HTML page, as a misconfigured proxy does. The registry's answer
// cannot be read, so it proves nothing: a bundle under the referrers tag
// is still found whole, and with none there the signature is unknown
// (bad-response), never missing.
func TestFindReferrersAPIGarbled(t *testing.T) {
	bundles := artifacts.Query{Kind: artifacts.Signature, Layouts: []artifacts.Layout{artifacts.ReferrersAPI, artifacts.ReferrersTag}}
	tests := []struct {
		name   string
		signed bool
		want   artifacts.Presence
	}{
		{"bundle under the referrers tag", true, artifacts.Present},
		{"no bundle", false, artifacts.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := startV3(t)
			target, _ := url.Parse("http://" + reg.Host())
			proxy := httputil.NewSingleHostReverseProxy(target)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "/referrers/") {
					w.Header().Set("Content-Type", "text/html")
					w.Write([]byte("<html>sign in</html>"))
					return
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			// Pushed to the registry itself, as cosign pushed before the
			// proxy came: the referrers tag lists the bundle.
			direct := repoOf(t, reg.Host(), "garbled")
			d := pushImage(t, direct, "v1", "garbled")
			if tt.signed {
				bundle(d, "message-signature", "").push(t, direct, "")
			}
			host := strings.TrimPrefix(srv.URL, "http://")
			repo := repoOf(t, host, "garbled")
			s, _ := newFinder(t, host)
			set, err := artifacts.NewFinder(s).Find(context.Background(), repo, d)
			if err != nil {
				t.Fatal(err)
			}
			if got := set.Presence(bundles); got != tt.want {
				t.Errorf("bundle signature %s, want %s (artifacts %+v, faults %+v)", got, tt.want, set.Artifacts, set.Faults)
			}
			bad := false
			for _, f := range set.Faults {
				bad = bad || f.Code == types.BadResponse
			}
			if !bad {
				t.Errorf("no bad-response fault for the HTML answer: %+v", set.Faults)
			}
		})
	}
}
