package pin

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/yamlfile"
)

var (
	replacement = regexp.MustCompile(`^[A-Za-z0-9._:/@-]+$`)
	insertion   = regexp.MustCompile(`^(, |(\r\n|\n|\r) *)digest: sha256:[0-9a-f]{64}$`)
)

// FuzzRewrite checks, for any input, that Rewrite does not panic; that the
// result is the input or differs only inside image scalars, pull policy
// values and added kustomize digest: keys; that it parses to the same tree
// except those values; and that a second pass changes nothing.
func FuzzRewrite(f *testing.F) {
	ins, _ := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	for _, in := range ins {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, nameFor(in) == "kustomization.yaml", uint8(len(data)%4))
	}
	for _, tc := range tricky {
		f.Add([]byte(tc.data), false, uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, kustomization bool, mode uint8) {
		name := "x.yaml"
		if kustomization {
			name = "kustomization.yaml"
		}
		o := options{update: mode&1 != 0}
		if mode&2 != 0 {
			o.pullPolicy = "IfNotPresent"
		}
		checkRewrite(t, name, data, o)
	})
}

// checkRewrite runs rewrite and checks the properties FuzzRewrite states.
// It returns the changes made.
func checkRewrite(t *testing.T, name string, data []byte, o options) []pinresult.Change {
	t.Helper()
	out, changes, edits, err := rewrite(name, data, fakeLookup, o)
	if err != nil {
		if out != nil || changes != nil {
			t.Fatalf("output with error %v", err)
		}
		if errors.Is(err, errInternal) {
			t.Fatal(err)
		}
		return nil
	}
	if len(edits) == 0 {
		if !bytes.Equal(out, data) {
			t.Fatalf("no edits but the output differs")
		}
		return changes
	}
	for _, e := range edits {
		old := data[e.start:e.end]
		switch {
		case e.start == e.end:
			if !insertion.MatchString(e.text) {
				t.Fatalf("odd insertion %q", e.text)
			}
		case !replacement.Match(old) || !replacement.MatchString(e.text):
			t.Fatalf("odd replacement %q -> %q", old, e.text)
		}
	}
	compareTrees(t, data, out, edits)

	again, changes2, _, err := rewrite(name, out, fakeLookup, o)
	if err != nil {
		t.Fatalf("second pass: %v\n%q", err, out)
	}
	if !bytes.Equal(again, out) {
		t.Fatalf("second pass changed the file:\n%s", pinresult.Diff(name, out, again))
	}
	for _, c := range changes2 {
		if c.Skipped == "" {
			t.Fatalf("second pass made a change: %v", c)
		}
	}
	return changes
}

// tricky inputs exercise the mapping of yaml.v3 positions to bytes.
var tricky = []struct {
	name  string
	data  string
	edits int // changes made (not skipped)
}{
	{"unicode before in flow", "kind: Pod\nspec:\n  containers:\n  - {name: \"\u00e9\U0001F600\", image: x:1}\n", 1},
	{"tab before value", "kind: Pod\nspec:\n  containers:\n  - image:\tnginx:1\n", 1},
	{"unicode line breaks", "note: \"a\u0085b\u2029c\"\nkind: Pod\nspec:\n  containers:\n  - image: nginx:1\n", 1},
	{"old mac line ends", "kind: Pod\rspec:\r  containers:\r  - image: nginx:1\r", 1},
	{"tag and unused anchor", "kind: Pod\nspec:\n  containers:\n  - image: !!str &a nginx:1\n", 1},
	{"quoted key", "\"kind\": Pod\nspec:\n  \"containers\":\n  - \"image\": 'nginx:1'\n", 1},
	{"inline document", "--- {kind: Pod, spec: {containers: [{image: a:1}, {image: b:2}]}}\n", 2},
	// yaml.v3 reads a BOM after the first as part of the next key: "\ufeffkind".
	{"bom on each document", "\ufeffkind: Pod\nspec: {containers: [{image: a:1}]}\n---\n\ufeffkind: Pod\nspec: {containers: [{image: b:1}]}\n", 1},
	{"multi-line plain", "kind: Pod\nspec:\n  containers:\n  - image: nginx\n      :1\n", 0},
	{"multi-line quoted", "kind: Pod\nspec:\n  containers:\n  - image: \"nginx:\n      1\"\n", 0},
	{"value on next line", "kind: Pod\nspec:\n  containers:\n  - image:\n      nginx:1\n", 1},
	{"comment between", "kind: Pod\nspec:\n  containers:\n  - image: # which\n      nginx:1\n", 1},
	{"explicit key", "kind: Pod\nspec:\n  containers:\n  - ? image\n    : nginx:1\n", 1},
	{"kustomize explicit key", "kind: Kustomization\nimages:\n- ? name\n  : nginx\n  ? newTag\n  : \"1\"\n", 1},
	// The comment closing an entry follows the added digest: line, and
	// yaml.v3 hangs it on digest: instead of newTag: the same file.
	{"kustomize comment closing an entry", "kind: Kustomization\nimages:\n- name: nginx\n  newTag: \"1\"\n  # pinned by hand\n- name: redis\n  newTag: \"2\"\n  # last\n", 2},
	{"kustomize comment closing an entry, after name", "kind: Kustomization\nimages:\n  - name: nginx\n    # no tag\n", 1},
	{"integer image", "kind: Pod\nspec:\n  containers:\n  - image: 0\n", 0},
}

