package render

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// memFS is the in-memory filesystem kustomize renders from. kyaml's own
// (filesys.MakeFsInMemory) refuses every name outside [a-zA-Z0-9-_.:], so
// a tree under a folder named "x,y", "my apps" or "café" could not be
// written to it; memFS takes any name the OS does. Paths are cleaned and
// rooted at "/", as in kyaml's: the render hands it absolute paths.
type memFS struct {
	files map[string][]byte
	dirs  map[string]bool
}

// newMemFS returns an empty memFS holding the root folder.
func newMemFS() *memFS {
	return &memFS{files: map[string][]byte{}, dirs: map[string]bool{filesys.Separator: true}}
}

var _ filesys.FileSystem = (*memFS)(nil)

// errNoStreams is what Create and Open return: kustomize's build reads
// and writes whole files.
var errNoStreams = errors.New("the render's in-memory filesystem has no file streams")

// memPath cleans p and roots it at "/".
func memPath(p string) string { return filepath.Join(filesys.Separator, p) }

// notExist is the error for a path memFS does not hold.
func notExist(op, p string) error { return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist} }

// Create is not supported (errNoStreams).
func (m *memFS) Create(p string) (filesys.File, error) {
	return nil, &fs.PathError{Op: "create", Path: p, Err: errNoStreams}
}

// Open is not supported (errNoStreams).
func (m *memFS) Open(p string) (filesys.File, error) {
	return nil, &fs.PathError{Op: "open", Path: p, Err: errNoStreams}
}

// Mkdir makes the folder p, whose parent must exist.
func (m *memFS) Mkdir(p string) error {
	p = memPath(p)
	if !m.dirs[filepath.Dir(p)] {
		return notExist("mkdir", filepath.Dir(p))
	}
	return m.MkdirAll(p)
}

// MkdirAll makes the folder p and its parents.
func (m *memFS) MkdirAll(p string) error {
	p = memPath(p)
	for d := p; !m.dirs[d]; d = filepath.Dir(d) {
		if _, ok := m.files[d]; ok {
			return &fs.PathError{Op: "mkdir", Path: d, Err: fs.ErrExist}
		}
		m.dirs[d] = true
	}
	return nil
}

// RemoveAll removes p and everything under it.
func (m *memFS) RemoveAll(p string) error {
	p = memPath(p)
	for _, k := range m.paths() {
		if underPath(k, p) {
			delete(m.files, k)
			delete(m.dirs, k)
		}
	}
	m.dirs[filesys.Separator] = true
	return nil
}

// underPath reports whether the cleaned path k is dir or under it.
func underPath(k, dir string) bool {
	return k == dir || strings.HasPrefix(k, strings.TrimSuffix(dir, filesys.Separator)+filesys.Separator)
}

// IsDir reports whether p is a folder.
func (m *memFS) IsDir(p string) bool { return m.dirs[memPath(p)] }

// Exists reports whether p is a file or a folder.
func (m *memFS) Exists(p string) bool {
	_, ok := m.files[memPath(p)]
	return ok || m.IsDir(p)
}

// ReadDir lists the names in folder p, sorted.
func (m *memFS) ReadDir(p string) ([]string, error) {
	p = memPath(p)
	if !m.dirs[p] {
		return nil, notExist("readdir", p)
	}
	var names []string
	for _, k := range m.paths() {
		if k != p && filepath.Dir(k) == p {
			names = append(names, filepath.Base(k))
		}
	}
	return names, nil
}

// CleanedAbs splits p into the folder that holds it and its name, or
// returns p itself for a folder.
func (m *memFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	c := memPath(p)
	if m.dirs[c] {
		return filesys.ConfirmedDir(c), "", nil
	}
	if _, ok := m.files[c]; ok {
		return filesys.ConfirmedDir(filepath.Dir(c)), filepath.Base(c), nil
	}
	return "", "", notExist("stat", p)
}

// Glob returns the files that match pattern, sorted.
func (m *memFS) Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.files)) {
		if ok, _ := filepath.Match(memPath(pattern), k); ok {
			out = append(out, k)
		}
	}
	return out, nil
}

// ReadFile returns the contents of the file p.
func (m *memFS) ReadFile(p string) ([]byte, error) {
	data, ok := m.files[memPath(p)]
	if !ok {
		return nil, notExist("open", p)
	}
	return slices.Clone(data), nil
}

// WriteFile sets the contents of the file p, making its folders.
func (m *memFS) WriteFile(p string, data []byte) error {
	p = memPath(p)
	if m.dirs[p] {
		return &fs.PathError{Op: "write", Path: p, Err: errors.New("is a directory")}
	}
	if err := m.MkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	m.files[p] = slices.Clone(data)
	return nil
}

// Walk calls fn on p and, for a folder, everything under it, in the
// order of their paths sorted; filepath.SkipDir from fn on a folder skips what it holds.
func (m *memFS) Walk(p string, fn filepath.WalkFunc) error {
	root := memPath(p)
	if !m.Exists(root) {
		return fn(root, nil, notExist("lstat", p))
	}
	var skip []string
	for _, k := range m.paths() {
		if !underPath(k, root) || slices.ContainsFunc(skip, func(s string) bool { return underPath(k, s) && k != s }) {
			continue
		}
		info := memInfo{name: filepath.Base(k), size: int64(len(m.files[k])), dir: m.dirs[k]}
		err := fn(k, info, nil)
		switch {
		case errors.Is(err, filepath.SkipDir) && info.dir:
			skip = append(skip, k)
		case errors.Is(err, filepath.SkipDir):
			return nil // a file's SkipDir skips the rest of its folder; kustomize never sends it
		case err != nil:
			return err
		}
	}
	return nil
}

// paths is every file and folder, sorted.
func (m *memFS) paths() []string {
	out := slices.Collect(maps.Keys(m.files))
	for d := range m.dirs {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// memInfo describes a file or folder of memFS to a Walk func.
type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
