package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "66f6939c1234abcdef0123456789abcdef012345"},
		{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tc := range []struct {
		name    string
		bi      *debug.BuildInfo
		stamped string
		want    string
	}{
		{"no build information", nil, "", "regcheck dev"},
		{"no build information, stamped", nil, "v1.2.3", "regcheck v1.2.3"},
		{"go install …@v1.2.3", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			"", "regcheck v1.2.3 (go1.26.8)"},
		{"go build in a checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201100000-66f6939c1234+dirty"}, Settings: vcs},
			"", "regcheck v0.0.0-20261201100000-66f6939c1234+dirty (revision 66f6939c1234, 2026-12-01T10:00:00Z, modified; go1.26.8)"},
		{"make build: the module version first", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: vcs[:3]},
			"v1.2.3-dirty", "regcheck v1.2.3 (revision 66f6939c1234, 2026-12-01T10:00:00Z; go1.26.8)"},
		{"no module version: the stamped one", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:2]},
			"66f6939-dirty", "regcheck 66f6939-dirty (revision 66f6939c1234; go1.26.8)"},
		{"neither", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", "regcheck dev (go1.26.8)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := fromBuild(tc.bi, tc.stamped).String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
