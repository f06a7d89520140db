//go:build integration

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitRun runs git in dir with a fixed identity and no user configuration.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// snapshotRepo commits this repository's work tree as it is (tracked and
// untracked files, .gitignore obeyed) into a new repository in a temporary
// folder, and returns the folder and the commit: what pre-commit clones.
func snapshotRepo(t *testing.T) (string, string) {
	t.Helper()
	dst := t.TempDir()
	files := gitRun(t, "..", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for _, f := range strings.Split(strings.TrimRight(files, "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join("..", f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, dst, "init", "-q")
	gitRun(t, dst, "add", "-A")
	gitRun(t, dst, "commit", "-q", "-m", "snapshot")
	return dst, gitRun(t, dst, "rev-parse", "HEAD")
}

// TestPreCommitHook runs the real pre-commit (Debian's) on a fixture
// repository whose .pre-commit-config.yaml uses regcheck-pin-check from a
// snapshot of this repository: pre-commit clones it and builds regcheck
// with go install ./... (language: golang), offline, from a file://
// GOPROXY over this machine's module cache, into a fresh GOPATH (GOSUMDB
// off for the test: go.sum is checked, the checksum database is not
// asked), with make dist's build flags so that a warm build cache serves
// it (cold, it compiles every dependency: many minutes on 2 cores). The
// hook fails on an unpinned manifest and passes once pinned.
func TestPreCommitHook(t *testing.T) {
	if _, err := exec.LookPath("pre-commit"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pre-commit is not installed (.ci/run installs Debian's package)")
		}
		t.Skip("pre-commit is not installed: apt-get install pre-commit")
	}
	hooks, rev := snapshotRepo(t)
	proj := t.TempDir()
	gitRun(t, proj, "init", "-q")
	config := "repos:\n  - repo: " + hooks + "\n    rev: " + rev + "\n    hooks:\n      - id: regcheck-pin-check\n"
	unpinned := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n    - name: web\n      image: 127.0.0.1:5000/web:v1\n"
	pinned := strings.Replace(unpinned, "web:v1", "web:v1@sha256:"+strings.Repeat("cd", 32), 1)
	for name, data := range map[string]string{".pre-commit-config.yaml": config, "k8s/pod.yaml": unpinned, "README.md": "not YAML: image: x\n"} {
		os.MkdirAll(filepath.Join(proj, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(proj, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, proj, "add", "-A")
	gitRun(t, proj, "commit", "-q", "-m", "fixture")

	gomodcache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	env := append(os.Environ(),
		"PRE_COMMIT_HOME="+filepath.Join(t.TempDir(), "pre-commit"),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GOPROXY=file://"+filepath.Join(gomodcache, "cache", "download"),
		"GOSUMDB=off", "GOTOOLCHAIN=local",
		// make dist's build configuration: with -trimpath a package's
		// compile does not depend on its folder, so the build cache
		// TestDist or make dist warmed serves pre-commit's fresh GOPATH.
		"GOFLAGS=-mod=mod -modcacherw -buildvcs=false -trimpath -tags=kustomize_disable_go_plugin_support", "CGO_ENABLED=0")
	run := func(want int, wantOut ...string) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(t.Context(), "pre-commit", "run", "--all-files", "--color", "never")
		cmd.Dir, cmd.Env = proj, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("pre-commit run --all-files: exit %d in %s\n%s", code, time.Since(start).Round(100*time.Millisecond), out.String())
		if code != want {
			t.Errorf("exit %d, want %d", code, want)
		}
		for _, w := range wantOut {
			if !strings.Contains(out.String(), w) {
				t.Errorf("output lacks %q", w)
			}
		}
	}
	// The first run clones and builds (timed above), then fails.
	run(1, "regcheck pin --check", "Failed", "k8s/pod.yaml:7")
	if err := os.WriteFile(filepath.Join(proj, "k8s/pod.yaml"), []byte(pinned), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, proj, "add", "-A")
	run(0, "regcheck pin --check", "Passed")
}

// goEnv is go env NAME.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return string(out)
}
