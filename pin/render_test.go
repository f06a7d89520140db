package pin

import (
	stdctx "context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/render"
	"github.com/regcheck/regcheck/results/pinresult"
)

// renderTree is the tree of kustomizations and charts the render tests
// pin, with its registry host.
const renderTree, renderHost = "../integration/testdata/render", "127.0.0.1:5055"

// copyTree copies the folder src into a new folder, with every from in
// its files replaced by to.
func copyTree(t *testing.T, src, from, to string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(b), from, to)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// pushTree pushes an image for each reference the render tree uses but
// gone:v1, and returns their digests by repo:tag.
func pushTree(t *testing.T, host string) map[string]string {
	t.Helper()
	digests := map[string]string{}
	for _, ref := range []string{"shop/app-a:v1", "shop/single:v1", "shop/app-b:v1", "shop/app-b:v2", "shop/multiarch:v2",
		"shop/buildx:v1", "shop/buildx:v2", "shop/manifestlist:v1", "shop/partial:v1-debian"} {
		digests[host+"/"+ref] = pushImage(t, host+"/"+ref, ref)
	}
	return digests
}

// TestRunRendered pins the render tree: each image where it is set, the
// files compared with golden ones; rendered again, every image pinned is
// at its tag's digest; a second run changes nothing.
func TestRunRendered(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	digests := pushTree(t, host)
	dir := copyTree(t, renderTree, renderHost, host)
	values := []render.ValuesFile{{Chart: filepath.Join(dir, "charts", "shop"), File: filepath.Join(dir, "releases", "shop-prod.yaml")}}
	before := snapshotTree(t, dir)
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Write: true, HelmValues: values})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range r.Findings {
		kinds = append(kinds, string(f.Kind)+" "+strings.TrimPrefix(f.File, dir+"/"))
	}
	slices.Sort(kinds)
	if want := []string{"broken charts/worker/values.yaml", "not-edited charts/worker/templates/job.yaml", "not-edited charts/worker/values.yaml"}; !slices.Equal(kinds, want) {
		t.Errorf("findings %q, want %q\n%v", kinds, want, r.Findings)
	}
	after := snapshotTree(t, dir)
	var changed []string
	for p, b := range after {
		if before[p] == b {
			continue
		}
		changed = append(changed, p)
		golden := filepath.Join("testdata", "rendered", p)
		got := strings.ReplaceAll(b, host, renderHost)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s:\n%s", p, pinresult.Diff(p, want, []byte(got)))
		}
	}
	slices.Sort(changed)
	if want := []string{"base/deployment.yaml", "charts/shop/values.yaml", "charts/worker/values.yaml", "overlays/prod/kustomization.yaml",
		"overlays/staging/kustomization.yaml", "plain/cronjob.yaml", "releases/shop-prod.yaml"}; !slices.Equal(changed, want) {
		t.Errorf("changed %q, want %q", changed, want)
	}
	if len(r.Changes) != 9 {
		t.Errorf("%d changes, want 9: %v", len(r.Changes), r.Changes)
	}

	// Rendered again, each image pinned is at its tag's digest.
	again := render.Find(dir, render.WithValues(values...))
	pinned := 0
	for _, a := range again.Apps {
		for _, u := range a.Uses {
			ref, err := imageref.Parse(u.Ref)
			if err != nil {
				t.Fatal(err)
			}
			want := digests[ref.Repo+":"+ref.Tag]
			switch {
			case u.Container == "tools" || u.Container == "shell" || u.Container == "init":
				if ref.Pinned() {
					t.Errorf("%s (%s) was pinned", u.Ref, u.Container)
				}
			case ref.Digest != want || want == "":
				t.Errorf("%s %s: rendered %s, want the digest of %s:%s, %s", a.Dir, u.Container, u.Ref, ref.Repo, ref.Tag, want)
			default:
				pinned++
			}
		}
	}
	if pinned != 9 {
		t.Errorf("%d images pinned, want 9", pinned)
	}

	r, err = Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Write: true, HelmValues: values})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) != 0 || !maps.Equal(snapshotTree(t, dir), after) {
		t.Errorf("a second run changed %v", r.Changes)
	}
	r, err = Run(stdctx.Background(), []string{dir}, Config{Check: true, HelmValues: values})
	if err != nil {
		t.Fatal(err)
	}
	var unpinned []string
	for _, f := range r.Findings {
		unpinned = append(unpinned, string(f.Kind)+" "+strings.TrimPrefix(f.File, dir+"/")+" "+strings.TrimPrefix(f.Ref, host+"/"))
	}
	if want := []string{"unpinned charts/worker/values.yaml shop/gone:v1", "unpinned charts/worker/values.yaml shop/partial:v1-debian",
		"unpinned charts/worker/templates/job.yaml shop/single:v1"}; !slices.Equal(unpinned, want) {
		t.Errorf("--check after: %q, want %q", unpinned, want)
	}
}

