package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// The caps, one per kind of input.
const (
	// MaxConfig is the largest configuration read: a policy, a cleanup, a
	// registry configuration or drop-in, a trusted root, a CA bundle.
	MaxConfig = 16 << 20
	// MaxExport is the largest export of a registry's state read (GitHub's
	// package versions, aws ecr describe-images, GitLab's tags, Harbor's
	// artifacts): about 250,000 versions of GitHub's.
	MaxExport = 64 << 20
)

// ErrNotRegular is what a *NotRegularError is: the path is not a regular
// file, nor a symlink to one.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is what a *TooLargeError is.
var ErrTooLarge = errors.New("too large")

// NotRegularError is a path that is a folder, a named pipe, a device, a
// socket or a symlink to nothing: not opened, so that reading it never
// blocks or never ends.
type NotRegularError struct {
	Path string
	// Kind says what it is ("a named pipe").
	Kind string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file", e.Path, e.Kind)
}

// Is makes errors.Is(err, ErrNotRegular) true.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// TooLargeError is a file larger than the cap it was read with.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %d MiB", e.Path, e.Limit>>20)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Read reads path if it is a regular file (a symlink is followed only to
// one) of at most limit bytes, else returns a *NotRegularError or a
// *TooLargeError. Reading stops at the cap whatever the file claims, so a
// file that grows while it is read is refused too.
func Read(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if lfi, lerr := os.Lstat(path); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 && errors.Is(err, fs.ErrNotExist) {
			return nil, &NotRegularError{Path: path, Kind: "a symlink to nothing"}
		}
		return nil, err
	}
	if err := Check(path, fi, limit); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path become a FIFO after the Stat, opening it
	// does not wait for a writer; the Stat of the open file refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := Check(path, fi, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// Check refuses what fi says is not a regular file of at most limit bytes.
func Check(path string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, Kind: Kind(fi.Mode())}
	}
	if fi.Size() > limit {
		return &TooLargeError{Path: path, Limit: limit}
	}
	return nil
}

// Kind says what a file that is not regular is.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("of mode %s", m)
}
