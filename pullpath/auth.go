package pullpath

import (
	"encoding/json"
	"log/slog"
	"strings"
)

// redacted describes which fields are set, never their values.
func (a Auth) redacted() string {
	var set []string
	for _, f := range []struct {
		name string
		v    string
	}{{"username", a.Username}, {"password", a.Password}, {"auth", a.Auth}, {"identity_token", a.IdentityToken}} {
		if f.v != "" {
			set = append(set, f.name)
		}
	}
	if len(set) == 0 {
		return "auth(none)"
	}
	return "auth(" + strings.Join(set, ",") + ": redacted)"
}

// String names the fields that are set and shows none of them.
func (a Auth) String() string { return a.redacted() }

// GoString keeps %#v from printing the secrets.
func (a Auth) GoString() string { return "pullpath.Auth{" + a.redacted() + "}" }

// LogValue keeps slog from printing the secrets.
func (a Auth) LogValue() slog.Value { return slog.StringValue(a.redacted()) }

// MarshalJSON keeps encoded findings from carrying the secrets.
func (a Auth) MarshalJSON() ([]byte, error) { return json.Marshal(a.redacted()) }
