package admission

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/yamlfile"
)

// policyAndDeployment is a ClusterPolicy and a Deployment named name: a
// file the policy reader and the image reader both find something in.
func policyAndDeployment(name string) string {
	return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: ` + name + `}
spec:
  rules:
  - name: verify
    match: {any: [{resources: {kinds: [Pod]}}]}
    verifyImages:
    - imageReferences: ["*"]
      failureAction: Enforce
      attestors: [{entries: [{keys: {publicKeys: k}}]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec: {template: {spec: {containers: [{name: c, image: registry.example.com/` + name + `:1}]}}}
`
}

// TestReadFilesReadsWhatFindReads: on a tree with a dot folder, a
// symlinked file and folder, a dangling symlink, a file over the size
// limit, a file that is not YAML and one that is not named .yaml, the
// policy reader takes its policies from exactly the files the image
// reader finds images in, and notes exactly the files the image reader
// fails on, as notices (the image reader reports them as input errors).
func TestReadFilesReadsWhatFindReads(t *testing.T) {
	dir := t.TempDir()
	root, outside := filepath.Join(dir, "root"), filepath.Join(dir, "outside")
	write := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "a.yaml"), policyAndDeployment("a"))
	write(filepath.Join(root, ".hidden", "h.yaml"), policyAndDeployment("h"))
	write(filepath.Join(root, "notes.txt"), policyAndDeployment("t"))
	write(filepath.Join(root, "bad.yml"), "kyverno.io: [\n")
	write(filepath.Join(outside, "l.yaml"), policyAndDeployment("l"))
	write(filepath.Join(outside, "dir", "d.yaml"), policyAndDeployment("d"))
	link(filepath.Join(outside, "l.yaml"), filepath.Join(root, "link.yaml"))
	link(filepath.Join(outside, "dir"), filepath.Join(root, "linkdir"))
	link(filepath.Join(outside, "none.yaml"), filepath.Join(root, "dangling.yaml"))
	big := filepath.Join(root, "big.yaml")
	write(big, policyAndDeployment("big"))
	if err := os.Truncate(big, yamlfile.MaxFileSize+1); err != nil { // sparse: no 16 MiB written
		t.Fatal(err)
	}

	imgs, errs := yamlfile.Find([]string{root})
	ps, problems := ReadFiles([]string{root})

	var imageFiles, imageFailed, policyFiles, policyFailed []string
	for _, im := range imgs {
		imageFiles = append(imageFiles, im.File)
	}
	for _, err := range errs {
		imageFailed = append(imageFailed, fileOf(err))
	}
	for _, r := range ps.Rules {
		f, _, _ := strings.Cut(r.Source, ":")
		policyFiles = append(policyFiles, f)
	}
	for _, p := range problems {
		policyFailed = append(policyFailed, p.Source)
		if p.Warning {
			t.Errorf("problem %+v is a warning; want a notice, the image reader reports the file", p)
		}
	}
	in := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(root, n))
		}
		return out
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"files the image reader found images in", imageFiles, in("a.yaml", "link.yaml")},
		{"files policies were read from", policyFiles, in("a.yaml", "link.yaml")},
		{"files the image reader failed on", imageFailed, in("bad.yml", "big.yaml", "dangling.yaml")},
		{"files the policy reader noted", policyFailed, in("bad.yml", "big.yaml", "dangling.yaml")},
	} {
		got := slices.Compact(slices.Sorted(slices.Values(c.got)))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
}

// fileOf is the file an image reader error names.
func fileOf(err error) string {
	var (
		skip  *yamlfile.SkipError
		parse *yamlfile.ParseError
		pe    *fs.PathError
	)
	switch {
	case errors.As(err, &skip):
		return skip.File
	case errors.As(err, &parse):
		return parse.File
	case errors.As(err, &pe):
		return pe.Path
	}
	return err.Error()
}

// A policy whose rules hold a non-string key (`- 1: x`) is a problem at
// its file and line, and the run goes on: it used to panic in client-go's
// unstructured deep copy and end the scan with no report.
func TestReadFilesNonStringKey(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"kyverno.yaml":  "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec:\n  rules:\n  - 1: x\n",
		"sigstore.yaml": "apiVersion: policy.sigstore.dev/v1beta1\nkind: ClusterImagePolicy\nmetadata: {name: c}\nspec:\n  images:\n  - {glob: '*'}\n  authorities:\n  - 2: y\n",
		"good.yaml":     policyAndDeployment("good"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ps, problems := ReadFiles([]string{dir})
	got := map[string]int{}
	for _, p := range problems {
		if strings.Contains(p.Message, "not a string") {
			got[filepath.Base(p.Source)] = p.Line
		}
	}
	if want := map[string]int{"kyverno.yaml": 6, "sigstore.yaml": 8}; !maps.Equal(got, want) {
		t.Errorf("problems at %v, want %v (all: %+v)", got, want, problems)
	}
	if len(ps.Rules) != 1 {
		t.Errorf("%d rules read, want the good policy's 1", len(ps.Rules))
	}
}
