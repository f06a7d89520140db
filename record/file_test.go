package record

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regcheck/regcheck/results/recordresult"
)

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if p, err := DefaultPath(); err != nil || p != "/state/regcheck/history.json" {
		t.Errorf("DefaultPath() = %q, %v", p, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, err := DefaultPath(); err != nil || p != "/home/u/.local/state/regcheck/history.json" {
		t.Errorf("DefaultPath() = %q, %v", p, err)
	}
}

func TestFileRoundTripAndDiff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &File{Path: filepath.Join(t.TempDir(), "sub", "history.json")}
	h, err := f.Load(ctx)
	if err != nil || len(h.Records) != 0 {
		t.Fatalf("Load of a missing file = %+v, %v", h, err)
	}
	res, err := Save(ctx, f, snap(t0, entry("a", dA), entry("b", dA)))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Previous.Time.IsZero() || len(res.Changes) != 0 {
		t.Errorf("first Save = %+v", res)
	}
	res, err = Save(ctx, f, snap(t0.Add(time.Hour), entry("a", dB), entry("b", dA)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Pod != "a" || res.Changes[0].To != dB {
		t.Errorf("second Save changes = %+v", res.Changes)
	}
	h, err = f.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Records) != 2 {
		t.Errorf("got %d records, want 2", len(h.Records))
	}
	fi, err := os.Stat(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", fi.Mode().Perm())
	}
	// The mode of an existing file is kept.
	if err := os.Chmod(f.Path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(ctx, f, snap(t0.Add(2*time.Hour), entry("a", dB))); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(f.Path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after update %v, want 0640", fi.Mode().Perm())
	}
	// No temporary files are left behind.
	names, _ := filepath.Glob(filepath.Join(filepath.Dir(f.Path), ".history.json.tmp-*"))
	if len(names) != 0 {
		t.Errorf("temporary files left: %v", names)
	}
}

func TestFileCorruptIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"{not json", "", `{"schemaVersion":7,"records":[]}`} {
		t.Run(content, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "history.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			f := &File{Path: path}
			_, err := Save(context.Background(), f, snap(t0, entry("a", dA)))
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("Save over a corrupt file: %v; want an error naming %s", err, path)
			}
			if _, err := f.Load(context.Background()); err == nil {
				t.Errorf("Load of a corrupt file succeeded")
			}
			got, _ := os.ReadFile(path)
			if string(got) != content {
				t.Errorf("corrupt file was changed to %q", got)
			}
		})
	}
}

func TestFileLockHonoursContext(t *testing.T) {
	t.Parallel()
	f := &File{Path: filepath.Join(t.TempDir(), "history.json"), LockRetry: 5 * time.Millisecond}
	hold := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := f.Update(context.Background(), func(*History) error { <-hold; return nil })
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.Update(ctx, func(*History) error { return nil }); err == nil {
		t.Errorf("Update got the lock while another Update held it")
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// uniqueEntry is the entry writer w contributes on round i.
func uniqueEntry(w, i int) recordresult.Entry {
	e := entry(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("sha256:%032x%032x", w, i))
	e.OwnerName = fmt.Sprintf("writer-%d", w)
	return e
}

func TestFileConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	const writers, rounds = 8, 5
	f := &File{Path: filepath.Join(t.TempDir(), "history.json"), LockRetry: time.Millisecond}
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				// Each goroutine uses its own File value, as separate runs would.
				g := &File{Path: f.Path, LockRetry: time.Millisecond}
				if _, err := Save(context.Background(), g, snap(t0.Add(time.Duration(i)*time.Second), uniqueEntry(w, i))); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	h, err := f.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Records) != writers*rounds {
		t.Errorf("got %d records, want %d", len(h.Records), writers*rounds)
	}
}

// TestFileConcurrentProcesses runs this test binary as several processes
// (see TestHelperWriter) that merge into one file at the same time.
func TestFileConcurrentProcesses(t *testing.T) {
	t.Parallel()
	const procs, rounds = 4, 10
	path := filepath.Join(t.TempDir(), "history.json")
	var cmds []*exec.Cmd
	for w := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), "REGCHECK_HELPER_WRITER="+path, "REGCHECK_HELPER_ID="+strconv.Itoa(w), "REGCHECK_HELPER_ROUNDS="+strconv.Itoa(rounds))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer: %v", err)
		}
	}
	h, err := (&File{Path: path}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Records) != procs*rounds {
		t.Errorf("got %d records, want %d", len(h.Records), procs*rounds)
	}
}

func TestHelperWriter(t *testing.T) {
	path := os.Getenv("REGCHECK_HELPER_WRITER")
	if path == "" {
		t.Skip("helper process for TestFileConcurrentProcesses")
	}
	w, _ := strconv.Atoi(os.Getenv("REGCHECK_HELPER_ID"))
	rounds, _ := strconv.Atoi(os.Getenv("REGCHECK_HELPER_ROUNDS"))
	for i := range rounds {
		f := &File{Path: path, LockRetry: time.Millisecond}
		if _, err := Save(context.Background(), f, snap(t0.Add(time.Duration(i)*time.Second), uniqueEntry(w, i))); err != nil {
			t.Fatal(err)
		}
	}
}
