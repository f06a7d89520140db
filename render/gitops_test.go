package render

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitopsChart is a chart whose template builds its image from
// image.repository and image.tag, as most charts do.
var gitopsChart = map[string]string{
	"charts/app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
	"charts/app/values.yaml": "image:\n  repository: registry.example.com/app\n  tag: \"1.0\"\n",
	"charts/app/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n" +
		"        - name: app\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
}

func TestGitOpsRenderedInTree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		file    string
		want    []string // image uses, "file:line ref"
		notices []string // substrings of the problems
	}{
		{"HelmRelease of a chart in the tree", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: prod}\nspec:\n" +
			"  chart:\n    spec:\n      chart: ./charts/app\n      sourceRef: {kind: GitRepository, name: repo}\n" +
			"  values:\n    image:\n      tag: \"2.0\"\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:11 registry.example.com/app:2.0"}, nil},
		{"Application of a chart in the tree, values string and object", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app, namespace: argocd}\nspec:\n" +
			"  source:\n    repoURL: https://git.example.com/repo.git\n    path: charts/app\n    helm:\n      values: |\n        image:\n          tag: \"3.0\"\n" +
			"      valuesObject:\n        image:\n          repository: registry.example.com/other\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:11 registry.example.com/other:3.0"}, nil},
		{"Application with helm.parameters over its values", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app, namespace: argocd}\nspec:\n" +
			"  source:\n    repoURL: https://git.example.com/repo.git\n    path: charts/app\n    helm:\n      valuesObject:\n        image:\n          tag: \"3.0\"\n" +
			"      parameters:\n      - name: image.tag\n        value: \"3.1\"\n      - name: sidecars[0].image\n        value: x\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:14 registry.example.com/app:3.1"},
			[]string{"helm.parameters sidecars[0].image not applied to the chart rendered"}},
		{"HelmRelease of a chart from a Helm repository: read by the conventions", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: prod}\nspec:\n" +
			"  chart:\n    spec:\n      chart: app\n      sourceRef: {kind: HelmRepository, name: charts}\n" +
			"  values:\n    image:\n      repository: registry.example.com/app\n      tag: \"2.0\"\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:12 registry.example.com/app:2.0"},
			[]string{"chart app not rendered; 1 image(s) read from spec.values"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"clusters/prod/release.yaml": tc.file}
			for k, v := range gitopsChart {
				files[k] = v
			}
			root := writeTree(t, files)
			imgs, errs := Images(root)
			var got, msgs []string
			for _, img := range imgs {
				rel, _ := filepath.Rel(root, img.File)
				got = append(got, fmt.Sprintf("%s:%d %s", filepath.ToSlash(rel), img.Line, img.Ref))
			}
			slices.Sort(got)
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("images:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(msgs) != len(tc.notices) {
				t.Errorf("problems: %q, want %d containing %q", msgs, len(tc.notices), tc.notices)
			}
			for i, n := range tc.notices {
				if i < len(msgs) && !strings.Contains(msgs[i], n) {
					t.Errorf("problem %q does not say %q", msgs[i], n)
				}
			}
		})
	}
}
