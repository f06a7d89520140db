package render

import (
	"fmt"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/yamlfile"
)

func key(k string) Step { return Step{Key: k} }
func index(i int) Step  { return Step{Index: i, IsIndex: true} }

// pathOf writes steps as Key and Index do.
func pathOf(steps []Step) ValuesPath {
	var p ValuesPath
	for _, st := range steps {
		p = p.with(st)
	}
	return p
}

// TestValuesPath: each form a values path is written in, read back into
// the steps it was written from.
func TestValuesPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []Step
		want  ValuesPath
	}{
		{"the top", nil, ""},
		{"one key", []Step{key("image")}, "image"},
		{"nested keys", []Step{key("image"), key("tag")}, "image.tag"},
		{"a list index", []Step{key("images"), index(0), key("tag")}, "images[0].tag"},
		{"a list at the top", []Step{index(2)}, "[2]"},
		{"lists in lists", []Step{key("a"), index(1), index(10)}, "a[1][10]"},
		{"a key with a dot", []Step{key("podAnnotations"), key("example.com/image")}, `podAnnotations."example.com/image"`},
		{"a key with brackets", []Step{key("a[0]")}, `"a[0]"`},
		{"a key with a quote", []Step{key(`say "hi"`), key("x")}, `"say \"hi\"".x`},
		{"a key that starts with a quote", []Step{key(`"x`)}, `"\"x"`},
		{"an empty key", []Step{key("image"), key("")}, `image.""`},
		{"a key with other punctuation", []Step{key("a-b_c/d:e@f")}, "a-b_c/d:e@f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := pathOf(tc.steps)
			if p != tc.want {
				t.Errorf("written %s, want %s", p, tc.want)
			}
			got, err := p.Steps()
			if err != nil || !reflect.DeepEqual(got, tc.steps) {
				t.Errorf("%s read back as %v (%v), want %v", p, got, err, tc.steps)
			}
		})
	}
}

// TestValuesPathInvalid: a path Key and Index never write does not read
// back, and names nothing.
func TestValuesPathInvalid(t *testing.T) {
	t.Parallel()
	doc := mustDocs(t, "a:\n  b: 1\n")[0]
	for _, p := range []ValuesPath{".a", "a.", "a..b", "a[", "a[x]", "a[-1]", "a[+1]", "a[]", "a]", `a"b`, `a[0]b`, `"a`, `"a"b`} {
		if steps, err := p.Steps(); err == nil {
			t.Errorf("%s read as %v", p, steps)
		}
		if n := p.Find(doc); n != nil {
			t.Errorf("%s found %v", p, n)
		}
	}
}

// TestValuesPathSplit: the mapping that holds a key, and the key.
func TestValuesPathSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, parent ValuesPath
		key          string
		ok           bool
	}{
		{"image.digest", "image", "digest", true},
		{"digest", "", "digest", true},
		{`"a.b".digest`, `"a.b"`, "digest", true},
		{`image."x.y"`, "image", "x.y", true},
		{"images[0].digest", "images[0]", "digest", true},
		{"digests[0]", "", "", false},
		{"", "", "", false},
		{"a..b", "", "", false},
	} {
		parent, k, ok := tc.path.Split()
		if parent != tc.parent || k != tc.key || ok != tc.ok {
			t.Errorf("%s split as %q %q %t, want %q %q %t", tc.path, parent, k, ok, tc.parent, tc.key, tc.ok)
		}
	}
}

// TestValuesPathFind: the node a path names, the last of equal keys
// winning, and the mapping at a path in the last document with one.
func TestValuesPathFind(t *testing.T) {
	t.Parallel()
	docs := mustDocs(t, "image:\n  tag: v1\nimages:\n  - tag: v2\n\"a.b\":\n  c: v3\n---\nimage:\n  tag: v4\n---\nimage: flat\n")
	for _, tc := range []struct {
		path ValuesPath
		doc  int
		want string
	}{
		{"image.tag", 0, "v1"},
		{"images[0].tag", 0, "v2"},
		{`"a.b".c`, 0, "v3"},
		{"image.tag", 1, "v4"},
		{"images[1].tag", 0, ""},
		{"image.tag.x", 0, ""},
		{"images.tag", 0, ""},
		{"image[0]", 0, ""},
	} {
		got := ""
		if n := tc.path.Find(docs[tc.doc]); n != nil {
			got = n.Value
		}
		if got != tc.want {
			t.Errorf("%s in document %d: %q, want %q", tc.path, tc.doc, got, tc.want)
		}
	}
	if m, at := ValuesPath("image").Mapping(docs); m == nil || at != 1 {
		t.Errorf("the mapping image: %v in document %d, want the second document's", m, at)
	}
	if m, at := ValuesPath("").Mapping(docs); m == nil || at != 2 {
		t.Errorf("the top: %v in document %d, want the third document's", m, at)
	}
	if m, _ := ValuesPath("image.tag").Mapping(docs); m != nil {
		t.Errorf("image.tag is a scalar, found the mapping %v", m)
	}
}

// FuzzValuesPath checks that any path that reads back is written again as
// it was read, and that keys of any text survive Key.
func FuzzValuesPath(f *testing.F) {
	for _, s := range []string{"image.tag", "images[0].tag", `"a.b".c`, `image.""`, "[3]", "a..b", `"\x80"`} {
		f.Add(s, "key", 1)
	}
	f.Fuzz(func(t *testing.T, s, k string, i int) {
		if steps, err := ValuesPath(s).Steps(); err == nil {
			again, err := pathOf(steps).Steps()
			if err != nil || fmt.Sprint(again) != fmt.Sprint(steps) {
				t.Fatalf("%q read as %v, written as %s, read again as %v (%v)", s, steps, pathOf(steps), again, err)
			}
		}
		want := []Step{key(k), index(max(i, 0)), key(k)}
		if got, err := pathOf(want).Steps(); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%v written as %s, read back as %v (%v)", want, pathOf(want), got, err)
		}
	})
}

func mustDocs(t *testing.T, s string) []*yaml.Node {
	t.Helper()
	docs, err := yamlfile.Documents([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}
