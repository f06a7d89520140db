package render

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMemFS: the in-memory filesystem kustomize renders from takes names
// kyaml's refuses and answers as a disk does: folders made for files,
// listings and walks in order, removal of a subtree, not-exist errors.
func TestMemFS(t *testing.T) {
	m := newMemFS()
	for _, p := range []string{"/r/x,y/a b.yaml", "/r/x,y/sub/c.yaml", "/r/z.yaml"} {
		if err := m.WriteFile(p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if !m.IsDir("/r/x,y") || !m.IsDir("/r/x,y/sub/") || m.IsDir("/r/z.yaml") || !m.Exists("r/x,y/../z.yaml") {
		t.Error("folders or paths not as written")
	}
	if d, f, err := m.CleanedAbs("/r/x,y/./a b.yaml"); d != "/r/x,y" || f != "a b.yaml" || err != nil {
		t.Errorf("CleanedAbs: %q %q %v", d, f, err)
	}
	if _, _, err := m.CleanedAbs("/r/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CleanedAbs of nothing: %v", err)
	}
	if names, err := m.ReadDir("/r/x,y"); err != nil || !slices.Equal(names, []string{"a b.yaml", "sub"}) {
		t.Errorf("ReadDir: %v %v", names, err)
	}
	if got, err := m.Glob("/r/x,y/*.yaml"); err != nil || !slices.Equal(got, []string{"/r/x,y/a b.yaml"}) {
		t.Errorf("Glob: %v %v", got, err)
	}
	var walked []string
	err := m.Walk("/r", func(p string, info os.FileInfo, err error) error {
		walked = append(walked, p)
		if info.IsDir() && filepath.Base(p) == "sub" {
			return filepath.SkipDir
		}
		return err
	})
	if want := []string{"/r", "/r/x,y", "/r/x,y/a b.yaml", "/r/x,y/sub", "/r/z.yaml"}; err != nil || !slices.Equal(walked, want) {
		t.Errorf("Walk: %v %v, want %v", walked, err, want)
	}
	if err := m.Mkdir("/q/w"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Mkdir without a parent: %v", err)
	}
	if err := m.RemoveAll("/r/x,y"); err != nil || m.Exists("/r/x,y/sub/c.yaml") || m.Exists("/r/x,y") || !m.Exists("/r/z.yaml") {
		t.Errorf("RemoveAll: %v", err)
	}
	if data, err := m.ReadFile("/r/z.yaml"); err != nil || string(data) != "/r/z.yaml" {
		t.Errorf("ReadFile: %q %v", data, err)
	}
	if _, err := m.ReadFile("/r/x,y/a b.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a removed file: %v", err)
	}
}
