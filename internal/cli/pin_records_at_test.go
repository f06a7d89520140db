package cli

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// TestPinRecordsAt: --records-at pins back to what ran at a time, where
// --from-records alone pins to the latest.
func TestPinRecordsAt(t *testing.T) {
	t.Parallel()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref := strings.TrimPrefix(reg.URL, "http://") + "/app:latest"
	a := pushTest(t, ref, "build a")
	b := pushTest(t, ref, "build b")
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	history := writeHistory(t, ran("prod", t1, "api", a), ran("prod", t2, "api", b))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // digest pinned, "" for none
		errs string
	}{
		{"the latest", nil, ExitClean, b, ""},
		{"at the first snapshot", []string{"--records-at", t1.Format(time.RFC3339)}, ExitClean, a, ""},
		{"between the snapshots", []string{"--records-at", t1.Add(time.Minute).Format(time.RFC3339)}, ExitClean, a, ""},
		{"a zone", []string{"--records-at", t2.In(time.FixedZone("x", 3600)).Format(time.RFC3339)}, ExitClean, b, ""},
		{"before anything ran", []string{"--records-at", t1.Add(-time.Second).Format(time.RFC3339)}, ExitClean, "", "no-record: no running digest recorded"},
		{"with its cluster", []string{"--records-cluster", "prod", "--records-at", t1.Format(time.RFC3339)}, ExitClean, a, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := pinTree(t, map[string]string{"api.yaml": pinDeployment("api", ref)})
			args := append([]string{"--write", "--from-records", history}, append(tc.args, dir)...)
			code, out, errs := runPinCmd(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			want := pinDeployment("api", ref)
			if tc.want != "" {
				want = pinDeployment("api", ref+"@"+tc.want)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "api.yaml")); string(got) != want {
				t.Errorf("api.yaml:\n%s\nwant:\n%s", got, want)
			}
			if !strings.Contains(errs, tc.errs) {
				t.Errorf("stderr lacks %q:\n%s", tc.errs, errs)
			}
		})
	}
}

func TestPinRecordsAtUsage(t *testing.T) {
	t.Parallel()
	dir := pinTree(t, map[string]string{"pod.yaml": pinPod})
	history := writeHistory(t)
	for _, tc := range []struct {
		name string
		args []string
		errs string
	}{
		{"without --from-records", []string{"--records-at", "2h"}, "--records-at goes with --from-records"},
		{"not a time", []string{"--from-records", history, "--records-at", "yesterday"}, `--records-at "yesterday": want an RFC 3339 time`},
		{"a duration ahead", []string{"--from-records", history, "--records-at", "-2h"}, `--records-at "-2h"`},
		{"with --check", []string{"--check", "--from-records", history, "--records-at", "2h"}, "--check changes nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runPinCmd(t, append(tc.args, dir)...)
			if code != ExitUsage || !strings.Contains(errs, tc.errs) {
				t.Errorf("exit %d, want 2 and %q\n%s%s", code, tc.errs, out, errs)
			}
		})
	}
}

func TestParseRecordsAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2h", now.Add(-2 * time.Hour)},
		{"90s", now.Add(-90 * time.Second)},
		{"0s", now},
		{"2026-12-02T06:33:29Z", time.Date(2026, 12, 2, 6, 33, 29, 0, time.UTC)},
		{"2026-12-02T07:33:29+01:00", time.Date(2026, 12, 2, 6, 33, 29, 0, time.UTC)},
		{"2026-12-02T06:33:29.5Z", time.Date(2026, 12, 2, 6, 33, 29, 5e8, time.UTC)},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseRecordsAt(tc.in, now)
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("parseRecordsAt(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}