func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestValuesEdit: a values key pinned in each form it is written in, and
// nothing else of the file changed.
func TestValuesEdit(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("d", 64)
	for _, tc := range []struct {
		name, in string
		edit     render.Edit
		want     string
	}{
		{"append to a plain tag", "image:\n  tag: v1 # keep\n", render.Edit{Op: render.AppendDigest, Line: 2, Column: 8, Path: "image.tag"},
			"image:\n  tag: v1@" + d + " # keep\n"},
		{"append to a quoted number", "image:\n  tag: \"1.25\"\n", render.Edit{Op: render.AppendDigest, Line: 2, Column: 8, Path: "image.tag"},
			"image:\n  tag: \"1.25@" + d + "\"\n"},
		{"append replaces a digest", "image: 'nginx:1@sha256:" + strings.Repeat("0", 64) + "'\n", render.Edit{Op: render.AppendDigest, Line: 1, Column: 8, Path: "image"},
			"image: 'nginx:1@" + d + "'\n"},
		{"a reference without a tag gains latest", "image: nginx\n", render.Edit{Op: render.AppendDigest, Line: 1, Column: 8, Path: "image", Latest: true},
			"image: nginx:latest@" + d + "\n"},
		{"an empty quoted digest", "image:\n  tag: v1\n  digest: \"\"  # pin\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image:\n  tag: v1\n  digest: \"" + d + "\"  # pin\n"},
		{"a single-quoted empty digest", "image:\n  digest: ''\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image:\n  digest: '" + d + "'\n"},
		{"a null digest", "image:\n  digest: ~\n  tag: v1\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image:\n  digest: " + d + "\n  tag: v1\n"},
		{"an empty digest", "image:\n  digest:\n  tag: v1\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image:\n  digest: " + d + "\n  tag: v1\n"},
		{"an empty digest with a comment", "image:\n  digest:   # pin here\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image:\n  digest: " + d + "   # pin here\n"},
		{"added after the tag", "image:\n  tag: v1   # the tag\n  pullPolicy: Always\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image:\n  tag: v1   # the tag\n  digest: " + d + "\n  pullPolicy: Always\n"},
		{"added after the last key", "app:\n  image:\n    repository: r\n", render.Edit{Op: render.DigestKey, Path: "app.image.digest"},
			"app:\n  image:\n    repository: r\n    digest: " + d + "\n"},
		{"added to a flow mapping", "image: {repository: r, tag: \"v1\", pullPolicy: Always}\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image: {repository: r, tag: \"v1\", digest: " + d + ", pullPolicy: Always}\n"},
		{"CRLF", "image:\r\n  tag: v1\r\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"image:\r\n  tag: v1\r\n  digest: " + d + "\r\n"},
		{"the second document", "a: 1\n---\nimage:\n  tag: v1\n", render.Edit{Op: render.DigestKey, Path: "image.digest"},
			"a: 1\n---\nimage:\n  tag: v1\n  digest: " + d + "\n"},
		{"under a key with a dot", "\"a.b\":\n  digest: \"\"\n", render.Edit{Op: render.DigestKey, Path: `"a.b".digest`},
			"\"a.b\":\n  digest: \"" + d + "\"\n"},
		{"in a list", "images:\n  - tag: v1\n", render.Edit{Op: render.DigestKey, Path: "images[0].digest"},
			"images:\n  - tag: v1\n    digest: " + d + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := valuesEdit("values.yaml", []byte(tc.in), tc.edit, d)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name, in string
		edit     render.Edit
	}{
		{"a block scalar", "image: |\n  nginx\n", render.Edit{Op: render.AppendDigest, Line: 1, Column: 8, Path: "image"}},
		{"moved", "image: nginx\n", render.Edit{Op: render.AppendDigest, Line: 3, Column: 8, Path: "image"}},
		{"no mapping", "image: nginx\n", render.Edit{Op: render.DigestKey, Path: "image.digest"}},
		{"a digest that is a mapping", "image:\n  digest: {a: b}\n", render.Edit{Op: render.DigestKey, Path: "image.digest"}},
		{"a digest that is a list item", "digests:\n  - \"\"\n", render.Edit{Op: render.DigestKey, Path: "digests[0]"}},
		{"a path that does not read back", "image:\n  digest: \"\"\n", render.Edit{Op: render.DigestKey, Path: "image..digest"}},
	} {
		if out, err := valuesEdit("values.yaml", []byte(tc.in), tc.edit, d); err == nil {
			t.Errorf("%s: edited to %q", tc.name, out)
		}
	}
}

// writeFiles writes files (slash-separated paths) under a new folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunRenderedRefuses: what pin leaves as is, and says why: an edit
// that changes more than the image (a tag also in a label), a number tag
// Helm prints otherwise, one key for two digests, a base outside the
// folder pinned. And an entry that renames gains the tag it inherits.
func TestRunRenderedRefuses(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	app := pushImage(t, host+"/app:v1", "app")
	pushImage(t, host+"/side:v1", "side")
	pushImage(t, host+"/num:1.1", "num")
	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	tpl := func(labels string, images ...string) string {
		s := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: c\n  labels: {" + labels + "}\nspec:\n  template:\n    spec:\n      containers:\n"
		for i, img := range images {
			s += "        - name: c" + string(rune('0'+i)) + "\n          image: \"" + img + "\"\n"
		}
		return s
	}
	dir := writeFiles(t, map[string]string{
		"label/Chart.yaml":             chart,
		"label/values.yaml":            "image:\n  repository: " + host + "/app\n  tag: v1\n",
		"label/templates/d.yaml":       tpl("version: {{ .Values.image.tag | quote }}", "{{ .Values.image.repository }}:{{ .Values.image.tag }}"),
		"number/Chart.yaml":            chart,
		"number/values.yaml":           "image:\n  repository: " + host + "/num\n  tag: 1.10\n",
		"number/templates/d.yaml":      tpl("", "{{ .Values.image.repository }}:{{ .Values.image.tag }}"),
		"twice/Chart.yaml":             chart,
		"twice/values.yaml":            "tag: v1\n",
		"twice/templates/d.yaml":       tpl("", host+"/app:{{ .Values.tag }}", host+"/side:{{ .Values.tag }}"),
		"k/base/kustomization.yaml":    "resources: [d.yaml]\n",
		"k/base/d.yaml":                tpl("", "app:v1", host+"/side:v1"),
		"k/overlay/kustomization.yaml": "resources: [../base]\nimages:\n  - name: app\n    newName: " + host + "/app # renamed\n",
	})
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, string(f.Kind)+" "+strings.TrimPrefix(f.File, dir+"/")+" "+strings.ReplaceAll(f.Message, host, "H"))
	}
	for _, want := range []string{
		"not-edited label/values.yaml H/app:v1 not pinned: with the edit, " + dir + "/label renders otherwise: more than its images changes:",
		"-    labels: {version: \"v1\"}\n+    labels: {version: \"v1@sha256:",
		"not-edited number/values.yaml H/num:1.1 not pinned (Deployment c container c0, rendered by helm from " + dir + "/number): " +
			"image.tag is the number 1.10, which Helm prints as 1.1: quote it if 1.10 is what is meant",
		"not-edited twice/values.yaml H/app:v1 not pinned: this one place sets images that pin to different digests: H/app:v1 (Deployment c container c0, rendered by helm from " + dir + "/twice) to sha256:",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no finding with %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
	for _, p := range []string{"label/values.yaml", "number/values.yaml", "twice/values.yaml"} {
		if b, _ := os.ReadFile(filepath.Join(dir, p)); strings.Contains(string(b), "sha256") {
			t.Errorf("%s was edited:\n%s", p, b)
		}
	}
	overlay, _ := os.ReadFile(filepath.Join(dir, "k/overlay/kustomization.yaml"))
	if want := "    newName: " + host + "/app # renamed\n    newTag: v1\n    digest: " + app + "\n"; !strings.HasSuffix(string(overlay), want) {
		t.Errorf("the renaming entry:\n%s\nwant it to end\n%s", overlay, want)
	}

	// The overlay alone: its base is outside the folder pinned.
	r, err = Run(stdctx.Background(), []string{filepath.Join(dir, "k", "overlay")}, Config{Scanner: s, Update: true})
	if err != nil {
		t.Fatal(err)
	}
	var outside []pinresult.Finding
	for _, f := range r.Findings {
		if f.Kind == pinresult.KindNotEdited && strings.Contains(f.Message, "outside "+filepath.Join(dir, "k", "overlay")) {
			outside = append(outside, f)
		}
	}
	if len(outside) != 1 || outside[0].File != filepath.Join(dir, "k", "base", "d.yaml") || len(r.Changed()) != 0 {
		t.Errorf("the base outside the overlay: %v; changed %v", r.Findings, r.Changed())
	}
}

// FuzzValuesEdit checks, for any values file, that setting a digest key
// does not panic, and that whatever it returns reads back as the same
// values with that key set: an edit it cannot make is an error, never an
// internal one (its own check failing).
func FuzzValuesEdit(f *testing.F) {
	for _, s := range []string{"image:\n  tag: v1\n", "image: {repository: r, tag: v1}\n", "image:\n  digest: \"\"\n",
		"a: 1\n---\nimage:\n  digest: ~\n  tag: v1 # c\n", "image:\r\n  digest:\r\n", "image:\n  tag: &t v1\n  other: *t\n"} {
		f.Add(s)
	}
	d := "sha256:" + strings.Repeat("e", 64)
	f.Fuzz(func(t *testing.T, in string) {
		for _, e := range []render.Edit{{Op: render.DigestKey, Path: "image.digest"}, {Op: render.AppendDigest, Line: 2, Column: 8, Path: "image.tag"}} {
			out, err := valuesEdit("values.yaml", []byte(in), e, d)
			if errors.Is(err, errInternal) {
				t.Fatalf("%s on %q: %v\n%q", e.Op, in, err, out)
			}
		}
	})
}

// TestRunRenderedRemoteBase: an overlay whose base is remote gets the
// entries naming its images pinned, as a kustomization on its own would.
func TestRunRenderedRemoteBase(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	api := pushImage(t, host+"/api:v2", "api")
	dir := writeFiles(t, map[string]string{
		"prod/kustomization.yaml": "resources:\n  - github.com/org/api//deploy?ref=v1 # remote\nimages:\n  - name: api\n    newName: " + host + "/api\n    newTag: v2\n",
	})
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "prod", "kustomization.yaml"))
	if want := "    newTag: v2\n    digest: " + api + "\n"; !strings.HasSuffix(string(got), want) || len(r.Changes) != 1 {
		t.Errorf("got\n%s\nwant it to end\n%s\n%v %v", got, want, r.Changes, r.Findings)
	}
	if len(r.Findings) != 1 || r.Findings[0].Kind != pinresult.KindLeftOut {
		t.Errorf("findings %v, want the remote base left out", r.Findings)
	}
}
