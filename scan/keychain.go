package scan

import "github.com/google/go-containerregistry/pkg/authn"

// Keychain returns the keychain the Scanner resolves registry credentials
// from (WithKeychain's, after WithKeychainFirst's; by default
// authn.DefaultKeychain), for a client that must read the same
// repositories with the same credentials: cosign's verification of the
// signatures the Scanner found.
func (s *Scanner) Keychain() authn.Keychain { return s.o.keychain }
