//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
)

// runCmd runs regcheck with args on buffers, failing the test rather than
// hanging when the run blocks (on a FIFO, say).
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	}()
	select {
	case code := <-done:
		return code, out.String(), errb.String()
	case <-time.After(30 * time.Second):
		t.Fatalf("regcheck %s blocked", strings.Join(args, " "))
	}
	return 0, "", ""
}

// rawControl returns the first control character in s that could drive a
// terminal (C0 but tab and line feed, DEL, C1), or "".
func rawControl(s string) string {
	for i, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Sprintf("%U at %d", r, i)
		}
	}
	return ""
}

// testRegistry serves an in-memory registry holding host/app:v1.
func testRegistry(t *testing.T) (ref string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref = strings.TrimPrefix(srv.URL, "http://") + "/app:v1"
	pushTest(t, ref, "app")
	return ref
}

func podYAML(image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n      image: " + image + "\n"
}

// A path named on the command line that does not exist is a typo: exit 2,
// naming it (with its control characters made visible).
func TestMissingPathIsUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	dangling := filepath.Join(dir, "dangling.yaml")
	if err := os.Symlink("nowhere.yaml", dangling); err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(dir, "evil\x1b[2J\r.yaml")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"scan -f", []string{"scan", "-f", missing}, "-f " + missing + ": no such file or folder"},
		{"scan -f a symlink to nothing", []string{"scan", "-f", dangling}, "-f " + dangling + ": no such file or folder"},
		{"scan --images-from", []string{"scan", "--images-from", missing}, "--images-from " + missing + ": no such file or folder"},
		{"scan -f with a control character", []string{"scan", "-f", hostile}, "-f " + filepath.Join(dir, `evil\x1b[2J\r.yaml`) + ": no such file or folder"},
		{"pin", []string{"pin", missing}, missing + ": no such file or folder"},
		{"pin --check", []string{"pin", "--check", dir, missing}, missing + ": no such file or folder"},
		{"gc-check -f", []string{"gc-check", "-f", missing}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCmd(t, tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitUsage, out, errs)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("stderr %q lacks %q", errs, tc.stderr)
			}
			if c := rawControl(errs); c != "" {
				t.Errorf("stderr has a raw %s: %q", c, errs)
			}
		})
	}
}