func TestRewriteTricky(t *testing.T) {
	t.Parallel()
	for _, tc := range tricky {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := yamlfile.Documents([]byte(tc.data)); err != nil {
				t.Fatalf("test input does not parse: %v", err)
			}
			n := 0
			for _, c := range checkRewrite(t, "x.yaml", []byte(tc.data), options{}) {
				if c.Skipped == "" {
					n++
				}
			}
			if n != tc.edits {
				t.Errorf("%d edits, want %d", n, tc.edits)
			}
		})
	}
}

// compareTrees parses both files and checks they hold the same nodes,
// comments and styles, except the values edits replaced and the digest
// keys they added.
func compareTrees(t *testing.T, in, out []byte, edits []edit) {
	t.Helper()
	a, err := yamlfile.Documents(in)
	if err != nil {
		t.Fatalf("input no longer parses: %v", err)
	}
	b, err := yamlfile.Documents(out)
	if err != nil {
		t.Fatalf("output does not parse: %v\n%q", err, out)
	}
	if len(a) != len(b) {
		t.Fatalf("%d documents became %d", len(a), len(b))
	}
	txt := newText(in)
	edited := func(n *yaml.Node) (string, bool) {
		sp, err := txt.scalar(n)
		if err != nil {
			return "", false
		}
		for _, e := range edits {
			if e.start == sp.start && e.end == sp.end {
				return e.text, true
			}
		}
		return "", false
	}
	var walk func(x, y *yaml.Node)
	walk = func(x, y *yaml.Node) {
		if x.Kind != y.Kind || x.Style != y.Style || x.Tag != y.Tag || x.Anchor != y.Anchor ||
			x.HeadComment != y.HeadComment || x.LineComment != y.LineComment || x.FootComment != y.FootComment {
			t.Fatalf("node at %d:%d changed: %+v -> %+v", x.Line, x.Column, x, y)
		}
		if x.Kind == yaml.AliasNode {
			if x.Value != y.Value {
				t.Fatalf("alias %q -> %q", x.Value, y.Value)
			}
			return
		}
		if x.Value != y.Value {
			want, ok := edited(x)
			if !ok || y.Value != want {
				t.Fatalf("value at %d:%d changed without an edit: %q -> %q", x.Line, x.Column, x.Value, y.Value)
			}
		}
		yc := y.Content
		if x.Kind == yaml.MappingNode && len(yc) == len(x.Content)+2 {
			// A digest: key was added somewhere in this kustomize entry.
			for i := 0; i+1 < len(yc); i += 2 {
				if yc[i].Value == "digest" {
					yc = withoutDigest(t, x, yc, i)
					break
				}
			}
		}
		if len(x.Content) != len(yc) {
			t.Fatalf("node at %d:%d has %d children, then %d", x.Line, x.Column, len(x.Content), len(y.Content))
		}
		for i := range x.Content {
			walk(x.Content[i], yc[i])
		}
	}
	for i := range a {
		walk(a[i], b[i])
	}
}

// withoutDigest returns the mapping content yc without the digest: pair
// added at i. The pair is inserted on the line after the key it follows,
// so a comment that closed the entry after that key still closes it, now
// after the digest: line; yaml.v3 then hangs it on the new last key as its
// foot comment. Such a comment is moved back to the node of x's pair
// before i that held it; any other comment on the added pair fails.
func withoutDigest(t *testing.T, x *yaml.Node, yc []*yaml.Node, i int) []*yaml.Node {
	t.Helper()
	dk, dv := *yc[i], *yc[i+1]
	out := append(append([]*yaml.Node(nil), yc[:i]...), yc[i+2:]...)
	if i >= 2 {
		for _, d := range []*yaml.Node{&dk, &dv} {
			if d.FootComment == "" {
				continue
			}
			for j, before := range x.Content[i-2 : i] {
				if n := out[i-2+j]; n.FootComment == "" && before.FootComment == d.FootComment {
					moved := *n
					moved.FootComment, d.FootComment = d.FootComment, ""
					out[i-2+j] = &moved
					break
				}
			}
		}
	}
	for _, d := range []*yaml.Node{&dk, &dv} {
		if d.HeadComment != "" || d.LineComment != "" || d.FootComment != "" {
			t.Fatalf("the added digest: pair holds a comment that was not in the input: %q %q %q", d.HeadComment, d.LineComment, d.FootComment)
		}
	}
	return out
}
