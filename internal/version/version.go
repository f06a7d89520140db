// Package version says which regcheck this is, for `regcheck version`, the
// User-Agent and the SARIF tool entry.
package version

import "runtime/debug"

// stamped is set at build time: -ldflags "-X
// github.com/regcheck/regcheck/internal/version.stamped=v1.2.3" (make build
// does it from git describe).
var stamped string

// String is the stamped version, else the module version `go install
// …@v1.2.3` records, else "dev".
func String() string {
	if stamped != "" {
		return stamped
	}
	if bi, ok := debug.ReadBuildInfo(); ok && len(bi.Main.Version) > 1 && bi.Main.Version[0] == 'v' {
		return bi.Main.Version
	}
	return "dev"
}
