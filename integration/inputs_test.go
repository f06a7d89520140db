//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// rolloutYAML is an Argo Rollout scaled to zero whose init container
// names a tag the registry never had.
func rolloutYAML(good, missing string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: shop, namespace: prod}
spec:
  replicas: 0
  template:
    spec:
      initContainers:
      - name: migrate
        image: ` + missing + `
      containers:
      - name: web
        image: ` + good + `
`
}

// taskYAML is a Tekton Task with a step and a sidecar.
func taskYAML(step, sidecar string) string {
	return `apiVersion: tekton.dev/v1
kind: Task
metadata: {name: build, namespace: ci}
spec:
  steps:
  - name: compile
    image: ` + step + `
  sidecars:
  - name: cache
    image: ` + sidecar + `
`
}

// inputsUseOf is the first use of im of kind.
func inputsUseOf(im *types.Image, kind string) *types.Use {
	for i := range im.Uses {
		if im.Uses[i].Kind == kind {
			return &im.Uses[i]
		}
	}
	return nil
}

// TestInputsFiles: a Rollout and a Tekton Task in files, against a real
// docker/distribution 2.8.3. scan finds the tag the registry never had,
// broken, at its kind and line; pin rewrites the others to @digest, and
// again changes nothing.
func TestInputsFiles(t *testing.T) {
	reg, _ := startRegistry(t, registry.V2)
	host := reg.Host()
	good := host + "/c/web:v1"
	tool := host + "/c/go:1.23"
	missing := host + "/c/migrate:never-pushed"
	webDigest := pushSingle(t, good, "web v1")
	toolDigest := pushSingle(t, tool, "go 1.23")

	dir := t.TempDir()
	writeFile(t, dir, "rollout.yaml", rolloutYAML(good, missing))
	writeFile(t, dir, "task.yaml", taskYAML(tool, good))
	doc, code, _ := scanCLI(t, "-f", dir)
	got := byReference(doc)
	im := got[missing]
	if im == nil || im.Verdict != types.Broken {
		t.Fatalf("%s: %+v, want broken", missing, im)
	}
	if u := inputsUseOf(im, "Rollout"); u == nil || u.Line != 10 || u.Name != "shop" || u.Container != "migrate" || !strings.HasSuffix(u.File, "rollout.yaml") {
		t.Errorf("use of %s: %+v, want rollout.yaml:10 Rollout shop container migrate", missing, im.Uses)
	}
	for ref, kinds := range map[string][]string{good: {"Rollout", "Task"}, tool: {"Task"}} {
		im := got[ref]
		if im == nil || im.Verdict == types.Broken || im.Verdict == types.Unknown {
			t.Errorf("%s: %+v, want a verdict of a reference that is there", ref, im)
			continue
		}
		for _, k := range kinds {
			if inputsUseOf(im, k) == nil {
				t.Errorf("%s: no use of kind %s in %+v", ref, k, im.Uses)
			}
		}
	}
	if code != 1 {
		t.Errorf("scan exit %d, want 1 (a broken image)", code)
	}

	// pin: the files without the missing image, pinned in place, twice.
	pinDir := t.TempDir()
	rollout := writeFile(t, pinDir, "rollout.yaml", rolloutYAML(good, good))
	task := writeFile(t, pinDir, "task.yaml", taskYAML(tool, good))
	if code, out, errs := runCLI(t, "pin", "--write", pinDir); code != 0 {
		t.Fatalf("pin: exit %d\n%s%s", code, out, errs)
	}
	wantRollout := rolloutYAML(good+"@"+webDigest, good+"@"+webDigest)
	wantTask := taskYAML(tool+"@"+toolDigest, good+"@"+webDigest)
	if got := readFile(t, rollout); got != wantRollout {
		t.Errorf("pinned Rollout:\n%s\nwant:\n%s", got, wantRollout)
	}
	if got := readFile(t, task); got != wantTask {
		t.Errorf("pinned Task:\n%s\nwant:\n%s", got, wantTask)
	}
	if code, out, errs := runCLI(t, "pin", "--write", pinDir); code != 0 || readFile(t, rollout) != wantRollout || readFile(t, task) != wantTask {
		t.Errorf("second pin: exit %d, files changed\n%s%s", code, out, errs)
	}
}

// helmReleaseYAML is a Flux HelmRelease of a chart from a Helm
// repository (not rendered) whose values set the image.
func helmReleaseYAML(repo, tag string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: prod}
spec:
  chart:
    spec:
      chart: web
      sourceRef: {kind: HelmRepository, name: charts}
  values:
    image:
      repository: ` + repo + `
      tag: ` + tag + `
`
}

// TestInputsHelmRelease: a HelmRelease whose chart is not in the tree.
// scan reads its values' image by the chart conventions, at the tag's
// line, with a notice that the chart was not rendered; pin pins the tag
// in place (tag@digest), and a second pin changes nothing.
func TestInputsHelmRelease(t *testing.T) {
	reg, _ := startRegistry(t, registry.V2)
	host := reg.Host()
	digest := pushSingle(t, host+"/c/web:v1", "web v1")
	dir := t.TempDir()
	file := writeFile(t, dir, "release.yaml", helmReleaseYAML(host+"/c/web", "v1"))
	doc, code, _ := scanCLI(t, "-f", dir)
	im := byReference(doc)[host+"/c/web:v1"]
	if im == nil || im.Verdict == types.Broken || im.Verdict == types.Unknown {
		t.Fatalf("%s/c/web:v1: %+v, want read and found", host, im)
	}
	if u := inputsUseOf(im, "HelmRelease"); u == nil || u.Line != 12 || u.Name != "web" {
		t.Errorf("uses %+v, want HelmRelease web at line 12 (the tag)", im.Uses)
	}
	notice := false
	for _, ie := range doc.InputErrors {
		notice = notice || ie.Notice && strings.Contains(ie.Message, "chart web not rendered")
	}
	if !notice || code == 3 {
		t.Errorf("exit %d, input errors %+v: want a notice that the chart was not rendered, and a complete run", code, doc.InputErrors)
	}
	if code, out, errs := runCLI(t, "pin", "--write", dir); code != 0 {
		t.Fatalf("pin: exit %d\n%s%s", code, out, errs)
	}
	want := helmReleaseYAML(host+"/c/web", "v1@"+digest)
	if got := readFile(t, file); got != want {
		t.Errorf("pinned:\n%s\nwant:\n%s", got, want)
	}
	if code, out, errs := runCLI(t, "pin", "--write", dir); code != 0 || readFile(t, file) != want {
		t.Errorf("second pin: exit %d, file changed\n%s%s", code, out, errs)
	}
}

