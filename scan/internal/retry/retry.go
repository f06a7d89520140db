// Package retry is an http.RoundTripper that retries requests a registry
// may answer on a second try: 429, 5xx and network errors.
package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Transport retries idempotent requests with exponential backoff and full
// jitter, honouring Retry-After (capped at Max).
type Transport struct {
	// Next sends each attempt.
	Next http.RoundTripper
	// Attempts is the most tries per request, first included (default 4).
	Attempts int
	// Base is the first backoff (default 200ms); each retry doubles it.
	Base time.Duration
	// Max caps one wait, Retry-After included (default 10s).
	Max time.Duration
	// Sleep waits; tests replace it. It returns early with ctx's error.
	Sleep func(ctx context.Context, d time.Duration) error
}

var _ http.RoundTripper = (*Transport)(nil)

// Retryable reports whether a status is worth another try.
func Retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	attempts, base, max := t.Attempts, t.Base, t.Max
	if attempts <= 0 {
		attempts = 4
	}
	if base <= 0 {
		base = 200 * time.Millisecond
	}
	if max <= 0 {
		max = 10 * time.Second
	}
	sleep := t.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	// A request whose body cannot be replayed gets one try.
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		attempts = 1
	}
	for i := 0; ; i++ {
		r := req
		if i > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.Next.RoundTrip(r)
		last := i+1 >= attempts
		switch {
		case err != nil:
			if last || req.Context().Err() != nil || !transient(err) {
				return nil, err
			}
		case !Retryable(resp.StatusCode) || last:
			return resp, nil
		}
		wait := backoff(base, max, i)
		if resp != nil {
			if ra, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				wait = min(ra, max)
			}
			// A wait the request's deadline would cut short ends in a
			// timeout that hides what the registry said: say it instead.
			if dl, ok := req.Context().Deadline(); ok && time.Until(dl) <= wait {
				return resp, nil
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// transient reports whether a network error may pass on a second try: not
// a canceled request, and not a TLS failure (a bad certificate, or a plain
// HTTP server on the other end), which will fail the same way again.
func transient(err error) bool {
	var (
		rh   tls.RecordHeaderError
		cert *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		ci   x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, context.Canceled),
		errors.As(err, &rh), errors.As(err, &cert), errors.As(err, &ua), errors.As(err, &hn), errors.As(err, &ci):
		return false
	}
	return true
}

// backoff is a full-jitter exponential delay for retry i (0-based).
func backoff(base, max time.Duration, i int) time.Duration {
	d := base << min(i, 20)
	if d <= 0 || d > max {
		d = max
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
