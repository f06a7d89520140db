//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// pinFixture writes a manifest whose one image is ref into a new folder.
func pinFixture(t *testing.T, refs ...string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n")
	for i, ref := range refs {
		b.WriteString("        - name: c" + string(rune('0'+i)) + "\n          image: " + ref + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runAction runs hack/action/run.sh, the action's run step, with inputs
// as the composite step passes them (INPUT_*) and bin as regcheck; it
// returns the exit code, stdout, stderr and what the step wrote to
// GITHUB_OUTPUT.
func runAction(t *testing.T, bin, dir string, inputs map[string]string) (int, string, string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "github_output")
	script, err := filepath.Abs("../hack/action/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), script)
	cmd.Env = append(os.Environ(), "REGCHECK="+bin, "GITHUB_OUTPUT="+out)
	for k, v := range inputs {
		cmd.Env = append(cmd.Env, "INPUT_"+k+"="+v)
	}
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	ghout, _ := os.ReadFile(out)
	return code, stdout.String(), stderr.String(), string(ghout)
}

// sarifResults is the number of results in a SARIF file's runs, failing
// the test when it is no SARIF 2.1.0.
func sarifResults(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Version != "2.1.0" || len(s.Runs) != 1 {
		t.Fatalf("%s: not SARIF 2.1.0 with one run (%v):\n%.400s", path, err, b)
	}
	return len(s.Runs[0].Results)
}

// TestCI runs the CI integrations with one locally built regcheck: the
// GitHub Action's steps (testAction) and the GitLab template's job
// (testGitLabTemplate).
func TestCI(t *testing.T) {
	bin := buildRegcheck(t)
	t.Run("GitHub Action", func(t *testing.T) { testAction(t, bin) })
	t.Run("GitLab template", func(t *testing.T) { testGitLabTemplate(t, bin) })
}

// testAction runs the GitHub Action's steps as a script (hack/action/run.sh,
// with the inputs action.yml passes) against fixture manifests and bin:
// pin --check on a pinned and an unpinned tree, with and without SARIF;
// scan against distribution 3.1.2 with one image pushed and one never
// pushed; a bad input.
func testAction(t *testing.T, bin string) {
	reg := startEmpty(t, registry.V3)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dg, err := fixture.PushSingle(ctx, reg.Host()+"/ci/app:v1", "action test")
	if err != nil {
		t.Fatal(err)
	}
	pinned := pinFixture(t, "127.0.0.1:5000/app:v1@sha256:"+strings.Repeat("ab", 32))
	unpinned := pinFixture(t, "127.0.0.1:5000/app:v1", "127.0.0.1:5000/app:v1@sha256:"+strings.Repeat("ab", 32))
	intact := pinFixture(t, reg.Host()+"/ci/app:v1@"+dg)
	gone := pinFixture(t, reg.Host()+"/ci/app:v1@"+dg, reg.Host()+"/ci/gone:v1")

	for _, tc := range []struct {
		name     string
		dir      string
		inputs   map[string]string
		wantCode int
		stdout   string // in stdout
		sarif    int    // results in the SARIF file, -1 for none written
	}{
		{"pin-check, pinned tree", pinned, map[string]string{}, 0, "", -1},
		{"pin-check, unpinned tree", unpinned, map[string]string{}, 1, "::warning file=deploy.yaml,line=9,title=unpinned", -1},
		{"pin-check, unpinned, text, two paths", unpinned, map[string]string{"PATHS": "deploy.yaml\n" + pinned, "FORMAT": "text"}, 1, "deploy.yaml:9", -1},
		{"pin-check, unpinned, SARIF", unpinned, map[string]string{"UPLOAD_SARIF": "true"}, 1, "::warning file=deploy.yaml,line=9,title=unpinned", 1},
		{"pin-check, pinned, SARIF", pinned, map[string]string{"UPLOAD_SARIF": "true", "SARIF_FILE": "out.sarif"}, 0, "", 0},
		{"scan, intact", intact, map[string]string{"COMMAND": "scan"}, 0, "", -1},
		{"scan, one never pushed", gone, map[string]string{"COMMAND": "scan"}, 1, "::error file=deploy.yaml,line=11,title=tag-missing", -1},
		{"scan, one never pushed, SARIF", gone, map[string]string{"COMMAND": "scan", "UPLOAD_SARIF": "true"}, 1, "", 1},
		{"scan, never pushed, fail-on never", gone, map[string]string{"COMMAND": "scan", "FAIL_ON": "never"}, 0, "::error file=deploy.yaml,line=11,title=tag-missing", -1},
		{"unknown command", pinned, map[string]string{"COMMAND": "lint"}, 2, "", -1},
		{"bad upload-sarif", pinned, map[string]string{"UPLOAD_SARIF": "yes"}, 2, "", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr, ghout := runAction(t, bin, tc.dir, tc.inputs)
			t.Logf("exit %d in %s\nstdout:\n%s\nstderr:\n%s", code, time.Since(start).Round(time.Millisecond), stdout, stderr)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d", code, tc.wantCode)
			}
			if !strings.Contains(ghout, "exit-code="+string(rune('0'+tc.wantCode))+"\n") {
				t.Errorf("GITHUB_OUTPUT %q, want exit-code=%d", ghout, tc.wantCode)
			}
			if tc.stdout != "" && !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q", tc.stdout)
			}
			if tc.stdout == "" && strings.Contains(stdout, "::") {
				t.Errorf("a clean run annotated a line")
			}
			file := filepath.Join(tc.dir, "regcheck.sarif")
			if f := tc.inputs["SARIF_FILE"]; f != "" {
				file = filepath.Join(tc.dir, f)
			}
			defer os.Remove(file)
			if tc.sarif < 0 {
				if _, err := os.Stat(file); err == nil {
					t.Errorf("%s written without upload-sarif", file)
				}
				return
			}
			if n := sarifResults(t, file); n != tc.sarif {
				t.Errorf("%d SARIF results, want %d", n, tc.sarif)
			}
			if !strings.Contains(ghout, "sarif-file=") {
				t.Errorf("GITHUB_OUTPUT %q names no sarif-file", ghout)
			}
		})
	}
}

