package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/cleanup"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/results/gcresult"
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
	fifo := filepath.Join(dir, "cleanup.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ecr := write("ecr.json", `{"rules":[{"rulePriority":1,"selection":{"tagStatus":"any","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}]}`)
	big := write("versions.json", "")
	if err := os.Truncate(big, 64<<20+1); err != nil {
		t.Fatal(err)
	}
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
		// Before: a named pipe blocked forever, SIGTERM ignored; an export
		// of 10^6 versions ran out of memory.
		{"cleanup a named pipe", []string{"--cleanup", fifo, "reg.example/app:v1"}, "--cleanup: " + fifo + ": a named pipe, not a regular file"},
		{"cleanup /dev/zero", []string{"--cleanup", "/dev/zero", "reg.example/app:v1"}, "--cleanup: /dev/zero: a character device, not a regular file"},
		{"state larger than the cap", []string{"--cleanup", ecr, "--registry-state", big, "reg.example/app:v1"}, "--registry-state: " + big + ": larger than 64 MiB"},
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

// gc-check --cleanup through the command: a GitLab cleanup policy and its
// tags export (named with REPO=FILE) on an in-memory registry. At a time
// when the old tag is past older_than, its in-use image breaks (exit 1,
// tag-deleted with the policy's fix); before, nothing is deleted (exit 0).
func TestGCCheckCleanupGitLab(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	digests := map[string]string{}
	for _, tag := range []string{"v1", "old", "new"} { // keep_n 1 keeps new, the newest
		d, err := fixture.PushSingle(ctx, host+"/group/app:"+tag, "build "+tag)
		if err != nil {
			t.Fatal(err)
		}
		digests[tag] = d
	}
	dir := t.TempDir()
	project := filepath.Join(dir, "project.json")
	tags := filepath.Join(dir, "tags.json")
	pushed := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	writeOrFail(t, project, []byte(`{"id":1,"path_with_namespace":"group/app","container_expiration_policy":{"enabled":true,"keep_n":1,"older_than":"7d","name_regex":".*","name_regex_keep":"v.*"}}`))
	var export []string
	for tag, d := range digests {
		at := pushed
		if tag == "new" {
			at = pushed.Add(24 * time.Hour)
		}
		export = append(export, fmt.Sprintf(`{"name":%q,"path":"group/app:%s","location":"%s/group/app:%s","digest":%q,"created_at":%q}`, tag, tag, host, tag, d, at.Format(time.RFC3339)))
	}
	writeOrFail(t, tags, []byte("["+strings.Join(export, ",")+"]"))
	for _, tc := range []struct {
		at    string
		want  int
		codes string
	}{
		{"2026-11-30", ExitFindings, "tag-deleted"},
		{"2026-11-03", ExitClean, ""},
	} {
		t.Run(tc.at, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(ctx, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, []string{"gc-check", "--cleanup", project,
				"--registry-state", "group/app=" + tags, "--at", tc.at, "-o", "json", host + "/group/app:old", host + "/group/app:v1"})
			var rep gcresult.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || code != tc.want {
				t.Fatalf("exit %d (want %d), %v\n%s%s", code, tc.want, err, out.String(), errb.String())
			}
			var codes []string
			for _, e := range rep.WouldBreak {
				for _, l := range e.Losses {
					codes = append(codes, string(l.Code))
					if e.Reference != host+"/group/app:old" || !strings.Contains(l.Keep, "name_regex_keep") {
						t.Errorf("%s: %+v", e.Reference, l)
					}
				}
			}
			if strings.Join(codes, ",") != tc.codes || rep.Mode != gcresult.ModeCleanup || len(rep.Cleanup.States) != 1 {
				t.Errorf("codes %v, mode %s, states %+v", codes, rep.Mode, rep.Cleanup.States)
			}
		})
	}
}

func writeOrFail(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
