package scan

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/walk"
)

// Option configures a scan.
type Option func(*options) error

type options struct {
	transport   http.RoundTripper
	keychain    authn.Keychain
	concurrency int
	timeout     time.Duration
	attempts    int
	maxPulls    int // manifest GETs per host; 0: no cap
	backoff     time.Duration
	maxBackoff  time.Duration
	platforms   []v1.Platform
	insecure    map[string]bool
	getHosts    *getHosts // hosts whose blobs are proven by GET (see WithBlobGetRegistries); shared, and learned into
	logger      *slog.Logger
	userAgent   string
	cache       cacheConfig
	roots       *x509.CertPool // system roots plus CA files; nil: system roots
	caFiles     []string
	reaskPause  time.Duration
	reader      walk.Reader // nil: the registry, over HTTP
	pullPath    *pullpath.Config
	progress    func(Progress)
}

// makeOptions holds every default in one place, applies opts, and rejects
// bad values.
func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		keychain:    authn.DefaultKeychain,
		concurrency: 8,
		timeout:     30 * time.Second,
		attempts:    4,
		backoff:     200 * time.Millisecond,
		maxBackoff:  10 * time.Second,
		insecure:    map[string]bool{},
		getHosts:    &getHosts{},
		logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		userAgent:   "regcheck",
		reaskPause:  2 * time.Second,
	}
	var errs []error
	for _, opt := range opts {
		if err := opt(o); err != nil {
			errs = append(errs, err)
		}
	}
	if o.transport != nil && len(o.caFiles) > 0 {
		errs = append(errs, errors.New("CA files and a caller's transport both set TLS: give the CA to the transport"))
	}
	return o, errors.Join(errs...)
}

// WithTransport sends requests through t instead of a clone of
// http.DefaultTransport. TLS settings, --insecure-registry's included, are
// then t's to make. Retries and request counting still wrap it.
func WithTransport(t http.RoundTripper) Option {
	return func(o *options) error { o.transport = t; return nil }
}

// WithKeychain resolves registry credentials from k. The default is
// authn.DefaultKeychain (the Docker config and its credential helpers).
func WithKeychain(k authn.Keychain) Option {
	return func(o *options) error {
		if k == nil {
			return errors.New("scan.WithKeychain: nil keychain")
		}
		o.keychain = k
		return nil
	}
}

// WithKeychainFirst asks the keychain load returns before the keychain set
// so far (WithKeychain's, else authn.DefaultKeychain), as the kubelet asks
// a pod's pull secrets before the node's credentials: a resource it
// resolves to authn.Anonymous is asked of the next, and its error is the
// resource's (a credentials-error). Given again, the last is asked first.
// load is called as the Scanner is made; its error is New's, and a nil
// keychain asks nothing first. By default nothing is asked first.
func WithKeychainFirst(load func() (authn.Keychain, error)) Option {
	return func(o *options) error {
		if load == nil {
			return errors.New("scan.WithKeychainFirst: nil load")
		}
		k, err := load()
		if err != nil {
			return err
		}
		if k != nil {
			o.keychain = authn.NewMultiKeychain(k, o.keychain)
		}
		return nil
	}
}

// WithConcurrency bounds the registry requests in flight at once. The default is 8.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("concurrency must be at least 1, got %d", n)
		}
		o.concurrency = n
		return nil
	}
}

// WithTimeout bounds each request, its retries and their waits included.
// The default is 30s.
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("timeout must be positive, got %s", d)
		}
		o.timeout = d
		return nil
	}
}

// WithRetry sets the most tries per request (default 4) and the first
// backoff (default 200ms; it doubles each retry, with jitter, capped at 10s
// or the registry's Retry-After).
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(o *options) error {
		if attempts < 1 || backoff <= 0 {
			return fmt.Errorf("retry needs at least 1 attempt and a positive backoff, got %d and %s", attempts, backoff)
		}
		o.attempts, o.backoff = attempts, backoff
		return nil
	}
}

