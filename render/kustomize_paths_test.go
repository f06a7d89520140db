package render

import (
	"path/filepath"
	"testing"
)

// TestFindKustomizePathNames: a tree is rendered whatever characters the
// OS allows in its path, above the root given and in the folders and file
// names of the tree itself. kyaml's in-memory filesystem refused every name
// outside [a-zA-Z0-9-_.:]: a checkout under "x,y" rendered nothing ("must
// build at directory … doesn't exist").
func TestFindKustomizePathNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// above: only above the root. kustomize itself refuses a
		// resource path with ".." in a name, as kubectl kustomize does.
		above bool
	}{
		{name: "x,y"}, {name: "my apps"}, {name: "a+b=c"}, {name: "at@home~1"}, {name: "café"}, {name: "semi;colon"},
		{name: "quote'd \"q\""}, {name: "[brackets]{braces}"}, {name: "100%"}, {name: "hash#tag"}, {name: "excl!amation"},
		{name: "tab\there"}, {name: "$dollar"}, {name: "a..b", above: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name, in := tc.name, tc.name
			if tc.above {
				in = "plain"
			}
			dir := writeTree(t, map[string]string{
				name + "/base " + in + "/kustomization.yaml":     "resources:\n- 'deploy " + quoteSingle(in) + ".yaml'\n",
				name + "/base " + in + "/deploy " + in + ".yaml": deployment("app", "reg.example.com/app:v1", "reg.example.com/tool:v1"),
				name + "/overlay/kustomization.yaml":             "resources:\n- '../base " + quoteSingle(in) + "'\nimages:\n- name: reg.example.com/app\n  newTag: v2\n",
			})
			root := filepath.Join(dir, name)
			tr := Find(root)
			check(t, "errors", errs(tr), nil)
			base := filepath.ToSlash(filepath.Join(root, "base "+in))
			check(t, "uses", uses(tr), []string{
				filepath.ToSlash(filepath.Join(root, "overlay", "kustomization.yaml")) + ":4 Deployment /app c0 reg.example.com/app:v2 images-entry entry-digest",
				base + "/deploy " + in + ".yaml:12 Deployment /app c1 reg.example.com/tool:v1 literal set-ref",
			})
			if len(tr.Apps) != 1 || tr.Apps[0].Dir == "" {
				t.Errorf("apps %+v, want the overlay alone (the base is included)", tr.Apps)
			}
		})
	}
}

// quoteSingle escapes s for a single-quoted YAML scalar.
func quoteSingle(s string) string {
	out := ""
	for _, r := range s {
		if r == '\'' {
			out += "'"
		}
		out += string(r)
	}
	return out
}