// A file that does not parse is reported in every format, and makes the
// run incomplete (exit 3); a FIFO and a symlink to /dev/zero are notices,
// never read: alone they leave the run clean.
func TestScanInputErrors(t *testing.T) {
	t.Parallel()
	ref := testRegistry(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	for p, c := range map[string]string{good: podYAML(ref), bad: "kind: Pod\nspec: [\n"} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	odd := t.TempDir() // a tree with one good file, a FIFO and a link to /dev/zero
	if err := os.WriteFile(filepath.Join(odd, "good.yaml"), []byte(podYAML(ref)), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(odd, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(odd, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}

	for _, format := range outputFormats() {
		t.Run("unparseable in "+format, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCmd(t, "scan", "-o", format, "-f", good, "-f", bad)
			if code != ExitIncomplete {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitIncomplete, out, errs)
			}
			// Every format names the file; the JSON formats escape its
			// path's slashes no differently from anything else.
			if !strings.Contains(out, "bad.yaml") {
				t.Errorf("%s output does not name bad.yaml:\n%s", format, out)
			}
			if format == "json" {
				var doc report.Document
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatal(err)
				}
				if len(doc.InputErrors) != 1 || doc.InputErrors[0].Source != bad || doc.InputErrors[0].Line != 2 || doc.InputErrors[0].Notice {
					t.Errorf("inputErrors %+v", doc.InputErrors)
				}
			}
		})
	}

	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		notices []string // sources of the notices in -o json
	}{
		{"FIFO and /dev/zero in a tree", []string{"-f", odd}, ExitClean, []string{fifo, zero}},
		{"FIFO named", []string{"-f", filepath.Join(odd, "good.yaml"), "-f", fifo}, ExitClean, []string{fifo}},
		{"symlink to /dev/zero named", []string{"-f", filepath.Join(odd, "good.yaml"), "-f", zero}, ExitClean, []string{zero}},
		{"--images-from a FIFO", []string{"-f", filepath.Join(odd, "good.yaml"), "--images-from", fifo}, ExitClean, []string{fifo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCmd(t, append([]string{"scan", "-o", "json"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			var doc report.Document
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ie := range doc.InputErrors {
				if !ie.Notice || !strings.Contains(ie.Message, "not a regular file") {
					t.Errorf("input error %+v: want a notice that it is not a regular file", ie)
				}
				got = append(got, ie.Source)
			}
			if strings.Join(got, " ") != strings.Join(tc.notices, " ") {
				t.Errorf("notices for %q, want %q", got, tc.notices)
			}
			if len(doc.Images) != 1 || doc.Images[0].Verdict != types.OK {
				t.Errorf("images %+v", doc.Images)
			}
		})
	}

	t.Run("table footer", func(t *testing.T) {
		t.Parallel()
		code, out, errs := runCmd(t, "scan", "-f", odd, "-f", bad)
		if code != ExitIncomplete {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		for _, want := range []string{
			"\nINPUTS NOT READ (1) AND SKIPPED (2)\n",
			"  notice   " + fifo + ": skipped: a named pipe, not a regular file\n",
			"  notice   " + zero + ": skipped: a character device, not a regular file\n",
			"  error    " + bad + ":2: ",
			"; 1 input not read, 2 skipped\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("nothing readable still reports why", func(t *testing.T) {
		t.Parallel()
		code, out, errs := runCmd(t, "scan", "-o", "json", "-f", bad)
		if code != ExitIncomplete || !strings.Contains(errs, "no image references could be read") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		var doc report.Document
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.InputErrors) != 1 || doc.InputErrors[0].Source != bad {
			t.Errorf("%v %+v", err, doc.InputErrors)
		}
	})
}

// A registry's error message with terminal escapes in it reaches the
// table, the GitHub annotations, SARIF and the log escaped, never raw.
func TestScanHostileRegistryMessage(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
		case r.Method == http.MethodHead:
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("a", 64))
			w.Header().Set("Content-Length", "100")
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"errors":[{"code":"DENIED","message":"\u001b[31mPWNED\u001b[0m\r\u001b]0;title\u0007\u009b2J"}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	list := filepath.Join(t.TempDir(), "images.txt")
	if err := os.WriteFile(list, []byte(strings.TrimPrefix(srv.URL, "http://")+"/x:v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ format, want string }{
		{"table", `DENIED: \x1b[31mPWNED\x1b[0m\r\x1b]0;title\x07\u009b2J` + "\n"},
		{"github", `DENIED: \x1b[31mPWNED\x1b[0m\r\x1b]0;title\x07\u009b2J%0A`},
		// SARIF viewers show the message as text: it is escaped before
		// JSON escapes the backslashes.
		{"sarif", `DENIED: \\x1b[31mPWNED\\x1b[0m\\r\\x1b]0;title\\x07\\u009b2J\n`},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCmd(t, "scan", "--log-level", "debug", "-o", tc.format, "--images-from", list)
			if code != ExitIncomplete {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitIncomplete, out, errs)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if c := rawControl(out); c != "" {
				t.Errorf("output has a raw %s:\n%q", c, out)
			}
			if c := rawControl(errs); c != "" {
				t.Errorf("stderr has a raw %s:\n%q", c, errs)
			}
		})
	}
}

// inputError names the file and line of each kind of input problem, and
// tells a notice from an error.
func TestInputError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		source string
		err    error
		want   types.InputError
	}{
		{"parse error", "k8s", &yamlfile.ParseError{File: "k8s/a.yaml", Line: 3, Msg: "bad"},
			types.InputError{Source: "k8s/a.yaml", Line: 3, Message: "bad"}},
		{"Helm template", "k8s", &yamlfile.SkipError{File: "k8s/t.yaml", Reason: "Helm template"},
			types.InputError{Source: "k8s/t.yaml", Message: "skipped: Helm template", Notice: true}},
		{"FIFO", "k8s", &yamlfile.SkipError{File: "k8s/f.yaml", Reason: "a named pipe, not a regular file", Err: yamlfile.ErrNotRegular},
			types.InputError{Source: "k8s/f.yaml", Message: "skipped: a named pipe, not a regular file", Notice: true}},
		{"unreadable", "k8s", &fs.PathError{Op: "open", Path: "k8s/p.yaml", Err: fs.ErrPermission},
			types.InputError{Source: "k8s/p.yaml", Message: "open: permission denied"}},
		{"too large", "big.yaml", &fs.PathError{Op: "read", Path: "big.yaml", Err: yamlfile.ErrTooLarge},
			types.InputError{Source: "big.yaml", Message: yamlfile.ErrTooLarge.Error()}},
		{"a folder that cannot be walked", "k8s", &fs.PathError{Op: "walk", Path: "k8s/sub", Err: fs.ErrPermission},
			types.InputError{Source: "k8s/sub", Message: "permission denied"}},
		{"a long line", "stdin", &lineError{line: 7, err: errors.New("token too long")},
			types.InputError{Source: "stdin", Line: 7, Message: "token too long"}},
		{"stdin by its name", "-", errors.New("boom"), types.InputError{Source: "stdin", Message: "boom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := inputError(tc.source, tc.err); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// pin --write does not write through a symlink that leaves the tree it was
// given: the file outside is untouched, the refusal names the link, the
// other files are written; --follow-symlinks writes through it.
func TestPinWriteSymlinkOutOfTree(t *testing.T) {
	t.Parallel()
	ref := testRegistry(t)
	for _, tc := range []struct {
		name    string
		follow  bool
		code    int
		outside bool // the file outside the tree is pinned
	}{
		{"refused", false, ExitIncomplete, false},
		{"--follow-symlinks", true, ExitClean, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			tree, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
			for _, d := range []string{tree, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			files := map[string]string{
				filepath.Join(tree, "a.yaml"):        podYAML(ref),
				filepath.Join(tree, "target.txt"):    podYAML(ref), // not listed itself: only through in.yaml
				filepath.Join(outside, "other.yaml"): podYAML(ref),
			}
			for p, c := range files {
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// in.yaml stays in the tree; out.yaml leaves it.
			if err := os.Symlink("target.txt", filepath.Join(tree, "in.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..", "outside", "other.yaml"), filepath.Join(tree, "out.yaml")); err != nil {
				t.Fatal(err)
			}
			args := []string{"pin", "--write", tree}
			if tc.follow {
				args = []string{"pin", "--write", "--follow-symlinks", tree}
			}
			code, out, errs := runCmd(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			pinned := func(p string) bool {
				data, err := os.ReadFile(p)
				return err == nil && strings.Contains(string(data), ref+"@sha256:")
			}
			if !pinned(filepath.Join(tree, "a.yaml")) || !pinned(filepath.Join(tree, "target.txt")) {
				t.Errorf("files in the tree not pinned\n%s%s", out, errs)
			}
			if got := pinned(filepath.Join(outside, "other.yaml")); got != tc.outside {
				t.Errorf("file outside the tree pinned: %v, want %v\n%s", got, tc.outside, errs)
			}
			if fi, err := os.Lstat(filepath.Join(tree, "out.yaml")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("out.yaml is no longer a symlink: %v", err)
			}
			refusal := filepath.Join(tree, "out.yaml") + ": unwritable: not written: a symlink to "
			if strings.Contains(errs, refusal) == tc.follow {
				t.Errorf("stderr: refusal %q present %v, want %v:\n%s", refusal, !tc.follow, !tc.follow, errs)
			}
		})
	}
}

// pin reads only regular files: a FIFO in the tree is a notice and the run
// goes on; it never blocks.
func TestPinSkipsFIFO(t *testing.T) {
	t.Parallel()
	pinnedRef := "nginx:1.27@sha256:" + strings.Repeat("0", 64)
	dir := pinTree(t, map[string]string{"pod.yaml": podYAML(pinnedRef)})
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, "pin", "--check", "-o", "json", dir)
	if code != ExitClean {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitClean, out, errs)
	}
	var doc struct {
		Files    int
		Findings []struct{ Kind, File, Message string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Files != 1 || len(doc.Findings) != 1 || doc.Findings[0].Kind != "skipped" || doc.Findings[0].File != fifo {
		t.Errorf("%+v", doc)
	}
	if !strings.Contains(errs, fifo+": skipped: a named pipe, not a regular file\n") {
		t.Errorf("stderr does not name the FIFO:\n%s", errs)
	}
}

// readImageList: a line too long is an error at its line, after the lines
// before it; stdin larger than the cap is not read at all.
func TestReadImageList(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 70_000)
	for _, tc := range []struct {
		name  string
		stdin string
		refs  int
		line  int  // of the error, 0 for none
		big   bool // ErrTooLarge
	}{
		{"comments and blanks", "# list\nnginx:1.27 # web\n\nredis:7\n", 2, 0, false},
		{"a line too long", "nginx:1.27\n" + long + "\nredis:7\n", 1, 2, false},
		{"over the cap", strings.Repeat("nginx:1.27\n", yamlfile.MaxFileSize/11+1), 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readImageList("-", strings.NewReader(tc.stdin))
			if len(got) != tc.refs {
				t.Errorf("%d references, want %d", len(got), tc.refs)
			}
			ie := types.InputError{}
			if err != nil {
				ie = inputError("stdin", err)
			}
			switch {
			case tc.big:
				if !errors.Is(err, yamlfile.ErrTooLarge) || ie.Source != "stdin" {
					t.Errorf("err %v (%+v), want too large", err, ie)
				}
			case tc.line > 0:
				if ie.Line != tc.line || ie.Notice || err == nil {
					t.Errorf("err %v (%+v), want one at line %d", err, ie, tc.line)
				}
			case err != nil:
				t.Errorf("err %v", err)
			}
		})
	}
}

// TestReportWithoutImages: inputs that hold no image reference still get a
// report in every format, naming what was skipped, and the exit code says
// why nothing was checked: 2 when nothing was there, 3 when an input could
// not be read. A huge error is cut to types.MaxMessage bytes.
func TestReportWithoutImages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "templates", "pod.yaml")
	if err := os.MkdirAll(filepath.Dir(tmpl), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmpl, []byte("kind: Pod\nspec:\n  containers:\n  - image: {{ .Values.image }}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(broken, []byte("kind: Pod\nspec: [\n"+strings.Repeat("# a long comment line\n", 10)+"\n: "+strings.Repeat("x", 4000)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range outputFormats() {
		for _, tc := range []struct {
			name, input, names string
			code               int
		}{
			{"only a Helm template", tmpl, "pod.yaml", ExitUsage},
			{"only an unreadable file", broken, "broken.yaml", ExitIncomplete},
		} {
			t.Run(format+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				code, out, errs := runCmd(t, "scan", "-o", format, "-f", tc.input)
				if code != tc.code {
					t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
				}
				if !strings.Contains(out, tc.names) {
					t.Errorf("%s report does not name %s:\n%s", format, tc.names, out)
				}
				if format == "json" {
					var doc report.Document
					if err := json.Unmarshal([]byte(out), &doc); err != nil {
						t.Fatalf("not JSON: %v\n%s", err, out)
					}
					if len(doc.InputErrors) != 1 || len(doc.InputErrors[0].Message) > types.MaxMessage+64 {
						t.Errorf("inputErrors %+v", doc.InputErrors)
					}
				}
			})
		}
	}
}
