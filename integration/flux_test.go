//go:build integration

package integration

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/pin"
	"github.com/regcheck/regcheck/render"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/yamlfile"
)

// fluxRelease is Helm's render of the chart in folder dir with values
// merged as Flux merges a HelmRelease's: each valuesFrom document, then
// spec.values; the images of its containers, sorted.
func fluxRelease(t *testing.T, dir string, values ...string) []string {
	t.Helper()
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	user := map[string]any{}
	for _, v := range values {
		m := map[string]any{}
		if err := sigsyaml.Unmarshal([]byte(v), &m); err != nil {
			t.Fatal(err)
		}
		user = loader.MergeMaps(user, m)
	}
	if err := chartutil.ProcessDependencies(c, user); err != nil {
		t.Fatal(err)
	}
	vals, err := util.ToRenderValues(c, user, common.ReleaseOptions{Name: "r", Namespace: "default", IsInstall: true}, common.DefaultCapabilities.Copy())
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Engine{}.RenderWithContext(context.Background(), c, vals)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		imgs, err := yamlfile.Parse(name, []byte(files[name]))
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range imgs {
			out = append(out, img.Ref)
		}
	}
	return out
}

// releaseValues are the spec.values of the HelmRelease named in file, as
// YAML.
func releaseValues(t *testing.T, file, name string) string {
	t.Helper()
	for _, doc := range strings.Split(readFile(t, file), "\n---\n") {
		var obj struct {
			Metadata struct{ Name string }
			Spec     struct{ Values map[string]any }
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Metadata.Name == name {
			b, _ := sigsyaml.Marshal(obj.Spec.Values)
			return string(b)
		}
	}
	t.Fatalf("%s: no HelmRelease %s", file, name)
	return ""
}

// TestFluxTree: Flux's reference layout (clusters/prod's Kustomizations
// pointing at infrastructure/controllers and apps/web, whose
// kustomization.yaml lists the HelmRepositories, a ConfigMap and the
// HelmReleases). Each HelmRelease is read as one found alone: its chart
// fetched from the HelmRepository the tree defines (an HTTP repository
// on loopback; an OCI one on distribution 3.x), rendered with its
// valuesFrom ConfigMap then its values; the images are those Helm
// renders with the values so merged, each at the HelmRelease's line of
// the key that ends it. The release whose chart is in another Git
// repository is a notice; offline, each chart not fetched is one.
func TestFluxTree(t *testing.T) {
	r := newChartDepsRig(t)
	root := t.TempDir()
	copyTree(t, "testdata/flux", root, r.repl)
	controllers := filepath.Join(root, "infrastructure", "controllers")
	releases := filepath.Join(controllers, "helmrelease.yaml")
	var cm struct{ Data map[string]string }
	if err := sigsyaml.Unmarshal([]byte(readFile(t, filepath.Join(controllers, "values.yaml"))), &cm); err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(
		fluxRelease(t, filepath.Join(r.src, "metrics"), cm.Data["values.yaml"], releaseValues(t, releases, "metrics")),
		fluxRelease(t, filepath.Join(r.src, "local"), releaseValues(t, releases, "agent")))
	slices.Sort(want)
	wantAt := map[string]string{r.host + "/charts/exporter-mirror:1.2": `tag: "1.2"`, r.host + "/charts/agent:2.5": `tag: "2.5"`}
	if !slices.Equal(want, slices.Sorted(maps.Keys(wantAt))) {
		t.Fatalf("helm renders %v, the test expects %v", want, slices.Sorted(maps.Keys(wantAt)))
	}

	imgs, errs := render.Images(root, render.WithFetch(render.Fetch{Dir: t.TempDir(), Helm: r.settings, Insecure: []string{r.host}}))
	var got []string
	for _, img := range imgs {
		got = append(got, img.Ref)
		if at, ok := wantAt[img.Ref]; ok && (img.File != releases || img.Line != lineIn(t, releases, at)) {
			t.Errorf("%s at %s:%d, want %s:%d (%s)", img.Ref, img.File, img.Line, releases, lineIn(t, releases, at), at)
		}
	}
	slices.Sort(got)
	t.Logf("regcheck %v\nhelm     %v", got, want)
	if !slices.Equal(got, want) {
		t.Errorf("regcheck reads %v\nhelm renders   %v", got, want)
	}
	var notes []string
	for _, e := range errs {
		notes = append(notes, e.Error())
	}
	outside := "HelmRelease web/web: chart ./charts/web not rendered; 0 image(s) read from spec.values (the chart's own defaults unknown); ./charts/web of GitRepository other-repo is not in this tree"
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, outside) }) {
		t.Errorf("notices %q: want %q", notes, outside)
	}
	for _, n := range notes {
		if strings.Contains(n, "valuesFrom") || strings.Contains(n, "HelmRelease metrics:") || strings.Contains(n, "HelmRelease agent:") {
			t.Errorf("a notice for a release rendered with its values: %s", n)
		}
	}

	// Offline: nothing fetched, each chart named, none silent.
	imgs, errs = render.Images(root)
	notes = notes[:0]
	for _, e := range errs {
		notes = append(notes, e.Error())
	}
	for _, n := range []string{"unknown); metrics from http://", "unknown); local from oci://", outside} {
		if !slices.ContainsFunc(notes, func(s string) bool { return strings.Contains(s, n) }) {
			t.Errorf("offline: no notice %q in %q", n, notes)
		}
	}
	if len(imgs) != 0 {
		t.Errorf("offline: images %v, want none (the releases' values name no repository)", imgs)
	}
}

