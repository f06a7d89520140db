package artifacts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/regcheck/regcheck/artifacts"
)

// BenchmarkFind finds the artifacts of a two-platform index signed per
// platform the legacy way, with a bundle under the referrers tag, on the
// real distribution v3.1.2, with a new Scanner each time (nothing
// remembered): it reports the registry requests one Find sends.
func BenchmarkFind(b *testing.B) {
	reg := startV3(b).Host()
	t := b
	repo := repoOf(t, reg, "bench")
	d, children := pushIndex(t, repo, "v1")
	for _, s := range append([]string{d}, children...) {
		legacySig("payload "+s).push(t, repo, cosignTag(s, ".sig"))
	}
	bundle(d, "message-signature", "").push(t, repo, "")
	var requests atomic.Int64
	up, _ := url.Parse("http://" + reg)
	proxy := httputil.NewSingleHostReverseProxy(up)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	via := repoOf(t, host, "bench")
	b.ResetTimer()
	for range b.N {
		s, _ := newFinder(t, host)
		set, err := artifacts.NewFinder(s).Find(context.Background(), via, d)
		if err != nil || len(set.Artifacts) != 4 {
			b.Fatalf("err %v, %d artifacts", err, len(set.Artifacts))
		}
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
}
