package inputfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	big := filepath.Join(dir, "big.json")
	fifo := filepath.Join(dir, "fifo")
	dangling := filepath.Join(dir, "dangling")
	zero := filepath.Join(dir, "zero")
	if err := os.WriteFile(small, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 2<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "none"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		is         error
		msg        string
	}{
		{"a regular file", small, nil, ""},
		{"larger than the cap", big, ErrTooLarge, big + ": larger than 2 MiB"},
		{"a named pipe does not block", fifo, ErrNotRegular, fifo + ": a named pipe, not a regular file"},
		{"a symlink to /dev/zero is not read", zero, ErrNotRegular, zero + ": a character device, not a regular file"},
		{"a symlink to nothing", dangling, ErrNotRegular, dangling + ": a symlink to nothing, not a regular file"},
		{"a folder", dir, ErrNotRegular, dir + ": a folder, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Read(tc.path, 2<<20)
			if tc.is == nil {
				if err != nil || string(data) != "{}" {
					t.Fatalf("Read = %q, %v", data, err)
				}
				return
			}
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Read: %v; want %v saying %q", err, tc.is, tc.msg)
			}
		})
	}
}
