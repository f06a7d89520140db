package scan

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/regcheck/regcheck/types"
)

// Only a 404 from the registry asked proves absence: every other status,
// the gateway errors (502, 504) and a 404 from the host a redirect went to
// included, is a fault or a refusal, never types.ErrNotFound.
func TestResponseErrorEveryStatus(t *testing.T) {
	for _, tc := range []struct {
		status     int
		redirected bool
		want       error
	}{
		{404, false, types.ErrNotFound},
		{404, true, types.ErrRegistry},
		{401, false, types.ErrUnauthorized},
		{403, false, types.ErrForbidden},
		{429, false, types.ErrRateLimited},
		{400, false, types.ErrRegistry},
		{405, false, types.ErrRegistry},
		{410, false, types.ErrRegistry},
		{500, false, types.ErrRegistry},
		{502, false, types.ErrRegistry},
		{503, false, types.ErrRegistry},
		{504, false, types.ErrRegistry},
	} {
		host := "registry.example"
		if tc.redirected {
			host = "storage.example"
		}
		resp := &http.Response{StatusCode: tc.status, Request: &http.Request{URL: &url.URL{Scheme: "https", Host: host, Path: "/v2/a/blobs/sha256:0"}}}
		err := responseError(http.MethodGet, "registry.example", resp)
		if !errors.Is(err, tc.want) {
			t.Errorf("status %d (redirected %v): %v, want %v", tc.status, tc.redirected, err.Err, tc.want)
		}
		if tc.want != types.ErrNotFound && errors.Is(err, types.ErrNotFound) {
			t.Errorf("status %d (redirected %v) taken for absence", tc.status, tc.redirected)
		}
	}
}
