package render

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRenderBounds: a chart whose templates loop or repeat past what one
// render may count is not rendered, with a notice naming the call, and the
// rest of the tree is read (before: 3,000,000 iterations of a 400-byte
// template ran Helm's render out of memory). Loops within the bound render
// as Sprig's do.
func TestRenderBounds(t *testing.T) {
	t.Parallel()
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: c\n      image: reg.example.com/p:1\n"
	cm := func(body string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n" + body
	}
	for _, tc := range []struct {
		name, template string
		want           string // in the one error; "" renders
	}{
		{"until 3,000,000", cm(`{{- range $i := until 3000000 }}
  k{{ $i }}: v
{{- end }}`), "until 3000000 counts more than regcheck renders of a chart (1000000 in all its loops)"},
		{"nested 2,000 by 2,000", cm(`{{- range $i := until 2000 }}{{ range $j := until 2000 }}
  k{{ $i }}-{{ $j }}: v
{{- end }}{{ end }}`), "until 2000 counts more than regcheck renders"},
		{"untilStep", cm(`{{- range untilStep 0 3000000 1 }}{{ end }}`), "untilStep 0 3000000 1 counts more"},
		{"seq", cm(`  k: {{ seq 3000000 | quote }}`), "seq 3000000 counts more"},
		{"repeat", cm(`  k: {{ repeat 20000000 "x" | quote }}`), "repeat 20000000 of 1 bytes builds more than regcheck renders of a chart (16 MiB in all)"},
		{"within the bound", cm(`{{- range $i := until 3 }}
  k{{ $i }}: {{ printf "%s-%s-%d" (seq 1 2) (repeat 2 "x") (len (untilStep 10 0 -5)) | quote }}
{{- end }}`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"app/Chart.yaml":         "apiVersion: v2\nname: app\nversion: 0.1.0\n",
				"app/templates/cm.yaml":  tc.template,
				"app/templates/pod.yaml": pod,
				"pod.yaml":               pod,
			})
			tr := Find(dir)
			var errs []string
			for _, e := range tr.Errs {
				errs = append(errs, e.Error())
			}
			if !slices.Contains(tr.Plain, filepath.Join(dir, "pod.yaml")) {
				t.Errorf("plain files %q: the rest of the tree is not read", tr.Plain)
			}
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("errors %q; want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Fatalf("errors %q; want one containing %q", errs, tc.want)
			}
		})
	}
}
