package yamlfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWalkObjects: Walk yields the files Find reads, in lexical order,
// and an error per file it could not read without stopping; Objects gives
// each document once with the line of its first key, and a *ParseError
// for a file that is not YAML.
func TestWalkObjects(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml":         "# comment\nkind: A\n---\n\n---\nkind: B\nmetadata: {name: b}\n",
		"b/c.yml":        "kind: C\n",
		"b/not.txt":      "kind: T\n",
		".git/x.yaml":    "kind: X\n",
		"d.json":         `{"kind": "D"}`,
		"e.yaml":         "kind: [\n",
		"missing/f.yaml": "",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "missing/f.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing/f.yaml"), filepath.Join(dir, "missing/f.yaml")); err != nil {
		t.Fatal(err) // a symlink to itself: Stat fails, not a regular file
	}
	var got []string
	var lines []int
	var failed []string
	for f, err := range Walk([]string{dir}) {
		if err != nil {
			var skip *SkipError
			var pe *fs.PathError
			switch {
			case errors.As(err, &skip):
				failed = append(failed, skip.File)
			case errors.As(err, &pe):
				failed = append(failed, pe.Path)
			default:
				t.Errorf("error %v names no file", err)
			}
			continue
		}
		objs, err := f.Objects()
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != f.Name || pe.Line != 1 {
				t.Errorf("Objects(%s) error %#v, want a *ParseError at line 1", f.Name, err)
			}
			failed = append(failed, f.Name)
			continue
		}
		for _, o := range objs {
			rel, _ := filepath.Rel(dir, o.File)
			got = append(got, rel)
			lines = append(lines, o.Line)
		}
	}
	if want := []string{"a.yaml", "a.yaml", "b/c.yml", "d.json"}; !slices.Equal(got, want) {
		t.Errorf("objects from %q, want %q", got, want)
	}
	if want := []int{2, 6, 1, 1}; !slices.Equal(lines, want) {
		t.Errorf("lines %v, want %v", lines, want)
	}
	if want := []string{filepath.Join(dir, "e.yaml"), filepath.Join(dir, "missing/f.yaml")}; !slices.Equal(failed, want) {
		t.Errorf("failed %q, want %q", failed, want)
	}

	n := 0
	for range Walk([]string{dir, dir}) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("Walk went on after a break: %d", n)
	}
}
