package rescue

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Option configures a Planner, a Writer or a registry Source.
type Option func(*options) error

type options struct {
	transport   http.RoundTripper
	keychain    authn.Keychain
	concurrency int
	tagPrefix   string
	logger      *slog.Logger
	userAgent   string
}

// makeOptions holds every default in one place, applies opts, and rejects
// bad values.
func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		transport:   remote.DefaultTransport,
		keychain:    authn.DefaultKeychain,
		concurrency: 4,
		logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		userAgent:   "regcheck",
	}
	var errs []error
	for _, opt := range opts {
		if err := opt(o); err != nil {
			errs = append(errs, err)
		}
	}
	return o, errors.Join(errs...)
}

// remote returns the go-containerregistry options every write and registry
// read uses.
func (o *options) remote() []remote.Option {
	return []remote.Option{remote.WithTransport(o.transport), remote.WithAuthFromKeychain(o.keychain),
		remote.WithUserAgent(o.userAgent), remote.WithJobs(o.concurrency)}
}

// WithTransport sends registry requests (writes, and reads of a registry
// Source) through t. The default is go-containerregistry's
// remote.DefaultTransport; retries and authentication wrap it.
func WithTransport(t http.RoundTripper) Option {
	return func(o *options) error {
		if t == nil {
			return errors.New("rescue.WithTransport: nil transport")
		}
		o.transport = t
		return nil
	}
}

// WithKeychain resolves registry credentials (push credentials for a
// Writer) from k. The default is authn.DefaultKeychain: the Docker config
// ($DOCKER_CONFIG/config.json) and its credential helpers.
func WithKeychain(k authn.Keychain) Option {
	return func(o *options) error {
		if k == nil {
			return errors.New("rescue.WithKeychain: nil keychain")
		}
		o.keychain = k
		return nil
	}
}

// WithConcurrency bounds the blobs read from sources, or pushed, at once.
// The default is 4.
func WithConcurrency(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("concurrency must be at least 1, got %d", n)
		}
		o.concurrency = n
		return nil
	}
}

// tagPattern is a tag as the distribution spec allows it; a prefix leaves
// room for "-" and 12 hex digits.
var tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,114}$`)

// WithTag makes a Writer tag every manifest it pushes that no tag holds as
// prefix-<first 12 hex digits of its digest> ("rescued-3e191394b100"), so
// that a garbage collector deleting untagged manifests keeps it. A tag that
// exists and points elsewhere is never moved. By default nothing is tagged.
func WithTag(prefix string) Option {
	return func(o *options) error {
		if !tagPattern.MatchString(prefix) {
			return fmt.Errorf("tag prefix %q: want letters, digits, '_', '.' or '-', at most 115, not starting with '.' or '-'", prefix)
		}
		o.tagPrefix = prefix
		return nil
	}
}

// WithLogger logs what is read and pushed to l. By default rescue is silent.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("rescue.WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithUserAgent sets the User-Agent of registry requests. The default is "regcheck".
func WithUserAgent(ua string) Option {
	return func(o *options) error { o.userAgent = ua; return nil }
}
