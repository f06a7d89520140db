//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/render"
)

// fluxCLI is the Flux CLI hack/build-bins.sh builds (target flux).
const fluxCLI = "flux-v2.9.5"

// fluxBuilds are the Flux Kustomizations of testdata/flux-build: the
// file holding each (flux build's --kustomization-file), its name and
// spec.path.
var fluxBuilds = []struct{ file, name, path string }{
	{"clusters/prod/flux-system/gotk-sync.yaml", "flux-system", "clusters/prod"},
	{"clusters/prod/apps.yaml", "apps", "apps/prod"},
}

// TestFluxBuildOracle holds regcheck's images of a repository Flux
// applies (testdata/flux-build: gotk-components.yaml patched from
// outside its folder, an overlay with a patch outside its folder, a
// Flux Kustomization adding a component and a JSON patch and
// substituting postBuild variables) to what the Flux CLI's own build
// renders (flux build kustomization --dry-run): no image missed, none
// extra, each at the line the tree writes it.
func TestFluxBuildOracle(t *testing.T) {
	flux, err := bins.Ensure("..", fluxCLI, "flux")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	copyTree(t, "testdata/flux-build", root, strings.NewReplacer())
	var out [][]byte
	for _, b := range fluxBuilds {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(flux, "build", "kustomization", b.name, "--path", filepath.Join(root, b.path),
			"--kustomization-file", filepath.Join(root, b.file), "--dry-run")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("flux build kustomization %s: %v\n%s", b.name, err, stderr.String())
		}
		out = append(out, stdout.Bytes())
	}
	want, _ := cliImages(t, out)
	imgs, errs := render.Images(root)
	got := map[string][]string{}
	for _, img := range imgs {
		got[img.Ref] = append(got[img.Ref], fmt.Sprintf("%s:%d", img.File, img.Line))
	}
	for _, e := range errs {
		t.Errorf("regcheck: %v", e)
	}
	c := compareWithCLI(t, root, want, got)
	t.Logf("tree=flux-build flux=%d regcheck=%d missed=%d extra=%d wrong-lines=%d (lines checked %d)\nflux     %q\nregcheck %v",
		len(want), len(got), len(c.missed), len(c.extra), len(c.wrong), c.checked, want, got)
	for _, m := range c.missed {
		t.Errorf("missed: flux build renders %s, regcheck does not report it", m)
	}
	for _, e := range c.extra {
		t.Errorf("extra: regcheck reports %s at %v, flux build renders no such image", e, got[e])
	}
	for _, w := range c.wrong {
		t.Errorf("wrong line: %s", w)
	}
}
