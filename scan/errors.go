package scan

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/regcheck/regcheck/types"
)

// RegistryError is a failed registry request: what was asked, what came back.
type RegistryError struct {
	Method string
	// URL is the request's URL without query or credentials.
	URL    string
	Status int    // 0 when no response came back
	Detail string // the registry's error code and message, or the network error
	Err    error  // one of the Err* sentinels

	// storage is the host the registry redirected the request to, when
	// that host answered 404: the registry's blob storage or a CDN.
	storage string
}

func (e *RegistryError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s %s: %v: %s", e.Method, e.URL, e.Err, e.Detail)
	}
	if e.Detail == "" {
		return fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.URL, e.Status, http.StatusText(e.Status), e.Detail)
}

// Unwrap returns the sentinel.
func (e *RegistryError) Unwrap() error { return e.Err }

// statusErr maps the status of a manifest or blob request, answered by the
// registry itself, to a sentinel. Only here does a 404 mean absence.
func statusErr(status int) error {
	switch {
	case status == http.StatusNotFound:
		return types.ErrNotFound
	case status == http.StatusUnauthorized:
		return types.ErrUnauthorized
	case status == http.StatusForbidden:
		return types.ErrForbidden
	case status == http.StatusTooManyRequests:
		return types.ErrRateLimited
	}
	return types.ErrRegistry
}

// responseError reads a non-200 answer to a request for a manifest, blob or
// tag list. asked is the host the request was sent to: a 404 proves absence
// only when that registry said it, not a host it redirected to.
func responseError(method, asked string, resp *http.Response) *RegistryError {
	re := &RegistryError{Method: method, URL: finalURL(resp, asked), Status: resp.StatusCode, Detail: errorDetail(resp)}
	re.Err = statusErr(resp.StatusCode)
	if resp.Request != nil && resp.Request.URL != nil && resp.Request.URL.Host != asked && re.Err == types.ErrNotFound {
		re.Err, re.storage = types.ErrRegistry, resp.Request.URL.Host
		re.Detail = strings.TrimSpace("the registry redirected to " + re.storage + ", which answered 404 without saying the object does not exist " + re.Detail)
	}
	return re
}

// noSuchObject finds the error code with which object storage says an
// object does not exist: NoSuchKey (S3, GCS's XML API, MinIO and other
// S3-compatible stores) or BlobNotFound (Azure). Any other 404 body (a
// CDN's page, a proxy's) proves nothing.
var noSuchObject = regexp.MustCompile(`<Code>\s*(NoSuchKey|BlobNotFound)\s*</Code>`)

// errorDetail reads a registry's error body (capped), as its first code and
// message, or nothing for a body that is not one.
func errorDetail(resp *http.Response) string {
	var body struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if resp.Body == nil || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body) != nil || len(body.Errors) == 0 {
		return ""
	}
	e := body.Errors[0]
	return strings.TrimSpace(e.Code + ": " + e.Message)
}

// classify turns an error from a registry exchange that ended without an
// answer to the request itself (a network error, or the ping or token
// exchange before it) into a *RegistryError, or leaves one as it is.
func classify(method, u string, err error) error {
	var re *RegistryError
	if errors.As(err, &re) {
		return re // a transport layer's own (a GET withheld): the request's URL is in it
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	out := &RegistryError{Method: method, URL: redactURL(u), Detail: err.Error(), Err: types.ErrRegistry}
	var te *transport.Error
	switch {
	case errors.Is(err, errTooManyRedirects):
		out.Detail = errTooManyRedirects.Error()
	case isTLSError(err):
		out.Err, out.Detail = types.ErrTLS, tlsDetail(err)
	case errors.As(err, &te):
		classifyHandshake(out, te)
	case errors.Is(err, context.DeadlineExceeded) || isNetError(err):
		out.Err, out.Detail = types.ErrUnreachable, netDetail(err)
	}
	return out
}

// classifyHandshake fills out from an answer to the ping or the token
// request: a fault whatever its status, never absence.
func classifyHandshake(out *RegistryError, te *transport.Error) {
	out.Status = te.StatusCode
	out.Detail = ""
	if len(te.Errors) > 0 {
		out.Detail = te.Errors[0].String()
	}
	if te.Request != nil && te.Request.URL != nil {
		out.URL = redactURL(te.Request.URL.String())
	}
	ping := te.Request == nil || te.Request.URL == nil || te.Request.URL.Path == "/v2/" || te.Request.URL.Path == "/v2"
	switch {
	case ping:
		out.Err = types.ErrPing
	case te.StatusCode == http.StatusUnauthorized:
		out.Err = types.ErrUnauthorized // the token service refused the credentials
	case te.StatusCode == http.StatusForbidden:
		out.Err = types.ErrForbidden
	case te.StatusCode == http.StatusTooManyRequests:
		out.Err = types.ErrRateLimited
	default:
		out.Err = types.ErrToken
	}
}

func isNetError(err error) bool {
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue)
}

// isTLSError reports whether err is a certificate that could not be
// verified, or a TLS handshake with something that does not speak TLS.
func isTLSError(err error) bool {
	var (
		cert *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		ci   x509.CertificateInvalidError
	)
	return errors.As(err, &cert) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci)
}

func tlsDetail(err error) string {
	var (
		ua x509.UnknownAuthorityError
		hn x509.HostnameError
		ci x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &ua):
		return ua.Error()
	case errors.As(err, &hn):
		return hn.Error()
	case errors.As(err, &ci):
		return ci.Error()
	}
	return err.Error()
}

func netDetail(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// redactURL drops userinfo and the query, which may carry tokens.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
