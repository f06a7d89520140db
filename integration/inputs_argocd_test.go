//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// TestInputsApplicationKustomize: a GitOps tree whose Argo CD Application
// deploys a kustomization of the same tree with kustomize.images, against
// a real docker/distribution 2.8.3. scan renders the kustomization with
// the Application's entries: the tag the Application sets, never pushed,
// is broken at that entry's line, on the Deployment rendered; the
// kustomization's own tag and the image no entry changes are found.
func TestInputsApplicationKustomize(t *testing.T) {
	reg, _ := startRegistry(t, registry.V2)
	host := reg.Host()
	pushSingle(t, host+"/c/web:1.0", "web 1.0")
	pushSingle(t, host+"/c/proxy:2.0", "proxy 2.0")
	root := t.TempDir()
	for name, content := range map[string]string{
		"apps/web/kustomization.yaml": "resources:\n- deploy.yaml\nimages:\n- name: " + host + "/c/web\n  newTag: \"1.0\"\n",
		"apps/web/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n" +
			"      - name: app\n        image: " + host + "/c/web:0.9\n      - name: proxy\n        image: " + host + "/c/proxy:2.0\n",
		"clusters/prod/app.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n" +
			"  source:\n    repoURL: https://git.example.com/repo.git\n    path: apps/web\n    kustomize:\n      images:\n" +
			"      - " + host + "/c/web:3.0\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, root, name, content)
	}
	doc, code, _ := scanCLI(t, "-f", root)
	got := byReference(doc)
	im := got[host+"/c/web:3.0"]
	if im == nil || im.Verdict != types.Broken {
		t.Fatalf("%s/c/web:3.0: %+v, want broken (rendered with the Application's kustomize.images)", host, im)
	}
	if u := im.Uses[0]; len(im.Uses) != 1 || !strings.HasSuffix(u.File, filepath.Join("clusters", "prod", "app.yaml")) || u.Line != 10 || u.Kind != "Deployment" || u.Name != "web" {
		t.Errorf("uses %+v, want one: the Deployment web rendered, set at clusters/prod/app.yaml:10", im.Uses)
	}
	for _, ref := range []string{host + "/c/web:1.0", host + "/c/proxy:2.0"} {
		if im := got[ref]; im == nil || im.Verdict == types.Broken || im.Verdict == types.Unknown {
			t.Errorf("%s: %+v, want found", ref, im)
		} else if len(im.Uses) != 1 {
			t.Errorf("%s: uses %+v, want one (the tree's render and the Application's are the same use)", ref, im.Uses)
		}
	}
	for _, ie := range doc.InputErrors {
		if strings.Contains(ie.Message, "not rendered") {
			t.Errorf("a notice that the path was not rendered, when it was: %+v", ie)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}

	// pin: once the tag is pushed, the Application's entry gains its
	// digest in place (the Deployment and the kustomization are pinned
	// where they set theirs).
	dgst := pushSingle(t, host+"/c/web:3.0", "web 3.0")
	if code, out, errs := runCLI(t, "pin", "--write", root); code != 0 {
		t.Fatalf("pin: exit %d\n%s%s", code, out, errs)
	}
	app := readFile(t, filepath.Join(root, "clusters", "prod", "app.yaml"))
	if want := "      - " + host + "/c/web:3.0@" + dgst + "\n"; !strings.Contains(app, want) {
		t.Errorf("pinned Application:\n%s\nwant the line %q", app, want)
	}
	doc, code, _ = scanCLI(t, "-f", root)
	if im := byReference(doc)[host+"/c/web:3.0@"+dgst]; im == nil || im.Verdict != types.OK || code != 0 {
		t.Errorf("scan after pin: exit %d, %s/c/web:3.0@%s: %+v", code, host, dgst, im)
	}
}
