package yamlfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Map converts each document as a Kubernetes object holds it, and a shape
// no object has is a *ParseError at the node's line, never a panic later.
func TestObjectMap(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, p := 0, "a"; i < 6; i, p = i+1, fmt.Sprint("b", i) {
		bomb += fmt.Sprintf("b%d: &b%d [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", i, i, p, p, p, p, p, p, p, p, p, p)
	}
	for _, tc := range []struct {
		name, in string
		want     map[string]any
		errLine  int
		errHas   string
	}{
		{"scalars", "a: 1\nb: 1.5\nc: true\nd: null\ne: x\nf: '1'", map[string]any{"a": int64(1), "b": 1.5, "c": true, "d": nil, "e": "x", "f": "1"}, 0, ""},
		{"nested and lists", "a: {b: [1, {c: d}]}", map[string]any{"a": map[string]any{"b": []any{int64(1), map[string]any{"c": "d"}}}}, 0, ""},
		{"merge key", "base: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}", map[string]any{"base": map[string]any{"x": int64(1), "y": int64(2)}, "m": map[string]any{"x": int64(1), "y": int64(3)}}, 0, ""},
		{"integer key deep in a list", "spec:\n  rules:\n  - 1: x\n", nil, 3, "not a string"},
		{"boolean key", "a:\n  true: x\n", nil, 2, "not a string"},
		{"mapping key", "? {a: b}\n: c\n", nil, 1, "not a string"},
		{"not a mapping", "- a\n- b\n", nil, 1, "not a mapping"},
		{"alias bomb", bomb, nil, 0, "too many alias expansions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := File{Name: "f.yaml", Data: []byte(tc.in)}.Objects()
			if err != nil || len(objs) != 1 {
				t.Fatalf("Objects: %v, %d objects", err, len(objs))
			}
			got, err := objs[0].Map()
			if tc.errHas == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Map() = %#v, %v; want %#v", got, err, tc.want)
				}
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, tc.errHas) || pe.File != "f.yaml" || (tc.errLine > 0 && pe.Line != tc.errLine) {
				t.Fatalf("Map() error %v, want a ParseError at f.yaml:%d holding %q", err, tc.errLine, tc.errHas)
			}
		})
	}
}

// A large file of plain objects is read whole: the alias bound counts
// expansions, not nodes (20,000 Pods in one file were refused as "too many
// aliases" and every image lost).
func TestManyPlainObjects(t *testing.T) {
	var b strings.Builder
	const n = 20_000
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers:\n  - name: c\n    image: registry.example/app:%d\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "pods.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	imgs, errs := Find([]string{path})
	if len(errs) != 0 || len(imgs) != n {
		t.Fatalf("%d images, errors %v; want %d and none", len(imgs), errs, n)
	}
}

// A pod template below the search bound of a custom resource is said, not
// dropped in silence; a deep object without containers says nothing.
func TestDeepTemplateNotice(t *testing.T) {
	deep := func(key string) string {
		s := "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec:\n"
		ind := "  "
		for i := 0; i < maxSearchDepth+2; i++ {
			s += ind + fmt.Sprintf("l%d:\n", i)
			ind += "  "
		}
		return s + ind + key + ": [{name: c, image: registry.example/deep:1}]\n"
	}
	for _, tc := range []struct {
		name, key string
		notice    bool
	}{{"containers", "containers", true}, {"other", "things", false}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "thing.yaml")
			if err := os.WriteFile(path, []byte(deep(tc.key)), 0o644); err != nil {
				t.Fatal(err)
			}
			imgs, errs := Find([]string{path})
			var notices []string
			for _, err := range errs {
				var n *Notice
				if errors.As(err, &n) && strings.Contains(n.Msg, "not searched") {
					notices = append(notices, n.Error())
				}
			}
			if len(imgs) != 0 || (len(notices) == 1) != tc.notice {
				t.Fatalf("images %v, notices %v; want none and notice=%v", imgs, notices, tc.notice)
			}
		})
	}
}
