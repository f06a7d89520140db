package render

import (
	"slices"
	"strings"
	"testing"
)

func TestKustomizationImagesProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		files    map[string]string
		wantUses []string // references rendered
		wantErrs []string // problems, as prefix "file:line: message"
	}{
		{"a numeric newTag is named at its line, once; the other entries apply", map[string]string{
			"kustomization.yaml": "resources: [deploy.yaml]\nimages:\n- name: nginx\n  newTag: 1.25\n- name: redis\n  newTag: \"7\"\n",
			"deploy.yaml":        deployment("d", "nginx", "redis"),
		}, []string{"nginx", "redis:7"}, []string{
			`kustomization.yaml:3: images entry nginx: newTag 1.25 is not a string (quote it: "1.25"); the entry is not applied`,
		}},
		{"helmCharts only is a notice, not an empty kustomization", map[string]string{
			"kustomization.yaml": "helmCharts:\n- name: podinfo\n  repo: https://charts.example.com\n  version: 6.7.0\n",
		}, nil, []string{
			"kustomization.yaml:1: helmCharts: not rendered (kustomize runs the helm binary for them); render the chart's folder instead",
		}},
		{"a kustomization kustomize cannot read is said once", map[string]string{
			"kustomization.yaml": "resources: 5\n",
		}, nil, []string{
			"kustomization.yaml: invalid Kustomization: json: cannot unmarshal number into Go struct field Kustomization.resources of type []string",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := writeTree(t, tc.files)
			imgs, errs := Images(root)
			var refs, msgs []string
			for _, img := range imgs {
				refs = append(refs, img.Ref)
			}
			for _, err := range errs {
				msgs = append(msgs, strings.TrimPrefix(err.Error(), root+"/"))
			}
			if !slices.Equal(refs, tc.wantUses) {
				t.Errorf("images %q, want %q", refs, tc.wantUses)
			}
			if !slices.Equal(msgs, tc.wantErrs) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(tc.wantErrs, "\n"))
			}
		})
	}
}
