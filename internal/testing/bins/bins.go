// Package bins locates the real binaries the demo and the end-to-end
// tests run (registries, etcd, kube-apiserver), as hack/build-bins.sh
// builds them: in a cache folder outside the clone, named by version.
package bins

import (
	"fmt"
	"os"
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
