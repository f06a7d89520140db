//go:build integration

package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// TestPinPlatforms: on the real registry 2.8.3, pin --platform names the
// platforms the pods run on. A tag on an index pins the index, never a
// child. An amd64-only manifest pinned for arm64 (or for amd64 and arm64,
// comma-separated) is refused, the file left as is, exit 1: the refusal
// names the manifest's platform, the pods' and the index to pin instead
// when a tag reaches one listing it. Pinned for amd64, it is pinned.
func TestPinPlatforms(t *testing.T) {
	r, imgs := startRegistry(t, registry.V2)
	digests := fixtureDigests(imgs)
	var amd64Child string
	for _, im := range imgs {
		if im.Name == "partial" {
			amd64Child = im.Children[0].Digest.String()
		}
	}
	host := r.Host() + "/gc/"
	dir := t.TempDir()
	multi := writeFile(t, dir, "multi.yaml", deployment("multi", host+"multiarch:v1", ""))
	child := writeFile(t, dir, "child.yaml", deployment("child", host+"partial:v1-amd64", ""))
	solo := writeFile(t, dir, "solo.yaml", deployment("solo", host+"app-a:v1", ""))

	for _, platforms := range []string{"linux/arm64", "linux/amd64,linux/arm64"} {
		code, out, errs := runCLI(t, "pin", "--write", "--platform", platforms, dir)
		if code != cli.ExitFindings {
			t.Fatalf("--platform %s: exit %d, want 1\n%s%s", platforms, code, out, errs)
		}
		if got, want := readFile(t, multi), deployment("multi", host+"multiarch:v1@"+digests["multiarch"], ""); got != want {
			t.Errorf("--platform %s: multi.yaml:\n%s\nwant the index digest:\n%s", platforms, got, want)
		}
		if readFile(t, child) != deployment("child", host+"partial:v1-amd64", "") || readFile(t, solo) != deployment("solo", host+"app-a:v1", "") {
			t.Errorf("--platform %s: a single amd64 manifest was pinned:\n%s%s", platforms, readFile(t, child), readFile(t, solo))
		}
		for _, want := range []string{
			child + ":10: platform-mismatch: refusing to pin " + host + "partial:v1-amd64 to " + amd64Child,
			"single-platform manifest for linux/amd64; the pods may run on " + strings.ReplaceAll(platforms, ",", ", ") + ": linux/arm64 cannot run it",
			"the index " + digests["partial"] + " lists it: pin " + host + "partial@" + digests["partial"] + " instead",
			solo + ":10: platform-mismatch: refusing to pin " + host + "app-a:v1 to " + digests["app-a"],
			"no index of " + host + "app-a the registry's tags reach lists it",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("--platform %s: stderr lacks %q:\n%s", platforms, want, errs)
			}
		}
	}

	code, out, errs := runCLI(t, "pin", "--write", "--platform", "linux/amd64", dir)
	if code != cli.ExitClean {
		t.Fatalf("--platform linux/amd64: exit %d, want 0\n%s%s", code, out, errs)
	}
	if got := readFile(t, child); !strings.Contains(got, "partial:v1-amd64@"+amd64Child) {
		t.Errorf("the amd64 child was not pinned for amd64 pods:\n%s", got)
	}
	if got := readFile(t, filepath.Join(dir, "solo.yaml")); !strings.Contains(got, "app-a:v1@"+digests["app-a"]) {
		t.Errorf("app-a was not pinned for amd64 pods:\n%s", got)
	}
}
