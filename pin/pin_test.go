package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/yamlfile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeLookup pins every reference to a digest derived from its name and
// tag, and leaves private.example.com alone, as a registry would say
// "not found" for it.
func fakeLookup(img yamlfile.Image) (string, bool, error) {
	if strings.Contains(img.Ref, "private.example.com") {
		return "", false, nil
	}
	return fakeDigest(img.Ref), true, nil
}

func fakeDigest(ref string) string {
	// Key on the normalized name and tag: nginx is nginx:latest.
	ref, _, _ = strings.Cut(ref, "@")
	if r, err := imageref.Parse(ref); err == nil {
		ref = r.Normalized()
	}
	sum := sha256.Sum256([]byte(ref))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// optionsFor picks the options of a golden case from its file name.
func optionsFor(file string) []Option {
	switch {
	case strings.HasPrefix(file, "update"):
		return []Option{WithUpdate()}
	case strings.HasPrefix(file, "policy"):
		return []Option{WithPullPolicy("IfNotPresent")}
	}
	return nil
}

// nameFor is the file name a golden case is rewritten under:
// kustomization.in.yaml is parsed as kustomization.yaml.
func nameFor(in string) string {
	return strings.TrimSuffix(filepath.Base(in), ".in.yaml") + ".yaml"
}

func TestRewriteGolden(t *testing.T) {
	t.Parallel()
	ins, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range ins {
		base := strings.TrimSuffix(in, ".in.yaml")
		t.Run(filepath.Base(base), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			name := nameFor(in)
			opts := optionsFor(filepath.Base(in))
			out, changes, err := Rewrite(name, data, fakeLookup, opts...)
			if err != nil {
				t.Fatalf("Rewrite: %v", err)
			}
			var log strings.Builder
			for _, c := range changes {
				log.WriteString(c.String() + "\n")
			}
			golden(t, base+".golden.yaml", out)
			golden(t, base+".changes.txt", []byte(log.String()))

			// Idempotent: a second pass changes nothing.
			again, changes2, err := Rewrite(name, out, fakeLookup, opts...)
			if err != nil {
				t.Fatalf("second Rewrite: %v", err)
			}
			if !bytes.Equal(again, out) {
				t.Errorf("second Rewrite changed the file:\n%s", pinresult.Diff(name, out, again))
			}
			for _, c := range changes2 {
				if c.Skipped == "" {
					t.Errorf("second Rewrite made a change: %v", c)
				}
			}
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update):\n%s", path, pinresult.Diff(path, want, got))
	}
}

func TestRewriteErrors(t *testing.T) {
	t.Parallel()
	errLookup := func(yamlfile.Image) (string, bool, error) { return "", false, errors.New("registry down") }
	badDigest := func(yamlfile.Image) (string, bool, error) { return "sha256:nothex", true, nil }
	pod := []byte("kind: Pod\nspec:\n  containers:\n  - image: nginx:1\n")
	tests := []struct {
		name    string
		data    []byte
		lookup  Lookup
		opts    []Option
		wantErr string
		skip    bool
	}{
		{"broken.yaml", []byte("kind: Pod\nspec: [\n"), fakeLookup, nil, "broken.yaml:2: ", false},
		{"helm.yaml", []byte("kind: Pod\nmetadata:\n  name: {{ .Release.Name }}\n"), fakeLookup, nil, "helm.yaml: skipped", true},
		{"lookup.yaml", pod, errLookup, nil, "lookup.yaml:4: looking up nginx:1: registry down", false},
		{"digest.yaml", pod, badDigest, nil, `lookup.yaml:4: lookup of nginx:1 gave digest "sha256:nothex"`[len("lookup.yaml"):], false},
		{"policy.yaml", pod, fakeLookup, []Option{WithPullPolicy("Sometimes")}, `pull policy "Sometimes"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, changes, err := Rewrite(tt.name, tt.data, tt.lookup, tt.opts...)
			if err == nil {
				t.Fatalf("no error; changes %v", changes)
			}
			if out != nil || changes != nil {
				t.Errorf("output with an error: %q %v", out, changes)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
			var skip *yamlfile.SkipError
			if errors.As(err, &skip) != tt.skip {
				t.Errorf("error %v: SkipError %v, want %v", err, !tt.skip, tt.skip)
			}
		})
	}
}

func TestRewriteNoChange(t *testing.T) {
	t.Parallel()
	data := []byte("kind: ConfigMap\ndata:\n  image: nginx\n")
	out, changes, err := Rewrite("cm.yaml", data, fakeLookup)
	if err != nil || !bytes.Equal(out, data) || len(changes) != 0 {
		t.Errorf("Rewrite = %q, %v, %v; want the input unchanged", out, changes, err)
	}
}

func TestWithDigest(t *testing.T) {
	t.Parallel()
	const d = "sha256:abc"
	tests := []struct{ ref, want string }{
		{"nginx", "nginx:latest@sha256:abc"},
		{"nginx:1.25", "nginx:1.25@sha256:abc"},
		{"localhost:5000/app", "localhost:5000/app:latest@sha256:abc"},
		{"localhost:5000/app:v1", "localhost:5000/app:v1@sha256:abc"},
		{"docker.io/library/nginx:1.25@sha256:old", "docker.io/library/nginx:1.25@sha256:abc"},
		{"nginx@sha256:old", "nginx@sha256:abc"},
	}
	for _, tt := range tests {
		if got := withDigest(tt.ref, d); got != tt.want {
			t.Errorf("withDigest(%q) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	imgs, errs := yamlfile.Find([]string{filepath.Join("testdata", "handwritten.in.yaml")})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, img := range Check(imgs) {
		got = append(got, img.Container)
	}
	want := []string{"plain", "single", "double", "tagged", "invalid", "block", "anchored", "aliased", "escaped"}
	if !slices.Equal(got, want) {
		t.Errorf("Check = %v, want %v", got, want)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink("a.yaml", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink replaced: %v %v", fi.Mode(), err)
	}
	got, _ := os.ReadFile(path)
	fi, _ = os.Stat(path)
	if string(got) != "new\n" || fi.Mode().Perm() != 0o640 {
		t.Errorf("file = %q mode %v, want \"new\\n\" 0640", got, fi.Mode().Perm())
	}
	// Equal bytes: no write at all (the mtime stays).
	old := fi.ModTime()
	if err := os.Chtimes(path, old.Add(-3600e9), old.Add(-3600e9)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(old.Add(-3600e9)) {
		t.Errorf("file rewritten with equal bytes")
	}
	if err := WriteFile(filepath.Join(dir, "new.yaml"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("left temporary files: %v", entries)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x.yaml"), []byte("x")); err == nil {
		t.Errorf("WriteFile into a missing folder succeeded")
	}
}

// A reference with space around it (a quoted " nginx:1") is no image
// Kubernetes accepts. imageref ignores the space; pin must not: such a
// reference is invalid, never edited and never counted pinned.
func TestSpacedReference(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("a", 64)
	for _, ref := range []string{" nginx:1", "nginx:1 ", "\tnginx@" + d, " nginx:1@" + d + " "} {
		t.Run(ref, func(t *testing.T) {
			t.Parallel()
			if pinresult.Pinned(ref) || wants(ref, true) {
				t.Errorf("Pinned %v, wants %v; want neither", pinresult.Pinned(ref), wants(ref, true))
			}
			data := fmt.Sprintf("kind: Pod\nspec:\n  containers:\n    - name: c\n      image: %q\n", ref)
			out, changes, err := Rewrite("pod.yaml", []byte(data), fakeLookup, WithUpdate())
			if err != nil || string(out) != data || len(changes) != 0 {
				t.Errorf("Rewrite: %v, changes %v:\n%s", err, changes, out)
			}
			path := filepath.Join(t.TempDir(), "pod.yaml")
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Run(t.Context(), []string{path}, Config{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("%q is not a valid image reference: invalid reference format", ref)
			if len(r.Findings) != 1 || r.Findings[0].Kind != pinresult.KindInvalid || r.Findings[0].Message != want {
				t.Errorf("findings %v, want one %s: %s", r.Findings, pinresult.KindInvalid, want)
			}
		})
	}
}

// TestRewriteImageVolumeChanges: a change to an image volume's reference
// or pullPolicy names the volume, not a container.
func TestRewriteImageVolumeChanges(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "policy-imagevolumes.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, changes, err := Rewrite("serve.yaml", data, fakeLookup, WithPullPolicy("IfNotPresent"))
	if err != nil {
		t.Fatal(err)
	}
	type who struct {
		line                     int
		field, container, volume string
	}
	var got []who
	for _, c := range changes {
		got = append(got, who{c.Line, c.Field, c.Container, c.Volume})
	}
	want := []who{
		{13, "image", "server", ""},
		{21, "image", "", "weights"},
		{22, "pullPolicy", "", "weights"},
		{24, "image", "", "tokenizer"},
		{43, "image", "trainer", ""},
		{47, "image", "", "data"},
		{50, "image", "", "data-again"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes:\n got %+v\nwant %+v", got, want)
	}
}
