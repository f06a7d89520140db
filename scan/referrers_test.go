package scan_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// TestReferrers reads the referrers API of go-containerregistry's
// registry (its referrers support on, or off: then it answers 404 as
// distribution does), and answers a handler puts in its place.
func TestReferrers(t *testing.T) {
	const subject = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
	const index = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000002","size":1,"artifactType":"application/spdx+json"},` +
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000003","size":1,"artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"}]}`
	answer := func(status int, ct, body string, hdr ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "/referrers/") {
				w.WriteHeader(http.StatusOK) // the ping
				return
			}
			w.Header().Set("Content-Type", ct)
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	quiet := log.New(io.Discard, "", 0)
	tests := []struct {
		name         string
		h            http.Handler
		real         bool // h is go-containerregistry's registry
		artifactType string
		want         int   // referrers listed
		err          error // what the error wraps
		fault        bool  // the error is a fault (types.FaultCode)
	}{
		{"API served, none", registry.New(registry.Logger(quiet), registry.WithReferrersSupport(true)), true, "", 0, nil, false},
		{"API not served: 404", registry.New(registry.Logger(quiet)), true, "", 0, scan.ErrReferrersUnsupported, false},
		{"two listed", answer(200, "application/vnd.oci.image.index.v1+json", index), false, "", 2, nil, false},
		{"filter applied here", answer(200, "application/vnd.oci.image.index.v1+json", index), false, "application/spdx+json", 1, nil, false},
		{"filter applied by the registry", answer(200, "application/vnd.oci.image.index.v1+json", index, "OCI-Filters-Applied", "artifactType"), false, "application/spdx+json", 2, nil, false},
		{"400", answer(400, "application/json", `{"errors":[]}`), false, "", 0, scan.ErrReferrersUnsupported, false},
		{"200 not an index", answer(200, "text/html", "<html>"), false, "", 0, types.ErrBadResponse, true},
		{"503", answer(503, "text/plain", "down"), false, "", 0, types.ErrRegistry, true},
		{"429", answer(429, "text/plain", "slow down"), false, "", 0, types.ErrRateLimited, true},
		{"garbled index", answer(200, "application/vnd.oci.image.index.v1+json", `{"manifests":[`), false, "", 0, types.ErrBadResponse, true},
		{"invalid digest listed", answer(200, "application/vnd.oci.image.index.v1+json", `{"manifests":[{"digest":"sha256:zz"}]}`), false, "", 0, types.ErrBadResponse, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			s, err := scan.New(scan.WithInsecureRegistries(host), scan.WithRetry(1, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			repo, _ := name.NewRepository(host+"/app", name.Insecure)
			if tt.real {
				// go-containerregistry's registry answers 404 NAME_UNKNOWN
				// for a repository it does not hold: push one.
				if _, err := fixture.PushSingle(context.Background(), repo.Tag("v1").String(), "x"); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Referrers(context.Background(), repo, subject, tt.artifactType)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if len(got) != tt.want {
				t.Errorf("%d referrers, want %d", len(got), tt.want)
			}
			if fault := err != nil && types.FaultCode(err) != "" && !errors.Is(err, scan.ErrReferrersUnsupported); fault != tt.fault {
				t.Errorf("fault %v, want %v (%v)", fault, tt.fault, err)
			}
			if errors.Is(err, types.ErrNotFound) {
				t.Errorf("a referrers answer proved absence: %v", err)
			}
		})
	}
	if got := scan.ReferrersTag(subject); got != "sha256-"+strings.TrimPrefix(subject, "sha256:") {
		t.Errorf("ReferrersTag = %s", got)
	}
}
