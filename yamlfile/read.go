package yamlfile

import (
	"errors"
	"io"
	"io/fs"

	"github.com/regcheck/regcheck/internal/inputfile"
)

// MaxFileSize is the largest manifest file (or standard input) read: a
// manifest this large is not one anybody reviews, and reading stops here
// whatever a file claims to be.
const MaxFileSize = 16 << 20

// ReadFile reads a manifest file, only if it is a regular file (a symlink
// is followed only to one) of at most MaxFileSize bytes, as
// internal/inputfile reads every file a flag names. A named pipe, a
// device, a socket, a folder or a symlink to any of them, or to nothing, is
// not opened: the result is a *SkipError wrapping ErrNotRegular, so that
// "-f" on a symlink to /dev/zero or on a FIFO never blocks or reads
// forever. A larger file is an *fs.PathError wrapping ErrTooLarge.
func ReadFile(path string) ([]byte, error) {
	data, err := inputfile.Read(path, MaxFileSize)
	var nr *inputfile.NotRegularError
	switch {
	case errors.As(err, &nr):
		reason := nr.Kind + ", not a regular file"
		if nr.Kind == "a symlink to nothing" {
			reason = nr.Kind
		}
		return nil, &SkipError{File: path, Reason: reason, Err: ErrNotRegular}
	case errors.Is(err, inputfile.ErrTooLarge):
		return nil, &fs.PathError{Op: "read", Path: path, Err: ErrTooLarge}
	}
	return data, err
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
