package scan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Errors a registry request can end in. A *RegistryError unwraps to one.
var (
	ErrNotFound       = errors.New("not found")
	ErrUnauthorized   = errors.New("unauthorized")
	ErrForbidden      = errors.New("forbidden")
	ErrRateLimited    = errors.New("rate limited")
	ErrRegistry       = errors.New("registry error")
	ErrUnreachable    = errors.New("unreachable")
	ErrDigestMismatch = errors.New("digest mismatch")
)

// RegistryError is a failed registry request: what was asked, what came back.
type RegistryError struct {
	Method string
	// URL is the request's URL without query or credentials.
	URL    string
	Status int    // 0 when no response came back
	Detail string // the registry's error code and message, or the network error
	Err    error  // one of the Err* sentinels
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

// statusErr maps an HTTP status to a sentinel.
func statusErr(status int) error {
	switch {
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusForbidden:
		return ErrForbidden
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	}
	return ErrRegistry
}

// classify turns any error from a registry exchange into a *RegistryError
// (or leaves one as it is).
func classify(method, u string, err error) error {
	var re *RegistryError
	if errors.As(err, &re) {
		return err
	}
	var te *transport.Error
	if errors.As(err, &te) {
		detail := ""
		if len(te.Errors) > 0 {
			detail = te.Errors[0].String()
		}
		return &RegistryError{Method: method, URL: redactURL(u), Status: te.StatusCode, Detail: detail, Err: statusErr(te.StatusCode)}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var ne net.Error
	var ue *url.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.As(err, &ue) {
		return &RegistryError{Method: method, URL: redactURL(u), Detail: netDetail(err), Err: ErrUnreachable}
	}
	return &RegistryError{Method: method, URL: redactURL(u), Detail: err.Error(), Err: ErrRegistry}
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

// faultCode maps an error to the fault finding it is, or "" if it is not one.
func faultCode(err error) Code {
	switch {
	case errors.Is(err, ErrUnauthorized):
		return Unauthorized
	case errors.Is(err, ErrForbidden):
		return Forbidden
	case errors.Is(err, ErrRateLimited):
		return RateLimited
	case errors.Is(err, ErrUnreachable):
		return Unreachable
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrDigestMismatch):
		return ""
	}
	return RegistryFault
}
