package record

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/regcheck/regcheck/internal/atomicfile"
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
type File struct {
	Path string
	// LockRetry is how often a blocked Update retries the lock; default 50ms.
	LockRetry time.Duration
}

var _ Store = (*File)(nil)

// Load reads the history without taking the lock; the rename makes every
// read see a complete file.
func (f *File) Load(ctx context.Context) (*History, error) {
	return f.read()
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
func (f *File) Update(ctx context.Context, fn func(*History) error) (UpdateResult, error) {
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return UpdateResult{}, fmt.Errorf("creating history folder: %w", err)
	}
	retry := f.LockRetry
	if retry <= 0 {
		retry = 50 * time.Millisecond
	}
	lock := flock.New(f.Path + ".lock")
	ok, err := lock.TryLockContext(ctx, retry)
	if err != nil {
		return UpdateResult{}, fmt.Errorf("locking history %s: %w", f.Path, err)
	}
	if !ok {
		return UpdateResult{}, fmt.Errorf("locking history %s: lock not acquired", f.Path)
	}
	defer lock.Unlock()
	// A writer killed mid-write left its temporary copy; under the lock
	// no other writer is live, so every such file is stale.
	if err := atomicfile.RemoveStale(f.Path); err != nil {
		return UpdateResult{}, fmt.Errorf("removing a killed write's leftovers: %w", err)
	}

	h, err := f.read()
	if err != nil {
		return UpdateResult{}, err
	}
	if err := fn(h); err != nil {
		return UpdateResult{}, err
	}
	data, err := Encode(h, true)
	if err != nil {
		return UpdateResult{}, fmt.Errorf("encoding history: %w", err)
	}
	if err := atomicfile.Write(f.Path, data, 0o600); err != nil {
		return UpdateResult{}, fmt.Errorf("writing history %s: %w", f.Path, err)
	}
	return UpdateResult{}, nil
}
