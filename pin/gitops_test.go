package pin

import (
	stdctx "context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/results/pinresult"
)

// gitopsTree is a Flux and Argo CD layout: a kustomization lists two
// HelmReleases (in one file) and an Application of the chart in the
// tree, a HelmRelease of a chart from a Helm repository (read by the
// chart conventions) and a Deployment. HOST is the registry.
var gitopsTree = map[string]string{
	"charts/app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
	"charts/app/values.yaml": "image:\n  repository: HOST/app\n  tag: \"1.0\"\nsidecar:\n  image: HOST/side:1.0\n",
	"charts/app/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n" +
		"        - name: app\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n" +
		"        - name: side\n          image: {{ .Values.sidecar.image }}\n",
	"apps/web/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: web\nresources:\n- release.yaml\n- app.yaml\n- ext.yaml\n- deploy.yaml\n",
	"apps/web/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
spec:
  chart:
    spec:
      chart: ./charts/app
      sourceRef: {kind: GitRepository, name: flux-system}
  values:
    image:
      tag: "2.0"   # the release's own
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: api
spec:
  chart:
    spec:
      chart: ./charts/app
      sourceRef: {kind: GitRepository, name: flux-system}
  values:
    image:
      repository: HOST/api
      tag: "1.0"
`,
	"apps/web/app.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: argo
spec:
  sources:
    - repoURL: https://git.example.com/repo.git
      path: charts/app
      helm:
        values: |
          image:
            tag: "3.0"
`,
	"apps/web/ext.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ext
spec:
  chart:
    spec:
      chart: ext
      sourceRef: {kind: HelmRepository, name: charts}
  values:
    image:
      repository: HOST/ext
      tag: "1.0"
`,
	"apps/web/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: plain\nspec:\n  template:\n    spec:\n      containers:\n      - name: plain\n        image: HOST/plain:1.0\n",
}

// TestRunGitOpsInKustomization: each image a GitOps object listed by a
// kustomization deploys is pinned where it is set: at the key of the
// HelmRelease's spec.values or the Application's helm.values that ends
// it, in the chart's values.yaml for what the chart's defaults set, at
// the release's values read by the conventions when its chart is not in
// the tree. A second run changes nothing.
func TestRunGitOpsInKustomization(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	d := map[string]string{}
	for _, ref := range []string{"app:1.0", "app:2.0", "app:3.0", "side:1.0", "api:1.0", "ext:1.0", "plain:1.0"} {
		d[ref] = pushImage(t, host+"/"+ref, ref)
	}
	dir := t.TempDir()
	for name, content := range gitopsTree {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "HOST", host)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{}
	for name, content := range gitopsTree {
		want[name] = strings.ReplaceAll(content, "HOST", host)
	}
	pinAt := func(file, old, new string) {
		if !strings.Contains(want[file], old) {
			t.Fatalf("%s has no %q", file, old)
		}
		want[file] = strings.Replace(want[file], old, new, 1)
	}
	pinAt("charts/app/values.yaml", `tag: "1.0"`, `tag: "1.0@`+d["app:1.0"]+`"`)
	pinAt("charts/app/values.yaml", "side:1.0", "side:1.0@"+d["side:1.0"])
	pinAt("apps/web/release.yaml", `tag: "2.0"`, `tag: "2.0@`+d["app:2.0"]+`"`)
	pinAt("apps/web/release.yaml", `tag: "1.0"`, `tag: "1.0@`+d["api:1.0"]+`"`)
	pinAt("apps/web/app.yaml", `tag: "3.0"`, `tag: "3.0@`+d["app:3.0"]+`"`)
	pinAt("apps/web/ext.yaml", `tag: "1.0"`, `tag: "1.0@`+d["ext:1.0"]+`"`)
	pinAt("apps/web/deploy.yaml", "plain:1.0", "plain:1.0@"+d["plain:1.0"])

	check, err := Run(stdctx.Background(), []string{dir}, Config{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	unpinned := map[string]bool{}
	for _, f := range check.Findings {
		if f.Kind == pinresult.KindUnpinned {
			rel, _ := filepath.Rel(dir, f.File)
			unpinned[filepath.ToSlash(rel)] = true
		}
	}
	for name := range want {
		if want[name] != strings.ReplaceAll(gitopsTree[name], "HOST", host) && !unpinned[name] {
			t.Errorf("pin --check: nothing unpinned in %s (findings %v)", name, check.Findings)
		}
	}

	for run := 1; run <= 2; run++ {
		r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Write: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Findings {
			t.Errorf("run %d: finding %s %s:%d %s", run, f.Kind, f.File, f.Line, f.Message)
		}
		if run == 2 && len(r.Changes) != 0 {
			t.Errorf("second run: changes %v, want none", r.Changes)
		}
		for name, w := range want {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != w {
				t.Errorf("run %d: %s:\n%s", run, name, pinresult.Diff(name, []byte(w), b))
			}
		}
	}
}
