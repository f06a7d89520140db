package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPinCheckSummaryFiles: pin --check's summary "N unpinned references
// in M files" counts M as the distinct files of the references it lists,
// on a tree whose references span plain manifests (two in one file), a
// kustomization, a chart's values and a HelmRelease a kustomization lists
// (its chart rendered), with the root written with a trailing "/.".
func TestPinCheckSummaryFiles(t *testing.T) {
	t.Parallel()
	pod := func(name string, images ...string) string {
		s := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers:\n"
		for i, img := range images {
			s += fmt.Sprintf("  - name: c%d\n    image: %s\n", i, img)
		}
		return s
	}
	dir := pinTree(t, map[string]string{
		"plain/a.yaml":                  pod("a", "nginx:1.27", "redis:7"),
		"plain/b.yaml":                  pod("b", "postgres:16"),
		"plain/c.yaml":                  pod("c", "busybox@sha256:"+strings.Repeat("1", 64)),
		"kust/kustomization.yaml":       "resources:\n- pod.yaml\nimages:\n- name: nginx\n  newTag: \"1.28\"\n",
		"kust/pod.yaml":                 pod("k", "nginx:1.27"),
		"charts/app/Chart.yaml":         "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"charts/app/values.yaml":        "image:\n  repository: reg.example.com/app\n  tag: \"1.0\"\nside: reg.example.com/side:2\n",
		"charts/app/templates/pod.yaml": pod("app", `"{{ .Values.image.repository }}:{{ .Values.image.tag }}"`, "{{ .Values.side }}"),
		"flux/kustomization.yaml":       "resources:\n- release.yaml\n",
		"flux/release.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web}\nspec:\n" +
			"  chart:\n    spec:\n      chart: ./charts/app\n      sourceRef: {kind: GitRepository, name: flux-system}\n  values:\n    image:\n      tag: \"3.0\"\n",
	})
	code, out, errs := runPinCmd(t, "--check", "--offline", dir+string(filepath.Separator)+".")
	if code != ExitFindings {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	line := regexp.MustCompile(`(?m)^(.+):\d+: (unpinned|invalid): `)
	files := map[string]bool{}
	n := 0
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		files[filepath.Clean(m[1])] = true
		n++
	}
	// a.yaml (2), b.yaml, the kustomization's entry, values.yaml (2), release.yaml
	if n != 7 || len(files) != 5 {
		t.Errorf("%d references in %d files listed, want 7 in 5:\n%s", n, len(files), out)
	}
	if want := fmt.Sprintf("%d unpinned references in %d files\n", n, len(files)); !strings.Contains(errs, want) {
		t.Errorf("summary: %q, want %q", errs, want)
	}
}
