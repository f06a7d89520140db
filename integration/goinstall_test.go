//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

const modulePath = "github.com/regcheck/regcheck"

// writeModuleProxy writes a file:// GOPROXY in a new folder serving this
// repository's work tree, committed as it is, as modulePath@version: the
// list, .info, .mod and the zip (golang.org/x/mod/zip, as a tag would
// give it). It returns the folder.
func writeModuleProxy(t *testing.T, version string) string {
	t.Helper()
	src, rev := snapshotRepo(t)
	proxy := t.TempDir()
	dir := filepath.Join(proxy, modulePath, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var zip bytes.Buffer
	if err := modzip.CreateFromVCS(&zip, module.Version{Path: modulePath, Version: version}, src, rev, ""); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": "2026-12-03T00:00:00Z"})
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod, version + ".zip": zip.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("module proxy: %s@%s, zip %.1f MiB", modulePath, version, float64(zip.Len())/(1<<20))
	return proxy
}

// testGoInstall runs go install github.com/regcheck/regcheck/cmd/regcheck@VERSION
// into an empty GOMODCACHE and GOBIN, with no network: GOPROXY is a file://
// proxy serving this module (writeModuleProxy), then one over this
// machine's module cache (its cache/download) for the dependencies; an
// HTTP(S) proxy that refuses every connection stands in for the network.
// GOSUMDB=off, for this test only: go install …@version verifies each
// module it downloads into the empty cache with the checksum database
// (sum.golang.org), which is network; this module's version is published
// nowhere anyway. The
// build flags are make dist's (-trimpath, its tags, CGO_ENABLED=0) so that
// the build cache TestDist warmed serves the compiles. The binary must
// print the version go install recorded.
func testGoInstall(t *testing.T) {
	proxy := writeModuleProxy(t, distVersion)
	gomodcache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	tmp := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "install", modulePath+"/cmd/regcheck@"+distVersion)
	cmd.Dir = tmp // outside any module
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+proxy+",file://"+filepath.Join(gomodcache, "cache", "download"),
		"GOMODCACHE="+filepath.Join(tmp, "modcache"), "GOBIN="+filepath.Join(tmp, "bin"),
		"GOSUMDB=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0",
		"GOFLAGS=-modcacherw -trimpath -tags=kustomize_disable_go_plugin_support",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=", "GIT_ALLOW_PROTOCOL=file")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("go install %s/cmd/regcheck@%s in %s\n%s", modulePath, distVersion, time.Since(start).Round(100*time.Millisecond), out)
	if err != nil {
		t.Fatalf("go install: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "modcache", modulePath+"@"+distVersion, "go.mod")); err != nil {
		t.Errorf("the module is not in the new module cache: %v", err)
	}
	bin := filepath.Join(tmp, "bin", "regcheck")
	got, err := exec.CommandContext(t.Context(), bin, "--version").CombinedOutput()
	t.Logf("regcheck --version: %s", strings.TrimSpace(string(got)))
	if err != nil || !strings.HasPrefix(string(got), "regcheck "+distVersion) {
		t.Errorf("%s --version: %v, printed %q, want regcheck %s", bin, err, got, distVersion)
	}
}