// TestActionYAML holds action.yml to the script: a composite action whose
// run step is hack/action/run.sh and passes every input but the install's
// as the INPUT_ variable the script reads.
func TestActionYAML(t *testing.T) {
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Inputs map[string]struct {
			Default *string `yaml:"default"`
		} `yaml:"inputs"`
		Runs struct {
			Using string `yaml:"using"`
			Steps []struct {
				ID   string            `yaml:"id"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				Env  map[string]string `yaml:"env"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../hack/action/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using %q", a.Runs.Using)
	}
	var uses []string
	found := false
	for _, s := range a.Runs.Steps {
		uses = append(uses, s.Uses)
		if s.ID != "run" {
			continue
		}
		found = true
		if !strings.Contains(s.Run, "$GITHUB_ACTION_PATH/hack/action/run.sh") {
			t.Errorf("the run step runs %q", s.Run)
		}
		for in := range a.Inputs {
			if in == "version" || in == "go-version" {
				continue
			}
			env := "INPUT_" + strings.ToUpper(strings.ReplaceAll(in, "-", "_"))
			if s.Env[env] != "${{ inputs."+in+" }}" {
				t.Errorf("input %s: the run step's %s is %q", in, env, s.Env[env])
			}
			if !bytes.Contains(script, []byte(env)) {
				t.Errorf("input %s: run.sh does not read %s", in, env)
			}
		}
	}
	if !found {
		t.Error("no step with id run")
	}
	want := []string{"actions/setup-go@v5", "github/codeql-action/upload-sarif@v3"}
	for _, w := range want {
		if !strings.Contains(strings.Join(uses, " "), w) {
			t.Errorf("steps use %v, want %s", uses, w)
		}
	}
	for in, v := range a.Inputs {
		if v.Default == nil {
			t.Errorf("input %s has no default", in)
		}
	}
}

// testGitLabTemplate runs the script of ci/gitlab/regcheck.gitlab-ci.yml's
// job as GitLab's runner does (bash, -e), with its variables and bin on
// PATH as regcheck (the before_script's go install needs the network: not
// run), on a pinned and an unpinned tree, and reads the code quality
// report and the SARIF it leaves.
func testGitLabTemplate(t *testing.T, bin string) {
	b, err := os.ReadFile("../ci/gitlab/regcheck.gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var jobs map[string]struct {
		Extends   string            `yaml:"extends"`
		Variables map[string]string `yaml:"variables"`
		Script    []string          `yaml:"script"`
		Artifacts struct {
			When    string            `yaml:"when"`
			Paths   []string          `yaml:"paths"`
			Reports map[string]string `yaml:"reports"`
		} `yaml:"artifacts"`
	}
	if err := yaml.Unmarshal(b, &jobs); err != nil {
		t.Fatal(err)
	}
	job, base := jobs["regcheck-pin-check"], jobs[".regcheck"]
	if job.Extends != ".regcheck" || len(job.Script) == 0 || job.Artifacts.When != "always" || job.Artifacts.Reports["codequality"] != "gl-code-quality-report.json" {
		t.Fatalf("job regcheck-pin-check: %+v", job)
	}
	pinned := pinFixture(t, "127.0.0.1:5000/app:v1@sha256:"+strings.Repeat("ab", 32))
	unpinned := pinFixture(t, "127.0.0.1:5000/app:v1", "127.0.0.1:5000/app:v1@sha256:"+strings.Repeat("ab", 32))
	for _, tc := range []struct {
		name     string
		dir      string
		wantCode int
		issues   int
	}{
		{"pinned", pinned, 0, 0},
		{"unpinned", unpinned, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "bash", "-eo", "pipefail", "-c", strings.Join(job.Script, "\n"))
			cmd.Dir = tc.dir
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
			for k, v := range base.Variables {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			t.Logf("exit %d\n%s", code, out)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d", code, tc.wantCode)
			}
			q, err := os.ReadFile(filepath.Join(tc.dir, "gl-code-quality-report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var issues []struct {
				Description string `json:"description"`
				CheckName   string `json:"check_name"`
				Severity    string `json:"severity"`
				Fingerprint string `json:"fingerprint"`
				Location    struct {
					Path  string `json:"path"`
					Lines struct {
						Begin int `json:"begin"`
					} `json:"lines"`
				} `json:"location"`
			}
			if err := json.Unmarshal(q, &issues); err != nil {
				t.Fatalf("code quality report: %v\n%s", err, q)
			}
			if len(issues) != tc.issues {
				t.Fatalf("%d code quality issues, want %d:\n%s", len(issues), tc.issues, q)
			}
			if tc.issues > 0 {
				i := issues[0]
				if i.Location.Path != "deploy.yaml" || i.Location.Lines.Begin != 9 || i.Severity != "major" || i.Fingerprint == "" || !strings.Contains(i.Description, "127.0.0.1:5000/app:v1") {
					t.Errorf("code quality issue %+v", i)
				}
			}
			if n := sarifResults(t, filepath.Join(tc.dir, "regcheck.sarif")); n != tc.issues {
				t.Errorf("%d SARIF results, want %d", n, tc.issues)
			}
		})
	}
}
