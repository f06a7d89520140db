package yamlfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileSize is the largest manifest file (or standard input) read: a
// manifest this large is not one anybody reviews, and reading stops here
// whatever a file claims to be.
const MaxFileSize = 16 << 20

// ReadFile reads a manifest file, only if it is a regular file (a symlink
// is followed only to one) of at most MaxFileSize bytes. A named pipe, a
// device, a socket, a folder or a symlink to any of them, or to nothing, is
// not opened: the result is a *SkipError wrapping ErrNotRegular, so that
// "-f" on a symlink to /dev/zero or on a FIFO never blocks or reads
// forever. A larger file is an *fs.PathError wrapping ErrTooLarge.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if lfi, lerr := os.Lstat(path); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 && errors.Is(err, fs.ErrNotExist) {
			return nil, &SkipError{File: path, Reason: "a symlink to nothing", Err: ErrNotRegular}
		}
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path become a FIFO after the Stat, opening it
	// does not wait for a writer; the Stat of the open file then refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	return readCapped(path, f)
}

// regular refuses what is not a regular file.
func regular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		if fi.Size() > MaxFileSize {
			return &fs.PathError{Op: "read", Path: path, Err: ErrTooLarge}
		}
		return nil
	}
	return &SkipError{File: path, Reason: fileKind(fi.Mode()), Err: ErrNotRegular}
}

// readCapped reads r to its end, failing beyond MaxFileSize bytes (a file
// that grew since its Stat, standard input).
func readCapped(name string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrTooLarge}
	}
	return data, nil
}

// fileKind says what a file that is not regular is, for a notice.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder, not a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe, not a regular file"
	case m&fs.ModeCharDevice != 0:
		return "a character device, not a regular file"
	case m&fs.ModeDevice != 0:
		return "a device, not a regular file"
	case m&fs.ModeSocket != 0:
		return "a socket, not a regular file"
	}
	return fmt.Sprintf("not a regular file (mode %s)", m)
}
