// Package kyvernocli runs the real Kyverno CLI v1.19.1 (kubectl-kyverno,
// built by hack/build-bins.sh engines) as a process: kyverno apply of a
// policy to a Pod, the images verified against a loopback registry, as
// the oracle of regcheck's Kyverno verdicts.
//
// Offline: nothing is fetched from outside. HOME, DOCKER_CONFIG and
// TUF_ROOT are a temporary folder, and HTTPS_PROXY and HTTP_PROXY point
// at a closed loopback port, so that a lookup of Sigstore's TUF root,
// Rekor or a CT log fails at once instead of leaving the machine (Go
// never proxies a 127.0.0.1 registry). A key entry is verified offline
// only with both keys.rekor.ignoreTlog (or a rekor.pubkey and a SET in
// the signature) and keys.ctlog.ignoreSCT: without them Kyverno loads
// the Rekor or CT log keys from TUF (pkg/image/verifiers/cpol/cosign
// buildCosignOptions) and the verification fails. A plain-HTTP
// registry on 127.0.0.1 needs no flag: go-containerregistry, which
// Kyverno's registry client is, speaks HTTP to loopback hosts.
package kyvernocli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/regcheck/regcheck/internal/testing/bins"
)

// Version is the Kyverno CLI binary hack/build-bins.sh builds.
const Version = "kyverno-v1.19.1"

// timeout bounds one kyverno apply.
const timeout = 2 * time.Minute

// CLI is the Kyverno CLI binary and a folder for its runs.
type CLI struct {
	// Bin is the kubectl-kyverno executable.
	Bin string
	dir string
}

// Outcome is what kyverno apply decided for the Pod.
type Outcome struct {
	// Refused: a rule failed or errored; under Enforce the Pod is not
	// admitted (an Audit failure is counted a warning: --audit-warn). A
	// policy the CLI skipped is not a refusal (see Skipped).
	Refused bool
	// Pass, Fail, Warn, Error and Skip are the CLI's counts of rule results.
	Pass, Fail, Warn, Error, Skip int
	// Skipped lists the policies the CLI did not apply ("Policies
	// Skipped", "Invalid Policies": one Error each in the counts): it
	// judged the Pod without them.
	Skipped []string
	// Message is what the CLI said of the failing rules.
	Message string
	// Output is everything the CLI wrote.
	Output string
}

// New finds the Kyverno CLI in the binaries folder, or says how to build
// it; dir holds its policy and resource files and its home.
func New(dir string) (*CLI, error) {
	bin, err := bins.Path(Version)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		return nil, fmt.Errorf("creating the Kyverno CLI's home: %w", err)
	}
	return &CLI{Bin: bin, dir: dir}, nil
}

// Apply runs kyverno apply with the policy documents on the resource
// documents (a Pod), with registry access (--registry), and reads its
// outcome. An error is a run that could not be judged: no summary line,
// a timeout.
func (c *CLI) Apply(ctx context.Context, policy, resource string) (Outcome, error) {
	pol, err := c.write("policy", policy)
	if err != nil {
		return Outcome{}, err
	}
	res, err := c.write("resource", resource)
	if err != nil {
		return Outcome{}, err
	}
	out, err := c.run(ctx, "apply", pol, "--resource", res, "--registry", "--audit-warn", "--remove-color")
	o, perr := parse(out)
	if perr != nil {
		return o, errors.Join(perr, err)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return o, fmt.Errorf("kyverno apply: %w\n%s", err, out)
	}
	return o, nil
}

// write writes one input file of a run under a fresh name.
func (c *CLI) write(what, body string) (string, error) {
	p := filepath.Join(c.dir, fmt.Sprintf("%s-%d.yaml", what, time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		return "", fmt.Errorf("writing the %s file: %w", what, err)
	}
	return p, nil
}

// summary is the CLI's count line.
var summary = regexp.MustCompile(`pass: (\d+), fail: (\d+), warn: (\d+), error: (\d+), skip: (\d+)`)

// parse reads the CLI's output: the counts, the policies it skipped, and
// the failing rules' messages.
func parse(out string) (Outcome, error) {
	o := Outcome{Output: out}
	m := summary.FindStringSubmatch(out)
	if m == nil {
		return o, fmt.Errorf("kyverno apply printed no summary:\n%s", out)
	}
	for i, p := range []*int{&o.Pass, &o.Fail, &o.Warn, &o.Error, &o.Skip} {
		*p, _ = strconv.Atoi(m[i+1])
	}
	// A policy the CLI skips (invalid: in a cluster Kyverno's webhook
	// would not have admitted it) counts as an error: it refuses nothing.
	o.Skipped = skipped(out)
	o.Refused = o.Fail > 0 || o.Error > len(o.Skipped)
	var msg []string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); len(line) > 4 && line[0] >= '1' && line[0] <= '9' && strings.Contains(line, " - ") {
			msg = append(msg, line)
		}
	}
	o.Message = strings.Join(msg, "\n")
	return o, nil
}

// skipped lists the numbered policies under "Policies Skipped:" and
// "Invalid Policies:".
func skipped(out string) []string {
	var list []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Policies Skipped:"), strings.HasPrefix(line, "Invalid Policies:"):
			in = true
		case strings.HasPrefix(line, "---"):
			in = false
		case in && line != "":
			list = append(list, line)
		}
	}
	return list
}

// run runs the CLI in its folder, offline (see the package comment),
// and returns stdout and stderr together.
func (c *CLI) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir = c.dir
	home := filepath.Join(c.dir, "home")
	cmd.Env = append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "TUF_ROOT="+filepath.Join(home, "tuf"),
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"), "HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("kyverno %s: %w", args[0], ctx.Err())
	}
	return out.String(), err
}
