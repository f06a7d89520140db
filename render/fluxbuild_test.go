package render

import "testing"

// fluxTree is a repository Flux applies: a Flux Kustomization whose
// spec.path is an overlay that patches its base with a file outside its
// folder, adding a component and a JSON patch, and substituting
// variables from postBuild.substitute and a ConfigMap of the tree.
var fluxTree = map[string]string{
	"clusters/prod/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/prod
  sourceRef: {kind: GitRepository, name: flux-system}
  components:
  - ../../components/monitoring
  patches:
  - target: {kind: Deployment, name: web}
    patch: |
      - op: add
        path: /spec/template/spec/containers/-
        value: {name: proxy, image: reg.example.com/proxy:2}
  postBuild:
    substitute:
      TAG: "1.4"
    substituteFrom:
    - kind: ConfigMap
      name: cluster-vars
`,
	"clusters/prod/vars.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata:\n  REGISTRY: reg.example.com\n  TAG: \"0.1\"\n",
	"apps/prod/kustomization.yaml":             "resources:\n- ../base\npatches:\n- path: ../../patches/web-log.yaml\n",
	"apps/base/kustomization.yaml":             "resources:\n- web.yaml\n",
	"apps/base/web.yaml":                       deployment("web", "${REGISTRY}/web:${TAG}"),
	"patches/web-log.yaml":                     "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: log\n        image: reg.example.com/log:1\n",
	"components/monitoring/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n- exporter.yaml\n",
	"components/monitoring/exporter.yaml":      deployment("exporter", "reg.example.com/exporter:${EXPORTER_TAG:=0.9}"),
}

// TestFindFluxBuild: a kustomization a Flux Kustomization builds is
// rendered as kustomize-controller builds it: its spec.components and
// spec.patches added, a patch outside the overlay's folder loaded (the
// repository, not the folder, bounds loading), postBuild variables
// substituted (in-line ones over the ConfigMap's, a default where none
// is set).
func TestFindFluxBuild(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, fluxTree)
	tr := Find(dir)
	check(t, "uses", under(dir, uses(tr)), []string{
		"D/patches/web-log.yaml:9 Deployment /web log reg.example.com/log:1 literal set-ref",
		"D/apps/base/web.yaml:10 Deployment /web c0 reg.example.com/web:1.4 literal (set through a Flux postBuild substitution (${REGISTRY}/web:${TAG}): pin it where the variable is set)",
		"D/clusters/prod/apps.yaml:15 Deployment /web proxy reg.example.com/proxy:2 untraced (set by a patch of a Flux Kustomization (spec.patches): pin it there by hand)",
		"D/components/monitoring/exporter.yaml:10 Deployment /exporter c0 reg.example.com/exporter:0.9 literal (set through a Flux postBuild substitution (reg.example.com/exporter:${EXPORTER_TAG:=0.9}): pin it where the variable is set)",
	})
	check(t, "errors", under(dir, errs(tr)), nil)
	// The patch outside the overlay's folder is read through it only.
	imgs, notes := Images(dir)
	var got []string
	for _, img := range imgs {
		got = append(got, img.Ref)
	}
	check(t, "images", got, []string{"reg.example.com/log:1", "reg.example.com/web:1.4", "reg.example.com/proxy:2", "reg.example.com/exporter:0.9"})
	if len(notes) != 0 {
		t.Errorf("notices %v, want none", notes)
	}
}
