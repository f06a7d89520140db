package record

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/regcheck/regcheck/internal/atomicfile"
	"github.com/regcheck/regcheck/results/recordresult"
)

// DefaultPath is where the history file lives by default:
// $XDG_STATE_HOME/regcheck/history.json, else ~/.local/state/regcheck/history.json.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "regcheck", "history.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the history file: %w", err)
	}
	return filepath.Join(home, ".local", "state", "regcheck", "history.json"), nil
}

// File is a history stored as JSON in a file. Updates hold an exclusive lock
// on Path+".lock" and replace the file atomically (a temporary file in the
// same folder, synced, then renamed over it, keeping the file's mode), so
// concurrent or interrupted runs always leave a complete file. A file that
// exists but cannot be read as a history is an error and is never replaced.
//
// A File keeps the history its last Update wrote, with that file open, and
// the next Update starts from it instead of reading the file again while
// the file is still the one it wrote (same file, size and modification
// time); any other writer's file is read. Encoding streams to the
// temporary file. A long-running writer (regcheck watch) so keeps one
// decoded copy and makes little garbage per write. Use a File through a
// pointer, and Close it when done.
type File struct {
	Path string
	// LockRetry is how often a blocked Update retries the lock; default 50ms.
	LockRetry time.Duration

	mu   sync.Mutex // guards last; Updates exclude each other by the file lock
	last *written
}

// written is the history an Update wrote, and the file it wrote, held
// open so that its inode is not reused while it is compared.
type written struct {
	h    *History
	file *os.File
	size int64
	mod  time.Time
}

var _ Store = (*File)(nil)

// Load reads the history without taking the lock; the rename makes every
// read see a complete file.
func (f *File) Load(ctx context.Context) (*History, error) {
	return f.read()
}

// Close forgets the history the last Update wrote and closes its file.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forget()
}

func (f *File) forget() error {
	if f.last == nil {
		return nil
	}
	err := f.last.file.Close()
	f.last = nil
	return err
}

func (f *File) read() (*History, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return NewHistory(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading history %s: %w", f.Path, err)
	}
	h, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("reading history %s: %w (the file is left as it is)", f.Path, err)
	}
	return h, nil
}

// Update locks the file, loads it, calls fn and writes the result back.
func (f *File) Update(ctx context.Context, fn func(*History) error) (recordresult.UpdateResult, error) {
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return recordresult.UpdateResult{}, fmt.Errorf("creating history folder: %w", err)
	}
	retry := f.LockRetry
	if retry <= 0 {
		retry = 50 * time.Millisecond
	}
	lock := flock.New(f.Path + ".lock")
	ok, err := lock.TryLockContext(ctx, retry)
	if err != nil {
		return recordresult.UpdateResult{}, fmt.Errorf("locking history %s: %w", f.Path, err)
	}
	if !ok {
		return recordresult.UpdateResult{}, fmt.Errorf("locking history %s: lock not acquired", f.Path)
	}
	defer lock.Unlock()
	// A writer killed mid-write left its temporary copy; under the lock
	// no other writer is live, so every such file is stale.
	if err := atomicfile.RemoveStale(f.Path); err != nil {
		return recordresult.UpdateResult{}, fmt.Errorf("removing a killed write's leftovers: %w", err)
	}

	h, err := f.current()
	if err != nil {
		return recordresult.UpdateResult{}, err
	}
	if err := fn(h); err != nil {
		return recordresult.UpdateResult{}, err
	}
	w, err := writeHistory(f.Path, h)
	if err != nil {
		return recordresult.UpdateResult{}, fmt.Errorf("writing history %s: %w", f.Path, err)
	}
	f.mu.Lock()
	f.forget()
	f.last = w
	f.mu.Unlock()
	return recordresult.UpdateResult{}, nil
}

// current is the history in the file, under the lock: the one the last
// Update wrote while the file is still that one, else the file read. Either
// way f forgets it, since the caller changes it: an Update that fails
// reads the file again next time.
func (f *File) current() (*History, error) {
	f.mu.Lock()
	w := f.last
	f.last = nil
	f.mu.Unlock()
	if w != nil {
		defer w.file.Close()
		if w.unchanged(f.Path) {
			return w.h, nil
		}
	}
	return f.read()
}

// unchanged reports whether path is still the file w wrote, as w wrote it.
func (w *written) unchanged(path string) bool {
	now, err := os.Stat(path)
	if err != nil {
		return false
	}
	mine, err := w.file.Stat()
	if err != nil {
		return false
	}
	return os.SameFile(now, mine) && now.Size() == w.size && now.ModTime().Equal(w.mod) &&
		mine.Size() == w.size && mine.ModTime().Equal(w.mod)
}

// writeHistory replaces path with h, indented, as atomicfile.Write does
// (a synced temporary file in the same folder, named as
// atomicfile.RemoveStale expects, renamed over path, then the folder
// synced; a symlink's target is replaced; the file keeps its mode), but
// encodes straight to the temporary file. It returns the file written,
// still open.
func writeHistory(path string, h *History) (w *written, err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode := fs.FileMode(0o600)
	switch fi, err := os.Stat(path); {
	case err == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(tmp, 256<<10)
	if err := encodeIndented(bw, h); err != nil {
		return nil, fmt.Errorf("encoding history: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	fi, err := tmp.Stat()
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	// Make the rename itself durable; not every filesystem can sync a folder.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return &written{h: h, file: tmp, size: fi.Size(), mod: fi.ModTime()}, nil
}
