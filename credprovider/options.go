package credprovider

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Option configures the Providers that Load returns.
type Option func(*options) error

type options struct {
	timeout time.Duration
	now     func() time.Time
	logger  *slog.Logger
}

// DefaultTimeout is how long a plugin may run: the kubelet's catch-all
// timeout for exec plugins, fixed at one minute (execPlugin.ExecPlugin in
// kubernetes' pkg/credentialprovider/plugin/plugin.go); regcheck's
// --credential-provider-timeout changes it.
const DefaultTimeout = time.Minute

// makeOptions holds every default in one place, applies opts, and rejects
// bad values.
func makeOptions(opts ...Option) (*options, error) {
	o := &options{
		timeout: DefaultTimeout,
		now:     time.Now,
		logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	var errs []error
	for _, opt := range opts {
		if err := opt(o); err != nil {
			errs = append(errs, err)
		}
	}
	return o, errors.Join(errs...)
}

// WithTimeout bounds each plugin run to d; a plugin still running then is
// killed. The default is DefaultTimeout (1 minute), as in the kubelet.
func WithTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("plugin timeout %s: must be positive", d)
		}
		o.timeout = d
		return nil
	}
}

// WithClock reads the time from now, for the credential cache's expiry.
// The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("clock: nil")
		}
		o.now = now
		return nil
	}
}

// WithLogger logs plugin runs (debug) and failures (warn) to l; no
// credential is ever logged. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("logger: nil")
		}
		o.logger = l
		return nil
	}
}
