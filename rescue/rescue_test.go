package rescue

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestContentStore(t *testing.T) {
	k3s := t.TempDir() // /var/lib/rancher/k3s/agent
	content := filepath.Join(k3s, "containerd", contentDir)
	mkdirs(t, content, "blobs/sha256", "ingest")
	layout := t.TempDir()
	mkdirs(t, layout, "blobs/sha256")
	os.WriteFile(filepath.Join(layout, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
	for _, tc := range []struct {
		name, dir string
		ok        bool
	}{
		{"the content folder", content, true},
		{"a containerd root", filepath.Join(k3s, "containerd"), true},
		{"k3s's agent folder", k3s, true},
		{"an OCI layout", layout, false},
		{"an empty folder", t.TempDir(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ContentStore(tc.dir)
			if (err == nil) != tc.ok || (tc.ok && s.Dir() != content) {
				t.Errorf("ContentStore(%s) = %v, %v", tc.dir, s, err)
			}
		})
	}
	if _, err := OCILayout(layout); err != nil {
		t.Errorf("OCILayout: %v", err)
	}
	if _, err := OCILayout(content); err == nil {
		t.Error("a content store opened as an OCI layout")
	}
}

// TestPlanAndWrite: a registry lost an index child and its layer; a first
// store holds bytes under the child's digest that hash to something else
// (skipped, and said so); a second holds the right ones. The plan finds
// them there, the writer pushes them, and a fresh walk finds the image whole.
func TestPlanAndWrite(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := fixture.Push(ctx, host, "t/")
	if err != nil {
		t.Fatal(err)
	}
	var multi fixture.Image
	for _, im := range imgs {
		if im.Name == "multiarch" {
			multi = im
		}
	}
	child := multi.Children[0]
	tampered, good := t.TempDir(), t.TempDir()
	mkdirs(t, tampered, "blobs/sha256", "ingest")
	mkdirs(t, good, "blobs/sha256", "ingest")
	repo, _ := name.NewRepository(host+"/t/multiarch", name.Insecure)
	keep := func(dir, digest string, manifest bool) {
		var b []byte
		if manifest {
			d, err := remote.Get(repo.Digest(digest))
			if err != nil {
				t.Fatal(err)
			}
			b = d.Manifest
		} else {
			l, err := remote.Layer(repo.Digest(digest))
			if err != nil {
				t.Fatal(err)
			}
			rc, _ := l.Compressed()
			b, _ = io.ReadAll(rc)
			rc.Close()
		}
		os.WriteFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")), b, 0o444)
	}
	keep(good, child.Digest.String(), true)
	for _, b := range child.Blobs {
		keep(good, b.String(), false)
	}
	os.WriteFile(filepath.Join(tampered, "blobs", "sha256", child.Digest.Hex), []byte(`{"manifests":[]}`), 0o444)
	lost := child.Blobs[len(child.Blobs)-1] // the child's own layer
	for _, u := range []string{"/v2/t/multiarch/manifests/" + child.Digest.String(), "/v2/t/multiarch/blobs/" + lost.String()} {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+u, nil)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("DELETE %s: %v %v", u, resp, err)
		}
	}

	s1, _ := ContentStore(tampered)
	s2, _ := ContentStore(good)
	sc, err := scan.New()
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(multi.Ref, name.Insecure)
	p, err := NewPlanner(sc.Reader(), []Source{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(ctx, []name.Reference{ref})
	if err != nil {
		t.Fatal(err)
	}
	im := plan.Images[0]
	if im.State != Restorable || len(im.Pieces) != 2 {
		t.Fatalf("plan: %s with pieces %+v, missing %+v; want restorable, the layer and the child", im.State, im.Pieces, im.Missing)
	}
	if im.Pieces[0].Kind != KindLayer || im.Pieces[1].Kind != KindManifest || im.Pieces[1].Source != s2.String() || !im.Pieces[1].Untagged {
		t.Errorf("pieces out of order, from the wrong store, or held: %+v %+v", im.Pieces[0], im.Pieces[1])
	}
	w, err := NewWriter(WithTag("rescued"))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := scan.New()
	if err := w.Write(ctx, plan, after.Reader()); err != nil {
		t.Fatal(err)
	}
	for _, pc := range im.Pieces {
		if pc.Outcome != Pushed {
			t.Errorf("%s %s: %s %s", pc.Kind, pc.Digest, pc.Outcome, pc.Error)
		}
	}
	if im.Pieces[1].Tag != "rescued-"+child.Digest.Hex[:12] {
		t.Errorf("the child was tagged %q", im.Pieces[1].Tag)
	}
	if v := types.VerdictOf(im.After); v != types.OK {
		t.Errorf("after the write: %s %+v", v, im.After)
	}
}

func TestVerifierRejectsOtherBytes(t *testing.T) {
	v, err := verify(io.NopCloser(strings.NewReader("other bytes")), digest.Digest("sha256:"+strings.Repeat("0", 64)), "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(v); err == nil || !strings.Contains(err.Error(), "hash to") {
		t.Errorf("reading other bytes: %v, want a digest mismatch", err)
	}
}
