package scan

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/types"
)

// TestPathError: a piece no endpoint served is absent only when no
// endpoint faulted, on the registry's own 404, or, where the node never
// asks the registry, on an endpoint's 404.
func TestPathError(t *testing.T) {
	ep := func(host string, mirror bool) pullpath.Endpoint {
		return pullpath.Endpoint{URL: &url.URL{Scheme: "http", Host: host, Path: "/v2"}, Repository: "app", Mirror: mirror}
	}
	mirror, upstream := ep("mirror:5000", true), ep("reg:5000", false)
	notFound := &RegistryError{Method: "HEAD", URL: "u", Status: 404, Err: types.ErrNotFound}
	refused := &RegistryError{Method: "HEAD", URL: "u", Detail: "connection refused", Err: types.ErrUnreachable}
	unavailable := &RegistryError{Method: "HEAD", URL: "u", Status: 503, Err: types.ErrRegistry}
	denied := &RegistryError{Method: "HEAD", URL: "u", Status: 401, Err: types.ErrUnauthorized}
	untrusted := &RegistryError{Method: "HEAD", URL: "u", Detail: "x509: certificate signed by unknown authority", Err: types.ErrTLS}
	ref, _ := name.ParseReference("reg:5000/app:v1")
	for _, tc := range []struct {
		name    string
		answers []epAnswer
		want    error
	}{
		{"registry 404 after a mirror 404", []epAnswer{{mirror, notFound}, {upstream, notFound}}, types.ErrNotFound},
		// A faulting endpoint hides what it holds: the registry's 404 does
		// not prove the piece gone while a mirror the node asks first
		// could not say (before: absent, broken).
		{"registry 404 after a mirror refused", []epAnswer{{mirror, refused}, {upstream, notFound}}, types.ErrUnreachable},
		{"registry 404 after a mirror 503", []epAnswer{{mirror, unavailable}, {upstream, notFound}}, types.ErrRegistry},
		{"registry 404 after a mirror 401", []epAnswer{{mirror, denied}, {upstream, notFound}}, types.ErrUnauthorized},
		{"registry 404 after a mirror's certificate failed", []epAnswer{{mirror, untrusted}, {upstream, notFound}}, types.ErrTLS},
		{"registry 404, then a mirror 503", []epAnswer{{upstream, notFound}, {mirror, unavailable}}, types.ErrRegistry},
		{"registry 404 after a mirror 404 and a mirror 503", []epAnswer{{mirror, notFound}, {ep("m2:5000", true), unavailable}, {upstream, notFound}}, types.ErrRegistry},
		{"registry refused after a mirror 404", []epAnswer{{mirror, notFound}, {upstream, refused}}, types.ErrUnreachable},
		{"no registry asked: a mirror 404", []epAnswer{{mirror, notFound}}, types.ErrNotFound},
		{"no registry asked: one mirror 404, one refused", []epAnswer{{mirror, notFound}, {ep("m2:5000", true), refused}}, types.ErrUnreachable},
		// Only the registry proves absence: a configuration that leaves
		// nothing to ask, or blocks the registry, is a fault.
		{"every endpoint blocked", []epAnswer{{mirror, errBlocked}}, types.ErrRegistry},
		{"a mirror 404, the registry blocked", []epAnswer{{mirror, notFound}, {upstream, errBlocked}}, types.ErrRegistry},
		{"no endpoint asked", nil, types.ErrRegistry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := pathError(ref, tc.answers)
			if !errors.Is(err, tc.want) {
				t.Errorf("pathError = %v, want %v", err, tc.want)
			}
			if tc.want != types.ErrNotFound && errors.Is(err, types.ErrNotFound) {
				t.Errorf("pathError = %v: absent, want a fault", err)
			}
			for _, a := range tc.answers {
				if !strings.Contains(err.Error(), a.ep.URL.Host) {
					t.Errorf("%q does not name %s", err, a.ep.URL.Host)
				}
			}
		})
	}
}
