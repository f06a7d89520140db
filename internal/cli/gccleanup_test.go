package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/cleanup"
)

// gc-check --cleanup's flags: what goes with what, and files that are no
// cleanup or no export are usage errors, never a prediction.
func TestGCCheckCleanupUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod := write("pod.yaml", "kind: Pod\n")
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"state without cleanup", []string{"--registry-state", pod, "reg.example/app:v1"}, "--registry-state goes with --cleanup"},
		{"runs without cleanup", []string{"--runs", "2", "reg.example/app:v1"}, "--runs goes with --cleanup"},
		{"cleanup with storage", []string{"--cleanup", pod, "--storage", dir}, "--storage is about a garbage collector"},
		{"cleanup with gc-model", []string{"--cleanup", pod, "--gc-model", "distribution-3"}, "--gc-model is about a garbage collector"},
		{"zero runs", []string{"--cleanup", pod, "--runs", "0"}, "at least 1"},
		{"not a cleanup", []string{"--cleanup", pod, "reg.example/app:v1"}, "not a cleanup regcheck knows"},
		{"missing file", []string{"--cleanup", filepath.Join(dir, "nope.yml"), "reg.example/app:v1"}, "no such file"},
		{"bad time", []string{"--cleanup", pod, "--at", "tomorrow", "reg.example/app:v1"}, "--at \"tomorrow\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"gc-check"}, tc.args...))
			if code != ExitUsage || !strings.Contains(errb.String(), tc.err) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s", code, ExitUsage, tc.err, errb.String())
			}
		})
	}
}

func TestParseAt(t *testing.T) {
	now := time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"", now},
		{"2027-01-01", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2027-01-01T03:04:05+02:00", time.Date(2027, 1, 1, 1, 4, 5, 0, time.UTC)},
	} {
		got, err := parseAt(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseAt(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// The example gates' cleanup files are cleanups regcheck reads: what the
// gate checks is what the cleanup step runs.
func TestCleanupExamplesRead(t *testing.T) {
	for file, want := range map[string]string{
		"cleanup.yml":               "snok/container-retention-policy",
		"ci/expiration-policy.json": "",
		"ecr/lifecycle.json":        "",
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "examples", "gc-check-cleanup", file))
			if err != nil {
				t.Fatal(err)
			}
			ps, err := cleanup.Read(file, data)
			if err != nil || len(ps) != 1 {
				t.Fatalf("%d policies, %v", len(ps), err)
			}
			if !strings.Contains(ps[0].Name(), want) {
				t.Errorf("policy %q, want %q", ps[0].Name(), want)
			}
		})
	}
}
