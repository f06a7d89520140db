package pin

import (
	stdctx "context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/yamlfile"
)

// testRegistry starts gcr's in-memory registry and returns its host and a
// Scanner for it.
func testRegistry(t *testing.T) (string, *scan.Scanner) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	s, err := scan.New()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(srv.URL, "http://"), s
}

// testImage is a one-layer OCI image whose content is seed.
func testImage(t *testing.T, seed string) v1.Image {
	t.Helper()
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, static.NewLayer([]byte(seed), types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digestOf(t *testing.T, d interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// pushImage pushes a one-layer image to ref and returns its digest.
func pushImage(t *testing.T, ref, seed string) string {
	t.Helper()
	img := testImage(t, seed)
	if err := remote.Write(mustTag(t, ref), img); err != nil {
		t.Fatal(err)
	}
	return digestOf(t, img)
}

// pushIndex pushes an index of a linux/amd64 and a linux/arm64 image to ref
// and returns its digest and its children's.
func pushIndex(t *testing.T, ref, seed string) (string, []string) {
	t.Helper()
	idx := v1.ImageIndex(empty.Index)
	var children []string
	for _, arch := range []string{"amd64", "arm64"} {
		img := testImage(t, seed+" "+arch)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
		children = append(children, digestOf(t, img))
	}
	if err := remote.WriteIndex(mustTag(t, ref), idx); err != nil {
		t.Fatal(err)
	}
	return digestOf(t, idx), children
}

func mustTag(t *testing.T, ref string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

func testDeployment(ns, name, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  namespace: %s
spec:
  template:
    spec:
      containers:
        - name: app
          image: %s
`, name, ns, image)
}

func findingsOf(r *pinresult.Report, k pinresult.Kind) []pinresult.Finding {
	var out []pinresult.Finding
	for _, f := range r.Findings {
		if f.Kind == k {
			out = append(out, f)
		}
	}
	return out
}

// TestRunRunningPerWorkload: the running digest is asked for each
// workload, not once per reference: two workloads on one tag are pinned to
// what each runs, and a workload with no record is the one reported.
func TestRunRunningPerWorkload(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	ref := host + "/app:latest"
	a := pushImage(t, ref, "build a")
	b := pushImage(t, ref, "build b")
	running := map[string]string{"staging": a, "prod": b} // qa: no record
	var asked []string
	dir := t.TempDir()
	file := filepath.Join(dir, "api.yaml")
	docs := []string{testDeployment("qa", "api", ref), testDeployment("staging", "api", ref), testDeployment("prod", "api", ref)}
	if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Running: func(img yamlfile.Image) (string, error) {
		asked = append(asked, img.Namespace)
		if d, ok := running[img.Namespace]; ok {
			return d, nil
		}
		return "", ErrNoRecord
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(asked, ","); got != "qa,staging,prod" {
		t.Errorf("Running asked for %s, want every workload once: qa,staging,prod", got)
	}
	want := strings.Join([]string{testDeployment("qa", "api", ref), testDeployment("staging", "api", ref+"@"+a),
		testDeployment("prod", "api", ref+"@"+b)}, "---\n")
	if len(r.Files) != 1 || string(r.Files[0].New) != want {
		t.Errorf("pinned:\n%s\nwant:\n%s", r.Files[0].New, want)
	}
	nr := findingsOf(r, pinresult.KindNoRecord)
	if len(nr) != 1 || !strings.Contains(nr[0].Message, "Deployment qa/api container app") || nr[0].Line != 11 {
		t.Errorf("no-record findings %v, want one, for qa/api at line 11", nr)
	}
	// a is no longer tagged: reported where it is pinned, only there.
	if ut := findingsOf(r, pinresult.KindUntagged); len(ut) != 1 || ut[0].Digest != a || ut[0].Line != 23 {
		t.Errorf("untagged findings %v, want one, for %s at line 23", ut, a)
	}
}

// TestRunPlatformDigest: a runtime reporting a platform manifest's digest
// gets the index the tag points at pinned, when it lists that manifest,
// and nothing pinned when the tag has moved to an index that does not.
func TestRunPlatformDigest(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	multi, multiKids := pushIndex(t, host+"/multi:v1", "multi")
	old, oldKids := pushIndex(t, host+"/moved:v1", "first")
	moved, movedKids := pushIndex(t, host+"/moved:v1", "second")
	soloOld := pushImage(t, host+"/solo:v1", "first")
	pushImage(t, host+"/solo:v1", "second")

	for _, tc := range []struct {
		name     string
		ref      string
		running  string
		want     string // the digest pinned, "" for none
		findings []pinresult.Kind
	}{
		{"child of the tag's index pins the index", host + "/multi:v1", multiKids[1], multi, nil},
		{"the index itself", host + "/multi:v1", multi, multi, nil},
		{"child of the index the tag moved to", host + "/moved:v1", movedKids[0], moved, nil},
		{"child of an index the tag left", host + "/moved:v1", oldKids[0], "", []pinresult.Kind{pinresult.KindPlatform}},
		{"the index the tag left", host + "/moved:v1", old, old, []pinresult.Kind{pinresult.KindUntagged}},
		{"a single image the tag left", host + "/solo:v1", soloOld, soloOld, []pinresult.Kind{pinresult.KindUntagged}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			in := testDeployment("default", "app", tc.ref)
			if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(in), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Running: func(yamlfile.Image) (string, error) {
				return tc.running, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			want := in
			if tc.want != "" {
				want = testDeployment("default", "app", tc.ref+"@"+tc.want)
			}
			if got := string(r.Files[0].New); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
			var kinds []pinresult.Kind
			for _, f := range r.Findings {
				kinds = append(kinds, f.Kind)
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tc.findings) {
				t.Errorf("findings %v, want kinds %v", r.Findings, tc.findings)
			}
			if tc.findings != nil && tc.findings[0] == pinresult.KindPlatform {
				msg := r.Findings[0].Message
				for _, s := range []string{tc.running, "platform manifest", moved, "pin by tag"} {
					if !strings.Contains(msg, s) {
						t.Errorf("message lacks %q: %s", s, msg)
					}
				}
			}
		})
	}
}

// TestRunWriteKeepsConcurrentEdit: a file edited while Run walks the
// registry is left with the other edit and reported; the others are
// written.
func TestRunWriteKeepsConcurrentEdit(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	ref := host + "/app:v1"
	d := pushImage(t, ref, "app")
	dir := t.TempDir()
	edited, other := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	in := testDeployment("default", "app", ref)
	for _, p := range []string{edited, other} {
		if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	theirs := in + "# someone else's edit\n"
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Write: true, Running: func(img yamlfile.Image) (string, error) {
		if img.File == edited {
			// Files are all read before the registry is asked.
			if err := os.WriteFile(edited, []byte(theirs), 0o644); err != nil {
				t.Error(err)
			}
		}
		return d, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(edited); string(got) != theirs {
		t.Errorf("the concurrent edit was lost:\n%s", got)
	}
	if got, _ := os.ReadFile(other); string(got) != testDeployment("default", "app", ref+"@"+d) {
		t.Errorf("b.yaml not pinned:\n%s", got)
	}
	ch := findingsOf(r, pinresult.KindChanged)
	if len(ch) != 1 || ch[0].File != edited || len(r.Findings) != 1 || !pinresult.KindChanged.Incomplete() {
		t.Errorf("findings %v, want one changed-on-disk for a.yaml", r.Findings)
	}
	if c := r.Changed(); len(c) != 1 || c[0].Path != other {
		t.Errorf("changed files %v, want b.yaml only", c)
	}
	for _, c := range r.Changes {
		if (c.File == edited) != (c.Skipped != "") {
			t.Errorf("change %v: only a.yaml's are not made", c)
		}
	}
}
