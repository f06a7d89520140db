//go:build unix

package yamlfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadFile: only regular files (or symlinks to one) up to MaxFileSize
// are read; the rest is a notice (a *SkipError wrapping ErrNotRegular) and
// is never opened for reading, so a FIFO or /dev/zero cannot hang the run.
func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pod := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(pod, []byte("kind: Pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileSize+1); err != nil { // sparse: no 16 MiB written
		t.Fatal(err)
	}
	atCap := filepath.Join(dir, "cap.yaml")
	if err := os.WriteFile(atCap, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(atCap, MaxFileSize); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"pod-link.yaml":  "pod.yaml",
		"zero.yaml":      "/dev/zero",
		"fifo-link.yaml": "fifo.yaml",
		"dangling.yaml":  "nowhere.yaml",
		"dir.yaml":       ".",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		path    string
		want    string // content, when read
		skip    bool   // a notice
		tooBig  bool
		missing bool
	}{
		{"regular file", pod, "kind: Pod\n", false, false, false},
		{"symlink to a regular file", filepath.Join(dir, "pod-link.yaml"), "kind: Pod\n", false, false, false},
		{"exactly the cap", atCap, "", false, false, false},
		{"symlink to /dev/zero", filepath.Join(dir, "zero.yaml"), "", true, false, false},
		{"/dev/zero itself", "/dev/zero", "", true, false, false},
		{"FIFO", fifo, "", true, false, false},
		{"symlink to a FIFO", filepath.Join(dir, "fifo-link.yaml"), "", true, false, false},
		{"symlink to nothing", filepath.Join(dir, "dangling.yaml"), "", true, false, false},
		{"symlink to a folder", filepath.Join(dir, "dir.yaml"), "", true, false, false},
		{"over the cap", big, "", false, true, false},
		{"missing", filepath.Join(dir, "missing.yaml"), "", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				data, err := ReadFile(tc.path)
				done <- result{data, err}
			}()
			var got result
			select {
			case got = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("ReadFile(%s) blocked", tc.path)
			}
			var skip *SkipError
			switch {
			case tc.skip:
				if !errors.As(got.err, &skip) || !errors.Is(got.err, ErrNotRegular) || skip.File != tc.path || got.data != nil {
					t.Errorf("got %d bytes, %v (%T); want a *SkipError naming %s", len(got.data), got.err, got.err, tc.path)
				}
			case tc.tooBig:
				var pe *fs.PathError
				if !errors.Is(got.err, ErrTooLarge) || !errors.As(got.err, &pe) || pe.Path != tc.path || errors.As(got.err, &skip) {
					t.Errorf("got %v (%T); want ErrTooLarge naming %s, not a notice", got.err, got.err, tc.path)
				}
			case tc.missing:
				if !errors.Is(got.err, fs.ErrNotExist) || errors.As(got.err, &skip) {
					t.Errorf("got %v; want not-exist, not a notice", got.err)
				}
			default:
				if got.err != nil || (tc.want != "" && string(got.data) != tc.want) {
					t.Errorf("got %q, %v; want %q", got.data, got.err, tc.want)
				}
			}
		})
	}
}

// TestFindSkipsWhatIsNotRegular: a FIFO or a symlink to /dev/zero in a tree
// is a notice naming it; the walk goes on to the other files.
func TestFindSkipsWhatIsNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("kind: Pod\nspec:\n  containers:\n    - name: c\n      image: nginx:1.27\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "b.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var (
		imgs []Image
		errs []error
	)
	go func() {
		imgs, errs = Find([]string{dir})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Find blocked")
	}
	if len(imgs) != 1 || imgs[0].Ref != "nginx:1.27" {
		t.Errorf("images %+v", imgs)
	}
	var skipped []string
	for _, err := range errs {
		var skip *SkipError
		if !errors.As(err, &skip) {
			t.Errorf("error %v is not a notice", err)
			continue
		}
		skipped = append(skipped, filepath.Base(skip.File)+": "+skip.Reason)
	}
	want := []string{"b.yaml: a named pipe, not a regular file", "c.yaml: a character device, not a regular file"}
	if len(skipped) != 2 || skipped[0] != want[0] || skipped[1] != want[1] {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
}
