package pin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/regcheck/regcheck/internal/atomicfile"
	"github.com/regcheck/regcheck/results/pinresult"
)

// WriteFile replaces the file at path with data atomically: it writes a
// temporary file in the same folder and renames it over path, keeping the
// file's mode (0644 for a new file). When path is a symlink, its target is
// replaced. When the file already holds data, nothing is written.
func WriteFile(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}

// replace writes out over pf's file, only if the file still holds what Run
// read (the walk may have taken minutes) and is writable (see writable).
// It returns the finding that says why it did not, or nil.
func (c Config) replace(pf parsedFile, out []byte) *pinresult.Finding {
	err := c.writable(pf.root, pf.path)
	if err == nil {
		err = atomicfile.Replace(pf.path, pf.data, out)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, atomicfile.ErrChanged):
		return &pinresult.Finding{Kind: pinresult.KindChanged, File: pf.path, Message: "changed since pin read it; left as is: run pin again"}
	}
	return &pinresult.Finding{Kind: pinresult.KindUnwritable, File: pf.path, Message: err.Error()}
}

// writable refuses, unless FollowSymlinks, to write path when it resolves
// (through symlinks, its own or its folders') outside root, the root it was
// found under; a root that is a file stands for its folder. A repository's
// "k8s/app.yaml -> /etc/…" is not pin's to edit.
func (c Config) writable(root, path string) error {
	if c.FollowSymlinks {
		return nil
	}
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		root = filepath.Dir(root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	if realRoot, err = filepath.Abs(realRoot); err != nil {
		return err
	}
	if real, err = filepath.Abs(real); err != nil {
		return err
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("not written: a symlink to %s, outside %s; symlinks out of the tree are written through only when asked", real, root)
	}
	return nil
}
