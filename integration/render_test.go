//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/render"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// renderTree copies testdata/render (kustomize base, two overlays and a
// component; a chart with a release's values file; a chart whose template
// joins repository and tag; a plain folder) into a new folder, its images
// named as the fixtures are pushed on host.
func renderTree(t *testing.T, host string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir("testdata/render", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/render", p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(b), "127.0.0.1:5055/shop/", host+"/gc/")), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// registryDigest asks the registry what repo:tag points at.
func registryDigest(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(r)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	return d.Digest.String()
}

// TestRenderScanAndPin: a tree of kustomizations and charts, as people
// keep them, against distribution 3.x holding the fixtures under the
// names the tree uses. scan -f renders it (the base's placeholder is never
// asked for) and gives each image its verdict at the line that sets it;
// pin --write pins each where it is set and leaves templates alone;
// rendered again, every image pinned is at the registry's digest for its
// tag, and a second pin changes nothing.
func TestRenderScanAndPin(t *testing.T) {
	r, _ := startRegistry(t, registry.V3)
	host := r.Host()
	// The tags the overlays and the release move to, and the tools' tag.
	for _, ref := range []string{"gc/app-b:v2", "gc/multiarch:v2", "gc/buildx:v2"} {
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		tag, _ := name.NewTag(host+"/"+ref, name.Insecure)
		if err := remote.Write(tag, img); err != nil {
			t.Fatal(err)
		}
	}
	partial, _ := name.NewTag(host+"/gc/partial:v1", name.Insecure)
	desc, err := remote.Get(partial)
	if err != nil {
		t.Fatal(err)
	}
	debian, _ := name.NewTag(host+"/gc/partial:v1-debian", name.Insecure)
	if err := remote.Tag(debian, desc); err != nil {
		t.Fatal(err)
	}

	dir := renderTree(t, host)
	values := filepath.Join(dir, "charts", "shop") + "=" + filepath.Join(dir, "releases", "shop-prod.yaml")
	at := func(p string, line int) string {
		return fmt.Sprintf("%s:%d", filepath.Join(dir, filepath.FromSlash(p)), line)
	}

	// scan: a verdict for each image rendered, each use where it is set.
	code, out, errs := runCLI(t, "scan", "-f", dir, "--helm-values", values, "-o", "json")
	if code != cli.ExitFindings {
		t.Fatalf("scan: exit %d, want 1 (gone:v1 is broken)\n%s%s", code, out, errs)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	wantUses := map[string][]string{
		"gc/app-a:v1":          {at("plain/cronjob.yaml", 13), at("overlays/prod/kustomization.yaml", 7)},
		"gc/single:v1":         {at("base/deployment.yaml", 16), at("base/deployment.yaml", 16), at("charts/shop/values.yaml", 8), at("charts/worker/templates/job.yaml", 17)},
		"gc/app-b:v1":          {at("base/deployment.yaml", 11)},
		"gc/multiarch:v2":      {at("overlays/staging/kustomization.yaml", 10)},
		"gc/app-b:v2":          {at("overlays/staging/kustomization.yaml", 12)},
		"gc/buildx:v2":         {at("releases/shop-prod.yaml", 3)},
		"gc/gone:v1":           {at("charts/worker/values.yaml", 8)},
		"gc/manifestlist:v1":   {at("charts/worker/values.yaml", 3)},
		"gc/partial:v1-debian": {at("charts/worker/values.yaml", 6)},
	}
	got := map[string][]string{}
	for _, im := range doc.Images {
		ref := strings.TrimPrefix(im.Reference, host+"/")
		want := types.OK
		if ref == "gc/gone:v1" {
			want = types.Broken
		}
		if im.Verdict != want {
			t.Errorf("%s: %s %v, want %s", ref, im.Verdict, im.Findings, want)
		}
		for _, u := range im.Uses {
			got[ref] = append(got[ref], fmt.Sprintf("%s:%d", u.File, u.Line))
		}
	}
	if len(got) != len(wantUses) {
		t.Errorf("scanned %v, want %v", got, wantUses)
	}
	for ref, want := range wantUses {
		if !sameSet(got[ref], want) {
			t.Errorf("%s used at %v, want %v", ref, got[ref], want)
		}
	}
	for _, rc := range doc.Summary.RequestLog {
		if rc.Host != host {
			t.Errorf("a request to %s (the placeholder scanned?): %+v", rc.Host, rc)
		}
	}
	if len(doc.InputErrors) != 0 {
		t.Errorf("input errors: %v", doc.InputErrors)
	}

	// pin: a preview changes nothing; --write pins where each is set.
	before := snapshot(t, dir)
	code, out, errs = runCLI(t, "pin", "--helm-values", values, dir)
	if code != cli.ExitFindings || fmt.Sprint(snapshot(t, dir)) != fmt.Sprint(before) {
		t.Fatalf("pin preview: exit %d, or files changed\n%s%s", code, out, errs)
	}
	for _, want := range []string{"--- a/" + filepath.Join(dir, "overlays", "prod", "kustomization.yaml"), "+    digest: sha256:", "+  digest: sha256:",
		"+  tag: v1@sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the preview lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		at("charts/worker/values.yaml", 8) + ": broken: refusing to pin " + host + "/gc/gone:v1",
		at("charts/worker/values.yaml", 6) + ": not-edited: " + host + "/gc/partial:v1-debian not pinned",
		"no single values key sets it",
		at("charts/worker/templates/job.yaml", 17) + ": not-edited: " + host + "/gc/single:v1 not pinned",
		"templates are never edited",
		"would pin 9 references in 7 of ",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("pin's notes lack %q:\n%s", want, errs)
		}
	}
	code, out, errs = runCLI(t, "pin", "--write", "--helm-values", values, dir)
	if code != cli.ExitFindings {
		t.Fatalf("pin --write: exit %d\n%s%s", code, out, errs)
	}
	after := snapshot(t, dir)
	for p, b := range before {
		if strings.Contains(p, string(filepath.Separator)+"templates"+string(filepath.Separator)) && after[p] != b {
			t.Errorf("pin edited the template %s", p)
		}
	}
	// Every line pin changed is one that sets an image; comments stay.
	for p, b := range after {
		old := strings.Split(before[p], "\n")
		for i, line := range strings.Split(b, "\n") {
			if !slices.Contains(old, line) && !strings.Contains(line, "sha256:") {
				t.Errorf("%s:%d: %q is new and pins nothing", p, i+1, line)
			}
		}
	}

	// Rendered again, each image pinned is at its tag's digest.
	pinned := 0
	tr := render.Find(dir, render.WithValues(render.ParseValuesFile(values)))
	for _, a := range tr.Apps {
		for _, u := range a.Uses {
			ref, err := imageref.Parse(u.Ref)
			if err != nil {
				t.Fatal(err)
			}
			switch u.Container {
			case "tools", "shell", "init": // not pinnable; broken
				if ref.Pinned() {
					t.Errorf("%s %s: %s pinned", a.Dir, u.Container, u.Ref)
				}
				continue
			}
			if want := registryDigest(t, ref.Repo+":"+ref.Tag); ref.Digest != want {
				t.Errorf("%s %s: rendered %s, the registry has %s for its tag", a.Dir, u.Container, u.Ref, want)
			}
			pinned++
		}
	}
	if pinned != 9 {
		t.Errorf("%d rendered images pinned, want 9", pinned)
	}

	// Again: nothing to do; --check names what is left, where it is set;
	// the pinned tree scans as before.
	code, out, errs = runCLI(t, "pin", "--write", "--helm-values", values, dir)
	if code != cli.ExitFindings || out != "" || fmt.Sprint(snapshot(t, dir)) != fmt.Sprint(after) {
		t.Errorf("a second pin --write: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "pin", "--check", "--helm-values", values, dir)
	if code != cli.ExitFindings || strings.Count(out, "unpinned") != 3 || !strings.Contains(out, at("charts/worker/templates/job.yaml", 17)+": unpinned:") {
		t.Errorf("pin --check: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "scan", "-f", dir, "--helm-values", values, "-o", "json")
	if code != cli.ExitFindings || json.Unmarshal([]byte(out), &doc) != nil || doc.Summary.Verdicts[types.OK] != 9 || doc.Summary.Verdicts[types.Broken] != 1 {
		t.Errorf("scan after pin: exit %d, verdicts %v\n%s", code, doc.Summary.Verdicts, errs)
	}
}

// TestRenderUsage: --helm-values goes with the files it renders.
func TestRenderUsage(t *testing.T) {
	dir := renderTree(t, "127.0.0.1:1")
	for _, args := range [][]string{
		{"scan", "--cluster", "--helm-values", filepath.Join(dir, "releases", "shop-prod.yaml")},
		{"scan", "nginx", "--helm-values", filepath.Join(dir, "releases", "shop-prod.yaml")},
		{"scan", "-f", dir, "--helm-values", filepath.Join(dir, "missing.yaml")},
		{"scan", "-f", dir, "--helm-values", filepath.Join(dir, "plain") + "=" + filepath.Join(dir, "missing.yaml")},
		{"pin", "--check", "--helm-values", filepath.Join(dir, "missing.yaml"), dir},
	} {
		if code, out, errs := runCLI(t, args...); code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want 2\n%s%s", args, code, out, errs)
		}
	}
}
