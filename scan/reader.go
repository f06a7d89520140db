package scan

import "github.com/regcheck/regcheck/walk"

// Reader returns the registry as the Scanner reads it, a walk.Reader: its
// requests, with their retries, counting and memory, shared with its scans
// (or the Reader given to WithReader).
// A caller walks images over it, or over a view of it (gc-check walks the
// registry as a predicted garbage collection would leave it).
func (s *Scanner) Reader() walk.Reader { return s.r }

// RegistryReader returns the registry itself as a walk.Reader, never
// through the node's mirrors (WithPullPath): where admission controllers
// look for signatures and attestations. Without WithPullPath it is
// Reader.
func (s *Scanner) RegistryReader() walk.Reader { return s.direct }
