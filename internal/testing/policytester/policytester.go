// Package policytester runs sigstore policy-controller v0.13.1's
// policy-tester (cmd/tester, built by hack/build-bins.sh engines) as a
// process: one ClusterImagePolicy against one image on a loopback
// registry, verified by policy-controller's own webhook code
// (pkg/policy.Verification.Verify, with no-match-policy deny), as the
// oracle of regcheck's policy-controller verdicts.
//
// Offline: HOME, DOCKER_CONFIG and TUF_ROOT are a temporary folder and
// HTTPS_PROXY and HTTP_PROXY point at a closed loopback port, so nothing
// leaves the machine (Go never proxies a 127.0.0.1 registry). A key
// authority without a ctlog block verifies with the transparency log
// ignored (pkg/webhook/validator.go checkOptsFromAuthority: no Rekor
// client and no keys, IgnoreTlog), so a signature made with
// --tlog-upload=false verifies offline; keyless needs a TrustRoot
// (--trustroot) holding the test CA.
package policytester

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/regcheck/regcheck/internal/testing/bins"
)

// Version is the policy-tester binary hack/build-bins.sh builds.
const Version = "policy-tester-v0.13.1"

// timeout bounds one policy-tester run.
const timeout = 2 * time.Minute

// Tester is the policy-tester binary and a folder for its runs.
type Tester struct {
	// Bin is the policy-tester executable.
	Bin string
	dir string
}

// Outcome is what policy-tester decided for the image.
type Outcome struct {
	// Refused: the image fails the policy (policy-tester exits 1 with
	// errors); under an enforcing policy the Pod is not admitted.
	Refused bool
	// Errors and Warnings are what policy-tester printed (its JSON).
	Errors, Warnings []string
	// Output is everything the tester wrote.
	Output string
}

// Message is the errors, one a line.
func (o Outcome) Message() string { return strings.Join(o.Errors, "\n") }

// New finds policy-tester in the binaries folder, or says how to build
// it; dir holds its policy files and its home.
func New(dir string) (*Tester, error) {
	bin, err := bins.Path(Version)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		return nil, fmt.Errorf("creating policy-tester's home: %w", err)
	}
	return &Tester{Bin: bin, dir: dir}, nil
}

// Test runs policy-tester with the ClusterImagePolicy (one document) on
// image, with the TrustRoot document trustRoot when it is not "", and
// reads its outcome. An error is a run that could not be judged: an
// invalid policy (the tester stops before verifying), a timeout.
func (t *Tester) Test(ctx context.Context, policy, image, trustRoot string) (Outcome, error) {
	pol, err := t.write("policy", policy)
	if err != nil {
		return Outcome{}, err
	}
	args := []string{"--policy", pol, "--image", image, "--log-level", "warn"}
	if trustRoot != "" {
		tr, err := t.write("trustroot", trustRoot)
		if err != nil {
			return Outcome{}, err
		}
		args = append(args, "--trustroot", tr)
	}
	stdout, all, err := t.run(ctx, args...)
	o := Outcome{Output: all}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return o, nil
	case !errors.As(err, &ee):
		return o, fmt.Errorf("policy-tester: %w\n%s", err, all)
	}
	var res struct {
		Errors   []string `json:"errors"`
		Warnings []string `json:"warnings"`
	}
	line := strings.TrimSpace(stdout)
	if i := strings.LastIndex(line, "\n"); i >= 0 {
		line = line[i+1:]
	}
	if jerr := json.Unmarshal([]byte(line), &res); jerr != nil || len(res.Errors) == 0 {
		return o, fmt.Errorf("policy-tester exited %d without a verdict: %v\n%s", ee.ExitCode(), err, all)
	}
	o.Refused, o.Errors, o.Warnings = true, res.Errors, res.Warnings
	return o, nil
}

// write writes one input file of a run under a fresh name.
func (t *Tester) write(what, body string) (string, error) {
	p := filepath.Join(t.dir, fmt.Sprintf("%s-%d.yaml", what, time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("writing the %s file: %w", what, err)
	}
	return p, nil
}

// run runs the tester in its folder, offline (see the package comment):
// its stdout, and stdout and stderr together.
func (t *Tester) run(ctx context.Context, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.Bin, args...)
	cmd.Dir = t.dir
	home := filepath.Join(t.dir, "home")
	cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "TUF_ROOT="+filepath.Join(home, "tuf"),
		"SIGSTORE_NO_CACHE=true", "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9")
	var stdout, all bytes.Buffer
	cmd.Stdout = io.MultiWriter(&stdout, &all)
	cmd.Stderr = &all
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), all.String(), fmt.Errorf("policy-tester: %w", ctx.Err())
	}
	return stdout.String(), all.String(), err
}
