package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/regcheck/regcheck/types"
)

// transportFaults records, for one verification, the registry requests
// that failed and were not answered since: cosign folds a failed read of
// a signature's layer (static.Copy in verifySignatures and
// verifyImageAttestations, cosign v3.1.3 pkg/cosign/verify.go) into
// ErrNoMatchingSignatures / ErrNoMatchingAttestations, and GetBundles
// passes over a referrer it cannot read; only this record tells such an
// answer from a refusal. A request asked again and answered (a retry, a
// token refreshed after a 401) is no longer open.
type transportFaults struct {
	mu   sync.Mutex
	open map[string]error // method and URL → the request's last failure
	keys []string         // open's keys, first failed first
}

type transportFaultsKey struct{}

// withTransportFaults is ctx carrying a new record for one verification:
// registryOpts puts it under the registry client's transport.
func withTransportFaults(ctx context.Context) (context.Context, *transportFaults) {
	f := &transportFaults{open: map[string]error{}}
	return context.WithValue(ctx, transportFaultsKey{}, f), f
}

// transportFaultsOf is ctx's record, nil when it carries none.
func transportFaultsOf(ctx context.Context) *transportFaults {
	f, _ := ctx.Value(transportFaultsKey{}).(*transportFaults)
	return f
}

// note records req's outcome: a failure opens it, an answer closes it.
func (f *transportFaults) note(req *http.Request, cause error) {
	key := req.Method + " " + req.URL.Scheme + "://" + req.URL.Host + req.URL.Path
	f.mu.Lock()
	defer f.mu.Unlock()
	if cause == nil {
		delete(f.open, key)
		return
	}
	if _, ok := f.open[key]; !ok {
		f.keys = append(f.keys, key)
	}
	f.open[key] = fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), cause)
}

// err is the first failure still open, nil when there is none.
func (f *transportFaults) err() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.keys {
		if err, ok := f.open[k]; ok {
			return err
		}
	}
	return nil
}

// hide is v seen through the record: a refusal reached while a request
// failed is no refusal (the signature the failed read would have given
// may be the one that verifies): unverifiable, a fault with its cause. A
// fault without a cause takes the record's.
func (f *transportFaults) hide(v Verdict) Verdict {
	cause := f.err()
	switch {
	case cause == nil:
		return v
	case v.Outcome == Refused:
		return Verdict{Outcome: Unverifiable, Fault: true, Cause: cause,
			Reason: fmt.Sprintf("the registry failed while cosign read the signatures (%v), so cosign's answer is no refusal: %s", cause, v.Reason)}
	case v.Fault && v.Cause == nil:
		v.Cause = cause
	}
	return v
}

// faultRecorder is the transport under the registry client of one
// verification: it notes each request's outcome in faults.
type faultRecorder struct {
	next   http.RoundTripper
	faults *transportFaults
}

var _ http.RoundTripper = faultRecorder{}

// RoundTrip sends req and notes whether it failed; a body whose read
// fails (cut, timed out) is noted when it does.
func (r faultRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	switch {
	case isPing(req):
		// The version check: a 401 is its challenge, and a plain-HTTP
		// registry fails the https one by design. A registry that
		// answers it with neither fails the verification outright.
	case err != nil:
		r.faults.note(req, transportCause(err))
	default:
		r.faults.note(req, statusCause(req, resp.StatusCode))
		resp.Body = &recordedBody{ReadCloser: resp.Body, req: req, faults: r.faults}
	}
	return resp, err
}

// recordedBody notes a failed read of a response body.
type recordedBody struct {
	io.ReadCloser
	req    *http.Request
	faults *transportFaults
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.faults.note(b.req, transportCause(err))
	}
	return n, err
}

// isPing reports whether req is a registry's version check (GET /v2/).
func isPing(req *http.Request) bool {
	return req.URL.Path == "/v2/" || req.URL.Path == "/v2"
}

// statusCause is what a status says of req: nil for an answer (2xx, 3xx)
// and for the registry's own 404, the only answer that proves absence (a
// 404 of the host a redirect led to, blob storage or a CDN, proves
// nothing, as the Scanner reads it: scan/errors.go responseError); nil
// for the statuses go-containerregistry reads as "no referrers API" (400,
// 406) on a referrers request, which it answers from the referrers tag;
// a fault otherwise.
func statusCause(req *http.Request, status int) error {
	switch {
	case status < 400, status == http.StatusNotFound && req.Response == nil:
		return nil
	case strings.Contains(req.URL.Path, "/referrers/") && (status == http.StatusBadRequest || status == http.StatusNotAcceptable):
		return nil
	}
	text := fmt.Sprintf("%d %s", status, http.StatusText(status))
	switch status {
	case http.StatusUnauthorized:
		return fmt.Errorf("%w: %s", types.ErrUnauthorized, text)
	case http.StatusForbidden:
		return fmt.Errorf("%w: %s", types.ErrForbidden, text)
	case http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s", types.ErrRateLimited, text)
	}
	return fmt.Errorf("%w: %s", types.ErrRegistry, text)
}

// transportCause classifies an error of the transport: its own when it
// names a fault (the Scanner's transport: a spent pull budget, plain
// HTTP refused), an untrusted certificate, else an unreachable registry.
func transportCause(err error) error {
	if c := types.FaultCode(err); c != "" && c != types.RegistryFault {
		return err
	}
	var verr *tls.CertificateVerificationError
	var uerr x509.UnknownAuthorityError
	var herr x509.HostnameError
	if errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) {
		return fmt.Errorf("%w: %w", types.ErrTLS, err)
	}
	return fmt.Errorf("%w: %w", types.ErrUnreachable, err)
}