// TestFluxTreePin: pin on Flux's reference layout, the charts fetched.
// Each image a HelmRelease listed by a kustomization deploys is pinned at
// the release's spec.values key that ends it (its tag gains the digest
// its registry serves), nothing else in the tree changes, and a second
// run changes nothing.
func TestFluxTreePin(t *testing.T) {
	r := newChartDepsRig(t)
	root := t.TempDir()
	copyTree(t, "testdata/flux", root, r.repl)
	releases := filepath.Join(root, "infrastructure", "controllers", "helmrelease.yaml")
	exporter := pushSingle(t, r.host+"/charts/exporter-mirror:1.2", "exporter 1.2")
	agent := pushSingle(t, r.host+"/charts/agent:2.5", "agent 2.5")
	before := readFile(t, releases)
	want := strings.Replace(strings.Replace(before, `tag: "1.2"`, `tag: "1.2@`+exporter+`"`, 1), `tag: "2.5"`, `tag: "2.5@`+agent+`"`, 1)
	s, err := scan.New()
	if err != nil {
		t.Fatal(err)
	}
	fetch := render.Fetch{Dir: t.TempDir(), Helm: r.settings, Insecure: []string{r.host}}
	for run := 1; run <= 2; run++ {
		rep, err := pin.Run(context.Background(), []string{root}, pin.Config{Scanner: s, Write: true, Fetch: &fetch})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Findings {
			if f.Kind != pinresult.KindLeftOut { // the release whose chart is in another repository
				t.Errorf("run %d: %s %s:%d %s", run, f.Kind, f.File, f.Line, f.Message)
			}
		}
		if got := readFile(t, releases); got != want {
			t.Errorf("run %d: %s:\n%s", run, releases, pinresult.Diff(releases, []byte(want), []byte(got)))
		}
		if n := len(rep.Changes); run == 1 && n != 2 || run == 2 && n != 0 {
			t.Errorf("run %d: changes %v", run, rep.Changes)
		}
	}
}

// TestFluxOCISources: an app-template-style chart reached the ways Flux
// reaches one (testdata/flux-oci): spec.chartRef to an OCIRepository by
// tag (with Helm's layerSelector), by semver range and by digest, a
// HelmRepository of type oci and an HTTP one. Each release renders as
// Helm's engine renders the chart with its values (the chart's own
// exporter image included), each image a release sets at its line; and
// offline, one notice per release naming the chart's URL, its own
// images still read from its values.
func TestFluxOCISources(t *testing.T) {
	r := newChartDepsRig(t)
	root := t.TempDir()
	copyTree(t, "testdata/flux-oci", root, strings.NewReplacer("127.0.0.1:5055", r.host, "http://127.0.0.1:5056", r.repl.Replace("http://127.0.0.1:5056"), "DIGEST", r.appTemplate))
	releases := filepath.Join(root, "apps", "releases.yaml")
	chart := filepath.Join(r.src, "app-template")
	var want []string
	wantAt := map[string]int{}
	for _, name := range []string{"home", "media", "pinned", "tools", "http"} {
		vals := releaseValues(t, releases, name)
		want = append(want, fluxRelease(t, chart, vals)...)
		var v struct {
			Controllers map[string]struct {
				Containers map[string]struct {
					Image struct{ Repository, Tag string }
				}
			}
		}
		if err := sigsyaml.Unmarshal([]byte(vals), &v); err != nil {
			t.Fatal(err)
		}
		img := v.Controllers["main"].Containers["app"].Image
		wantAt[img.Repository+":"+img.Tag] = lineIn(t, releases, fmt.Sprintf("tag: %q", img.Tag))
	}
	slices.Sort(want)
	if len(want) != 10 {
		t.Fatalf("helm renders %v: want each release's image and the chart's exporter", want)
	}

	fetch := render.Fetch{Dir: t.TempDir(), Helm: r.settings, Insecure: []string{r.host}}
	imgs, errs := render.Images(root, render.WithFetch(fetch))
	var got []string
	for _, img := range imgs {
		got = append(got, img.Ref)
		if line, ok := wantAt[img.Ref]; ok && (img.File != releases || img.Line != line) {
			t.Errorf("%s at %s:%d, want %s:%d", img.Ref, img.File, img.Line, releases, line)
		}
	}
	slices.Sort(got)
	t.Logf("regcheck %d %v\nhelm     %d %v", len(got), got, len(want), want)
	if !slices.Equal(got, want) {
		t.Errorf("regcheck reads %v\nhelm renders   %v", got, want)
	}
	for _, e := range errs {
		t.Errorf("fetched: notice %v, want none", e)
	}

	// Offline: one notice per release naming where its chart is, the
	// images its values name still read.
	imgs, errs = render.Images(root)
	for _, name := range []string{"home", "media", "pinned"} {
		n := fmt.Sprintf("HelmRelease %s: chart OCIRepository/app-template", name)
		url := "oci://" + r.host + "/charts/app-template not fetched: offline"
		if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), n) && strings.Contains(e.Error(), url) }) {
			t.Errorf("offline: no notice %q ... %q in %v", n, url, errs)
		}
	}
	if len(errs) != 5 {
		t.Errorf("offline: %d notices, want one per release: %v", len(errs), errs)
	}
	if len(imgs) != 5 {
		t.Errorf("offline: images %v, want the 5 the releases' values name", imgs)
	}
}
