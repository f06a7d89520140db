package pullpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnreadableFiles: what --registries-config names, and the drop-ins
// and hosts.toml files in its folders, are read only if they are regular
// files of at most inputfile.MaxConfig bytes (before: /dev/zero ran out of
// memory and a named pipe blocked forever). The file named is an error; a
// drop-in is skipped with a notice; a host folder's hosts.toml is that
// host's error.
func TestUnreadableFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		// files are written, then special is made a FIFO, a symlink to
		// /dev/zero or a sparse file past the cap.
		files   map[string]string
		special string
		kind    string
		load    string
		// err: Load fails naming it; notice: a notice names it; host: the
		// host's endpoints fail naming it.
		err, notice, host string
	}{
		{name: "registries.conf a named pipe", special: "registries.conf", kind: "fifo", load: "registries.conf",
			err: "registries.conf: a named pipe, not a regular file"},
		{name: "registries.yaml a symlink to /dev/zero", special: "registries.yaml", kind: "zero", load: "registries.yaml",
			err: "registries.yaml: a character device, not a regular file"},
		{name: "registries.conf larger than the cap", special: "registries.conf", kind: "big", load: "registries.conf",
			err: "registries.conf: larger than 16 MiB"},
		{name: "a drop-in a named pipe", files: map[string]string{"registries.conf": regTable("src.example", "src.example")},
			special: "registries.conf.d/10-fifo.conf", kind: "fifo", load: "registries.conf",
			notice: "10-fifo.conf: a named pipe, not a regular file: the drop-in is skipped"},
		{name: "hosts.toml a symlink to /dev/zero", files: map[string]string{"certs.d/other.example/hosts.toml": "server = \"https://other.example\"\n"},
			special: "certs.d/src.example/hosts.toml", kind: "zero", load: "certs.d",
			err: "hosts.toml: a character device, not a regular file"},
		// Before: a registry-error at each pull, "run again when it answers".
		{name: "hosts.toml a symlink loop", files: map[string]string{"certs.d/other.example/hosts.toml": "server = \"https://other.example\"\n"},
			special: "certs.d/src.example/hosts.toml", kind: "loop", load: "certs.d",
			err: "hosts.toml: too many levels of symbolic links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			makeSpecial(t, filepath.Join(root, tc.special), tc.kind)
			c, err := Load(filepath.Join(root, tc.load))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Load: %v; want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if tc.notice != "" {
				var got []string
				for _, n := range c.Notices() {
					got = append(got, n.Path+": "+n.Message)
				}
				if !strings.Contains(strings.Join(got, "\n"), tc.notice) {
					t.Fatalf("notices %q lack %q", got, tc.notice)
				}
			}
			if tc.host != "" {
				_, err := c.Endpoints(mustRef(t, "src.example/app:v1"))
				if err == nil || !strings.Contains(err.Error(), tc.host) {
					t.Fatalf("Endpoints: %v; want an error containing %q", err, tc.host)
				}
			}
		})
	}
}

// makeSpecial makes path a FIFO ("fifo"), a symlink to /dev/zero ("zero"),
// a symlink to itself ("loop")
// or a sparse file one byte past 16 MiB ("big").
func makeSpecial(t *testing.T, path, kind string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case "fifo":
		err = syscall.Mkfifo(path, 0o600)
	case "zero":
		err = os.Symlink("/dev/zero", path)
	case "loop":
		err = os.Symlink(path, path)
	case "big":
		var f *os.File
		if f, err = os.Create(path); err == nil {
			err = f.Truncate(16<<20 + 1)
			f.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestRegistriesConfRewriteErrors: a CRI-O location no reference can be
// rewritten to (userinfo, a port that is not a number) is a *ParseError at
// its line, redacted (before: Load took it, and every pull it matched was
// a registry-error, "run again when it answers").
func TestRegistriesConfRewriteErrors(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		line       int
		want       string
	}{
		{"userinfo in a location", "[[registry]]\nprefix = \"src.example\"\nlocation = \"u:s3cr3t@src.example\"\n", 1,
			`location "redacted@src.example": no reference can be rewritten to it`},
		{"a mirror's port", "[[registry]]\nprefix = \"src.example\"\nlocation = \"src.example\"\n\n[[registry.mirror]]\nlocation = \"m.example:notaport/x\"\n", 5,
			`mirror location "m.example:notaport/x": no reference can be rewritten to it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, map[string]string{"registries.conf": tc.conf})
			_, err := Load(filepath.Join(root, "registries.conf"))
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tc.line || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("Load: %v; want a *ParseError at line %d saying %q, redacted", err, tc.line, tc.want)
			}
		})
	}
}
