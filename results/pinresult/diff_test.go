package pinresult

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffMatchesDiffU compares Diff with the system's diff -u (GNU
// diffutils). Without one the test fails rather than skips: a skip would
// pass having compared nothing. CI (.ci/run) runs on Debian, where
// diffutils is installed by default.
func TestDiffMatchesDiffU(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("diff")
	if err != nil {
		t.Fatalf("diff -u is the reference Diff is checked against: install GNU diffutils (%v)", err)
	}
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	num := func(i int) string { return fmt.Sprint("line ", i) }
	tests := []struct{ name, old, new string }{
		{"one change", "a\nb\nc\n", "a\nB\nc\n"},
		{"add at start", "a\nb\n", "x\na\nb\n"},
		{"delete at end", "a\nb\nc\n", "a\nb\n"},
		{"from empty", "", "a\nb\n"},
		{"to empty", "a\nb\n", ""},
		{"old lacks newline", "a\nb", "a\nb\n"},
		{"new lacks newline", "a\nb\n", "a\nb"},
		{"both lack newline", "a\nb\nc", "a\nB\nc"},
		{"change last, no newline", "a\nb\nc\nd\ne", "a\nb\nc\nd\nE"},
		{"crlf", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"},
		{"far apart", lines(30, num), lines(30, func(i int) string {
			if i == 3 || i == 25 {
				return "changed"
			}
			return num(i)
		})},
		{"gap of six merges", lines(20, num), lines(20, func(i int) string {
			if i == 5 || i == 12 {
				return "changed"
			}
			return num(i)
		})},
		{"gap of seven splits", lines(20, num), lines(20, func(i int) string {
			if i == 5 || i == 13 {
				return "changed"
			}
			return num(i)
		})},
		{"replace block", lines(10, num), lines(4, num) + "x\ny\n" + lines(10, num)[len(lines(7, num)):]},
	}
	ins, _ := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	for _, in := range ins {
		old, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		new, err := os.ReadFile(strings.TrimSuffix(in, ".in.yaml") + ".golden.yaml")
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct{ name, old, new string }{filepath.Base(in), string(old), string(new)})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			if err := os.WriteFile(a, []byte(tt.old), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(b, []byte(tt.new), 0o644); err != nil {
				t.Fatal(err)
			}
			want, err := exec.Command(bin, "-u", "--label", "a/x.yaml", "--label", "b/x.yaml", a, b).Output()
			if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
				t.Fatal(err)
			}
			got := Diff("x.yaml", []byte(tt.old), []byte(tt.new))
			if !bytes.Equal(got, want) {
				t.Errorf("Diff:\n%s\ndiff -u:\n%s", got, want)
			}
		})
	}
}

func TestDiffEqual(t *testing.T) {
	t.Parallel()
	if d := Diff("x", []byte("a\n"), []byte("a\n")); d != nil {
		t.Errorf("Diff of equal inputs = %q", d)
	}
}
