// Package version says which regcheck this is, for `regcheck version`, the
// User-Agent and the SARIF tool entry.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// stamped and stampedRevision are set at build time: -ldflags "-X
// github.com/regcheck/regcheck/internal/version.stamped=v1.2.3" (make build
// does it from git describe); the revision is for builds that record none
// (-buildvcs=false, a copy without .git).
var stamped, stampedRevision string

// Info is which build of regcheck this is.
type Info struct {
	// Version is the module version the build recorded (`go install
	// …@v1.2.3`, or the version go build derives from the checkout's tag
	// and commit), else the stamped version, else "dev".
	Version string
	// Revision, Time and Modified are the commit built, its time (RFC
	// 3339) and whether the work tree had changes, when the build recorded
	// them (go build in a checkout does; go install …@version does not).
	Revision string
	Time     string
	Modified bool
	// Go is the Go version that built it.
	Go string
}

// Get reads the build's information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	i := fromBuild(bi, stamped)
	if i.Revision == "" {
		i.Revision = stampedRevision
	}
	return i
}

// fromBuild makes an Info from build information (nil when the binary has
// none) and a stamped version ("" when none was stamped).
func fromBuild(bi *debug.BuildInfo, stamped string) Info {
	i := Info{Version: "dev"}
	if bi == nil {
		if stamped != "" {
			i.Version = stamped
		}
		return i
	}
	switch v := bi.Main.Version; {
	case strings.HasPrefix(v, "v"):
		i.Version = v
	case stamped != "":
		i.Version = stamped
	}
	i.Go = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is one line: "regcheck v1.2.3 (revision 0123456789ab,
// 2026-12-01T10:00:00Z, modified; go1.26.8)", naming what is known.
func (i Info) String() string {
	var about []string
	if i.Revision != "" {
		rev := "revision " + i.Revision[:min(12, len(i.Revision))]
		if i.Time != "" {
			rev += ", " + i.Time
		}
		if i.Modified {
			rev += ", modified"
		}
		about = append(about, rev)
	}
	if i.Go != "" {
		about = append(about, i.Go)
	}
	if len(about) == 0 {
		return "regcheck " + i.Version
	}
	return fmt.Sprintf("regcheck %s (%s)", i.Version, strings.Join(about, "; "))
}

// String is the version alone (see Info.Version).
func String() string { return Get().Version }