// WithMaxPulls caps the manifest GETs sent to each registry host over the
// Scanner's life, retries included, at n: on Docker Hub each is a pull
// counted against the rate limit (a HEAD is not). A manifest the cap leaves
// unasked is a rate-limit-budget fault. The default, 0, is no cap; a
// registry's own RateLimit headers are heeded either way (see RateLimit).
func WithMaxPulls(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("max pulls must not be negative, got %d", n)
		}
		o.maxPulls = n
		return nil
	}
}

// WithPlatforms limits which index children are required to the given
// platforms ("linux/amd64", "linux/arm/v7"). By default every child is.
func WithPlatforms(platforms ...string) Option {
	return func(o *options) error {
		for _, s := range platforms {
			p, err := v1.ParsePlatform(s)
			if err != nil || p.OS == "" || p.Architecture == "" {
				return fmt.Errorf("platform %q: want os/arch[/variant]", s)
			}
			o.platforms = append(o.platforms, *p)
		}
		return nil
	}
}

// WithInsecureRegistries allows plain HTTP and unverified TLS for the named
// hosts (host or host:port) only. Loopback hosts may use plain HTTP anyway.
func WithInsecureRegistries(hosts ...string) Option {
	return func(o *options) error {
		for _, h := range hosts {
			h = strings.TrimSpace(h)
			if h == "" || strings.Contains(h, "/") {
				return fmt.Errorf("insecure registry %q: want host or host:port", h)
			}
			o.insecure[h] = true
		}
		return nil
	}
}

// WithLogger logs requests' retries and faults to l. By default a scan is silent.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("scan.WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithUserAgent sets the User-Agent of every request. The default is "regcheck".
func WithUserAgent(ua string) Option {
	return func(o *options) error { o.userAgent = ua; return nil }
}

// WithCAFiles trusts the CA certificates in the given PEM files for every
// registry, in addition to the system roots. By default only the system
// roots are trusted. It conflicts with WithTransport, whose TLS is its own.
func WithCAFiles(paths ...string) Option {
	return func(o *options) error {
		if len(paths) == 0 {
			return nil
		}
		var err error
		if o.roots == nil {
			o.roots, err = LoadRoots(paths...)
		} else {
			err = appendPEM(o.roots, paths...)
		}
		if err != nil {
			return err
		}
		o.caFiles = append(o.caFiles, paths...)
		return nil
	}
}

// WithReask sets the pause before images left unknown by a transient fault
// (a timeout, a 5xx, a 429, a bad response) are asked again, once, with
// every fault forgotten. The default is 2s; 0 asks only once.
func WithReask(pause time.Duration) Option {
	return func(o *options) error {
		if pause < 0 {
			return fmt.Errorf("re-ask pause must not be negative, got %s", pause)
		}
		o.reaskPause = pause
		return nil
	}
}

// WithReader walks images over r instead of the registry's HTTP API: a
// registry's filesystem storage (storage.Storage.Reader), a cache. Run, Check,
// Resolve, Manifest and Reader then read from r alone, with the same
// passes, uses and result (whose Requests count only HTTP, so none); Tags,
// Tagged and Catalog still ask the registry. r answers for the references'
// repositories as they are given, host included. By default a Scanner
// reads the registry.
func WithReader(r walk.Reader) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("scan.WithReader: nil reader")
		}
		o.reader = r
		return nil
	}
}

// Progress is how far a Run is: images walked of the Run's images, and
// the requests the Scanner has sent so far.
type Progress struct {
	Done, Total int
	Requests    int
}

// WithProgress calls f as a Run starts and each time it has walked an
// image, one call at a time, from the Run's goroutines: f must return
// quickly. Each Run counts its own images (a cluster check runs twice);
// images asked again after a transient fault are not counted again. By
// default nothing is called.
func WithProgress(f func(Progress)) Option {
	return func(o *options) error { o.progress = f; return nil }
}
