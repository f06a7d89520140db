// Package atomicfile replaces files so that a reader, a crash or a
// concurrent writer never sees half of one.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrChanged is returned by Replace when the file no longer holds what the
// caller read from it.
var ErrChanged = errors.New("file changed since it was read")

// Write replaces the file at path with data: it writes a synced temporary
// file in the same folder and renames it over path, then syncs the folder.
// The file keeps its mode; a new file gets mode. When path is a symlink, its
// target is replaced and the link kept. When the file already holds data,
// nothing is written.
func Write(path string, data []byte, mode fs.FileMode) error {
	return write(path, nil, data, mode)
}

// Replace is Write for a file the caller read earlier: it writes only if the
// file still holds old, and returns ErrChanged otherwise, so that an edit
// made in between is not lost. The check and the rename are not one atomic
// step; this narrows the window to a moment, it does not close it.
func Replace(path string, old, data []byte) error {
	if old == nil {
		old = []byte{}
	}
	return write(path, old, data, 0o644)
}

// RemoveStale deletes the temporary files that writes to path left behind
// when their process was killed between creating and renaming them. Call
// it only while no other process can be writing path (under a lock): a
// live writer's temporary file is named the same way.
func RemoveStale(path string) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	stale, err := filepath.Glob(filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+".tmp-*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// globEscape quotes the characters filepath.Match gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func write(path string, old, data []byte, mode fs.FileMode) (err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	switch fi, err := os.Stat(path); {
	case err == nil:
		mode = fi.Mode().Perm()
		cur, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if old != nil && !bytes.Equal(cur, old) {
			return fmt.Errorf("%s: %w", path, ErrChanged)
		}
		if bytes.Equal(cur, data) {
			return nil
		}
	case errors.Is(err, fs.ErrNotExist):
		if old != nil && len(old) > 0 {
			return fmt.Errorf("%s: %w", path, ErrChanged)
		}
	default:
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable; not every filesystem can sync a folder.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
