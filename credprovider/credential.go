package credprovider

import (
	"fmt"
	"log/slog"

	"github.com/google/go-containerregistry/pkg/authn"
)

// Credential is a username and password a provider returned for an image.
// It is an authn.Authenticator. Its String, GoString and LogValue name the
// provider, the pattern and the username, never the password.
type Credential struct {
	// Provider is the name of the provider that returned it.
	Provider string
	// Pattern is the key of the response's auth map it came under.
	Pattern string
	// Username may be empty, as the kubelet allows.
	Username string

	password string
}

var (
	_ authn.Authenticator = (*Credential)(nil)
	_ fmt.Stringer        = Credential{}
	_ fmt.GoStringer      = Credential{}
	_ slog.LogValuer      = Credential{}
)

// Authorization implements authn.Authenticator: basic auth with the
// username and password.
func (c Credential) Authorization() (*authn.AuthConfig, error) {
	return &authn.AuthConfig{Username: c.Username, Password: c.password}, nil
}

// String names the credential without its password.
func (c Credential) String() string {
	return fmt.Sprintf("credential provider %q for %q (username %q, password redacted)", c.Provider, c.Pattern, c.Username)
}

// GoString is String, so that %#v does not print the password either.
func (c Credential) GoString() string { return c.String() }

// LogValue logs the credential without its password.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("provider", c.Provider), slog.String("pattern", c.Pattern), slog.String("username", c.Username))
}
