// Package bins locates the real binaries the demo and the end-to-end
// tests run (registries, etcd, kube-apiserver, cosign, the Kyverno CLI and
// policy-tester, ...), as hack/build-bins.sh builds them: in a cache
// folder outside the clone, named by version.
package bins

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Dir is where hack/build-bins.sh puts the binaries: $REGCHECK_BIN, else
// $XDG_CACHE_HOME/regcheck/bin, else ~/.cache/regcheck/bin.
func Dir() string {
	if d := os.Getenv("REGCHECK_BIN"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "regcheck", "bin")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "regcheck", "bin")
}

// Path returns the path of a binary in Dir ("registry-v2.8.3"), or an error
// saying how to build it.
func Path(name string) (string, error) {
	p := filepath.Join(Dir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found (run hack/build-bins.sh, or make test): %w", p, err)
	}
	return p, nil
}

// Ensure returns the path of a binary in Dir, building it first with
// hack/build-bins.sh target (from the repository at top) only when it is
// not there: a binary already built is never rebuilt.
func Ensure(top, name, target string) (string, error) {
	if p, err := Path(name); err == nil {
		return p, nil
	}
	cmd := exec.Command(filepath.Join(top, "hack", "build-bins.sh"), target)
	cmd.Env = append(os.Environ(), "REGCHECK_BIN="+Dir())
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("hack/build-bins.sh %s: %w\n%s", target, err, out)
	}
	return Path(name)
}

// TB is the part of testing.TB that Require uses.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Require ends a test that cannot find its binary (err from Path, or a
// finder built on it): a failure when the run must test everything (CI
// set, or REGCHECK_REQUIRE_BINS, which make test sets), else a skip;
// either says which make target builds it.
func Require(t TB, err error, target string) {
	if err == nil {
		return
	}
	t.Helper()
	if os.Getenv("CI") != "" || os.Getenv("REGCHECK_REQUIRE_BINS") != "" {
		t.Fatalf("%v: build it with hack/build-bins.sh %s (make test builds every binary)", err, target)
	}
	t.Skipf("%v: build it with hack/build-bins.sh %s, or run make test", err, target)
}