// TestInputsHelmReleaseInTree: a GitOps tree whose HelmRelease deploys a
// chart of the same tree. scan renders the chart with the release's
// values: the tag the release sets, never pushed, is broken at the
// release's line; the chart's own default, pushed, is found.
func TestInputsHelmReleaseInTree(t *testing.T) {
	reg, _ := startRegistry(t, registry.V2)
	host := reg.Host()
	pushSingle(t, host+"/c/app:1.0", "app 1.0")
	root := t.TempDir()
	for name, content := range map[string]string{
		"charts/app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"charts/app/values.yaml": "image:\n  repository: " + host + "/c/app\n  tag: \"1.0\"\n",
		"charts/app/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n" +
			"        - name: app\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
		"clusters/prod/app.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: prod}\nspec:\n" +
			"  chart:\n    spec:\n      chart: ./charts/app\n      sourceRef: {kind: GitRepository, name: repo}\n" +
			"  values:\n    image:\n      tag: \"2.0\"\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, root, name, content)
	}
	doc, code, _ := scanCLI(t, "-f", root)
	got := byReference(doc)
	im := got[host+"/c/app:2.0"]
	if im == nil || im.Verdict != types.Broken {
		t.Fatalf("%s/c/app:2.0: %+v, want broken (rendered with the release's values)", host, im)
	}
	if u := im.Uses[0]; !strings.HasSuffix(u.File, filepath.Join("clusters", "prod", "app.yaml")) || u.Line != 11 || u.Kind != "Deployment" {
		t.Errorf("use %+v, want the Deployment rendered, set at clusters/prod/app.yaml:11", u)
	}
	if im := got[host+"/c/app:1.0"]; im == nil || im.Verdict == types.Broken || im.Verdict == types.Unknown {
		t.Errorf("%s/c/app:1.0 (the chart's default): %+v, want found", host, im)
	}
	for _, ie := range doc.InputErrors {
		if strings.Contains(ie.Message, "not rendered") {
			t.Errorf("a notice that the chart was not rendered, when it was: %+v", ie)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// TestInputsCluster: a real kube-apiserver with CRDs of our own for Argo
// Rollouts and Tekton Tasks; a Rollout scaled to zero (no pod, no
// ReplicaSet) and a Task. scan --cluster covers both as template entries,
// finding the Rollout's missing tag broken, as for a Deployment.
func TestInputsCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx)
	if err := kubeapi.ApplyCRDs(ctx, kc.Config, filepath.Join("testdata", "inputs", "crds.yaml")); err != nil {
		t.Fatal(err)
	}
	reg, _ := startRegistry(t, registry.V2)
	host := reg.Host()
	good, tool, missing := host+"/c/web:v1", host+"/c/go:1.23", host+"/c/migrate:never-pushed"
	pushSingle(t, good, "web v1")
	pushSingle(t, tool, "go 1.23")
	for _, ns := range []string{"prod", "ci"} {
		namespaceWithSA(t, ctx, cs, ns)
	}
	dyn, err := dynamic.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	inputsCreate(t, ctx, dyn, schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}, rolloutYAML(good, missing))
	inputsCreate(t, ctx, dyn, schema.GroupVersionResource{Group: "tekton.dev", Version: "v1", Resource: "tasks"}, taskYAML(tool, good))

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "crds", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "scan", "--log-level", "info", "--cluster", "-A", "--kubeconfig", kubeconfig, "-o", "json")
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d, output not JSON: %v\n%s\n%s", code, err, out, errs)
	}
	got := byReference(doc)
	im := got[missing]
	if im == nil || im.Verdict != types.Broken {
		t.Fatalf("%s: %+v, want broken (the Rollout scaled to zero is covered)\n%s", missing, im, errs)
	}
	if u := inputsUseOf(im, "Rollout"); u == nil || u.Namespace != "prod" || u.Name != "shop" {
		t.Errorf("use of %s: %+v, want Rollout prod/shop", missing, im.Uses)
	}
	if im := got[tool]; im == nil || inputsUseOf(im, "Task") == nil {
		t.Errorf("%s: %+v, want a use by Task ci/build", tool, im)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, errs)
	}
	if !strings.Contains(errs, "workload kinds not served") {
		t.Errorf("the kinds whose CRDs are not installed are not said to be skipped:\n%s", errs)
	}
}

// inputsCreate creates the object of manifest through the dynamic client.
func inputsCreate(t *testing.T, ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, manifest string) {
	t.Helper()
	var u unstructured.Unstructured
	if err := inputsUnstructured(manifest, &u); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, &u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", gvr.Resource, u.GetName(), err)
	}
}

func inputsUnstructured(manifest string, u *unstructured.Unstructured) error {
	return sigsyaml.Unmarshal([]byte(manifest), &u.Object)
}
