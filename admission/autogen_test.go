package admission

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKyvernoAutogen holds kyvernoAutogen to the cases of Kyverno
// v1.19.1's CanAutoGen (pkg/autogen/v1/autogen.go): a name, names, a
// selector or annotations anywhere in a match or exclude turn autogen
// off for the whole policy, as do Pod listed beside another kind, a
// generate rule, a JSON 6902 patch, and rules that name neither Pod nor
// a pod controller.
func TestKyvernoAutogen(t *testing.T) {
	for _, c := range []struct {
		name, spec string
		want       bool
	}{
		{"Pod rule", `rules: [{match: {any: [{resources: {kinds: [Pod]}}]}}]`, true},
		{"older resources block", `rules: [{match: {resources: {kinds: [Pod]}}}]`, true},
		{"names in a match", `rules: [{match: {any: [{resources: {kinds: [Pod], names: ["web-*"]}}]}}]`, false},
		{"name in the older block", `rules: [{match: {resources: {kinds: [Pod], name: web}}}]`, false},
		{"a selector in an exclude", `rules: [{match: {any: [{resources: {kinds: [Pod]}}]}, exclude: {all: [{resources: {selector: {matchLabels: {a: b}}}}]}}]`, false},
		{"annotations", `rules: [{match: {any: [{resources: {kinds: [Pod], annotations: {a: b}}}]}}]`, false},
		{"Pod beside Deployment", `rules: [{match: {any: [{resources: {kinds: [Pod, Deployment]}}]}}]`, false},
		{"a second rule with names turns off the first", `rules: [{match: {any: [{resources: {kinds: [Pod]}}]}}, {match: {any: [{resources: {kinds: [Pod], names: [x]}}]}}]`, false},
		{"no Pod and no controller", `rules: [{match: {any: [{resources: {kinds: [Service]}}]}}]`, false},
		{"a controller alone", `rules: [{match: {any: [{resources: {kinds: [Deployment]}}]}}]`, true},
		{"a generate rule", `rules: [{match: {any: [{resources: {kinds: [Pod]}}]}, generate: {kind: ConfigMap}}]`, false},
		{"a JSON 6902 patch", `rules: [{match: {any: [{resources: {kinds: [Pod]}}]}, mutate: {patchesJson6902: "- op: add"}}]`, false},
		{"namespaces are fine", `rules: [{match: {any: [{resources: {kinds: [Pod], namespaces: [prod]}}]}}]`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(c.spec), &spec); err != nil {
				t.Fatal(err)
			}
			if got := kyvernoAutogen(spec); got != c.want {
				t.Errorf("kyvernoAutogen = %v, Kyverno's CanAutoGen says %v", got, c.want)
			}
		})
	}
}
