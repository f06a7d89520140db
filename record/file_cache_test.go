package record

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/atomicfile"
)

// TestEncodeIndentedMatchesEncode: the streamed encoding File writes
// reads back as the history the compact encoding does (so a field added
// to History or its elements and not to the stream fails here), and holds
// each record and transition on a line of its own.
func TestEncodeIndentedMatchesEncode(t *testing.T) {
	t.Parallel()
	exit := int32(137)
	full := benchHistory(3, 4)
	full.Records[0].Volume, full.Records[1].StartedAt = "data", time.Time{}
	full.Transitions[0].LastExitCode, full.Transitions[1].LastExitCode = &exit, nil
	full.Transitions[2].Image = `reg/<a>&"b":latest`
	full.Transitions[3].TemplateChanged = true
	tests := []struct {
		name string
		h    *History
	}{
		{"empty", NewHistory()},
		{"nil records, no schema version", &History{}},
		{"records only", &History{SchemaVersion: 1, Records: full.Records[:2]}},
		{"one transition, no record", &History{SchemaVersion: 1, Transitions: full.Transitions[:1]}},
		{"records and transitions", full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			compact, err := Encode(tt.h, false)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Decode(compact)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := encodeIndented(&got, tt.h); err != nil {
				t.Fatal(err)
			}
			back, err := Decode(got.Bytes())
			if err != nil {
				t.Fatalf("the streamed encoding does not decode: %v\n%s", err, got.Bytes())
			}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("the streamed encoding reads back as\n%+v\nwant\n%+v", back, want)
			}
			lines := strings.Count(got.String(), "\n")
			if items := len(tt.h.Records) + len(tt.h.Transitions); lines > items+8 {
				t.Errorf("%d lines for %d items: not one a line\n%s", lines, items, got.Bytes())
			}
		})
	}
}

// TestFileUpdateSeesOtherWriters: a File that reuses the history it wrote
// still reads the file when anyone else wrote it since, even when the new
// file has the same size and modification time.
func TestFileUpdateSeesOtherWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.json")
	watcher := &File{Path: path}
	defer watcher.Close()
	add := func(f *File, tr Transition) {
		t.Helper()
		if _, err := f.Update(ctx, func(h *History) error { h.AddTransitions(tr); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	add(watcher, benchTransition(1, "", "sha256:a1", 0, at))
	// Another process's File (a record run): a new file, renamed over.
	add(&File{Path: path}, benchTransition(2, "", "sha256:a2", 0, at))
	add(watcher, benchTransition(3, "", "sha256:a3", 0, at))

	// An outside writer replaces the file with one of the same size and
	// modification time: another inode.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	swapped := bytes.Replace(data, []byte(`"sha256:a3"`), []byte(`"sha256:b3"`), 1)
	if len(swapped) != len(data) || bytes.Equal(swapped, data) {
		t.Fatal("the test's swap did not change the file in place")
	}
	if err := atomicfile.Write(path, swapped, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	add(watcher, benchTransition(4, "", "sha256:a4", 0, at))

	// An outside writer rewrites it in place: same inode, new mtime.
	data, _ = os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"sha256:a4"`), []byte(`"sha256:b4"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime().Add(time.Second), fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	add(watcher, benchTransition(5, "", "sha256:a5", 0, at))

	h, err := (&File{Path: path}).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range h.Transitions {
		got = append(got, tr.To)
	}
	want := []string{"sha256:a1", "sha256:a2", "sha256:b3", "sha256:b4", "sha256:a5"}
	if !slices.Equal(got, want) {
		t.Errorf("transitions in the file: %v, want %v", got, want)
	}
}

// TestFileUpdateFailedFnRereads: fn changes the history it is given; when
// it fails nothing is written, and the next Update does not start from
// the changed history.
func TestFileUpdateFailedFnRereads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &File{Path: filepath.Join(t.TempDir(), "history.json")}
	defer f.Close()
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	if _, err := f.Update(ctx, func(h *History) error { h.AddTransitions(benchTransition(1, "", "sha256:a1", 0, at)); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Update(ctx, func(h *History) error {
		h.AddTransitions(benchTransition(2, "", "sha256:lost", 0, at))
		return os.ErrInvalid
	}); err == nil {
		t.Fatal("Update returned nil for a failing fn")
	}
	var n int
	if _, err := f.Update(ctx, func(h *History) error { n = len(h.Transitions); return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("after a failed fn the history had %d transitions, want 1", n)
	}
}

// TestFileReusedConcurrentProcesses: several processes each keep one File
// (as regcheck watch does) and update the same file, interleaved; nothing
// any of them wrote is lost.
func TestFileReusedConcurrentProcesses(t *testing.T) {
	t.Parallel()
	const procs, rounds = 4, 25
	path := filepath.Join(t.TempDir(), "history.json")
	var cmds []*exec.Cmd
	for w := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReusedWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), "REGCHECK_REUSED_WRITER="+path, "REGCHECK_HELPER_ID="+strconv.Itoa(w), "REGCHECK_HELPER_ROUNDS="+strconv.Itoa(rounds))
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
	if len(h.Records) != procs*rounds || len(h.Transitions) != procs*rounds {
		t.Errorf("got %d records and %d transitions, want %d of each", len(h.Records), len(h.Transitions), procs*rounds)
	}
}

func TestHelperReusedWriter(t *testing.T) {
	path := os.Getenv("REGCHECK_REUSED_WRITER")
	if path == "" {
		t.Skip("helper process for TestFileReusedConcurrentProcesses")
	}
	w, _ := strconv.Atoi(os.Getenv("REGCHECK_HELPER_ID"))
	rounds, _ := strconv.Atoi(os.Getenv("REGCHECK_HELPER_ROUNDS"))
	f := &File{Path: path, LockRetry: time.Millisecond}
	defer f.Close()
	for i := range rounds {
		e := uniqueEntry(w, i)
		tr := benchTransition(w*1000+i, "", e.Digest, 0, e.Time)
		if _, err := f.Update(context.Background(), func(h *History) error {
			h.Merge(snap(t0.Add(time.Duration(i)*time.Second), e))
			h.AddTransitions(tr)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
