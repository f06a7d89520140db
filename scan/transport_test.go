package scan_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/scan"
)

// TestTransport: a client reading beside the Scanner through its
// Transport (cosign's verification) has a 503 retried by the Scanner's
// retry layer and its requests counted in the Scanner's Requests.
func TestTransport(t *testing.T) {
	tr := newRegistry(t)
	var failed atomic.Bool
	tr.setHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") && failed.CompareAndSwap(false, true) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	s, err := scan.New(scan.WithRetry(3, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(tr.ref("single", "v1"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	// go-containerregistry's own retries off: the 503 must be the Scanner's to retry.
	if _, err := remote.Get(ref, remote.WithTransport(s.Transport()), remote.WithRetryBackoff(remote.Backoff{Steps: 1})); err != nil {
		t.Fatalf("through the Scanner's transport: %v", err)
	}
	got := map[string]int{}
	for _, rc := range s.Requests() {
		if rc.Kind == "manifest-get" {
			got[rc.Status] += rc.Count
		}
	}
	if got["503"] != 1 || got["200"] != 1 {
		t.Errorf("manifest GETs counted %v, want one 503 and one 200: %+v", got, s.Requests())
	}
}
