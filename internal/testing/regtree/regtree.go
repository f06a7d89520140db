// Package regtree writes a distribution registry's filesystem storage (the
// docker/registry/v2 tree) by hand, for the tests of the packages that read
// one (storage, gc): blobs, layer and revision links, tags.
package regtree

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tree is a storage under Root, the registry's rootdirectory.
type Tree struct {
	t    testing.TB
	Root string
}

// New makes an empty tree in a temporary folder.
func New(t testing.TB) *Tree { return &Tree{t: t, Root: t.TempDir()} }

// Write writes content at rel under docker/registry/v2.
func (tr *Tree) Write(rel, content string) {
	p := filepath.Join(tr.Root, "docker", "registry", "v2", rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

// Blob writes blob data and returns its digest.
func (tr *Tree) Blob(content string) string {
	h := fmt.Sprintf("%x", sha256.Sum256([]byte(content)))
	tr.Write(filepath.Join("blobs", "sha256", h[:2], h, "data"), content)
	return "sha256:" + h
}

// DataPath is where a blob's data lives.
func (tr *Tree) DataPath(d string) string {
	h := Hex(d)
	return filepath.Join(tr.Root, "docker", "registry", "v2", "blobs", "sha256", h[:2], h, "data")
}

// Hex is a sha256 digest's hex part.
func Hex(d string) string { return strings.TrimPrefix(d, "sha256:") }

// Layer writes a blob and links it into repo's _layers.
func (tr *Tree) Layer(repo, content string) string {
	d := tr.Blob(content)
	tr.Write(filepath.Join("repositories", repo, "_layers", "sha256", Hex(d), "link"), d)
	return d
}

// Revision links manifest d into repo's revisions.
func (tr *Tree) Revision(repo, d string) {
	tr.Write(filepath.Join("repositories", repo, "_manifests", "revisions", "sha256", Hex(d), "link"), d)
}

// Image writes an OCI image (its config and one layer, named by name) into
// repo and returns its digest and its blobs.
func (tr *Tree) Image(repo, name string) (string, []string) {
	cfg := tr.Layer(repo, "config "+name)
	l := tr.Layer(repo, "layer "+name)
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": 1},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": l, "size": 1}}})
	d := tr.Blob(string(m))
	tr.Revision(repo, d)
	return d, []string{cfg, l}
}

// Index writes an OCI index of children (linux/amd64, linux/arm64, in
// turn) into repo and returns its digest.
func (tr *Tree) Index(repo string, children ...string) string {
	var ms []any
	for i, c := range children {
		ms = append(ms, map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": c, "size": 1,
			"platform": map[string]any{"os": "linux", "architecture": []string{"amd64", "arm64"}[i%2]}})
	}
	m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": ms})
	d := tr.Blob(string(m))
	tr.Revision(repo, d)
	return d
}

// Tag points repo:tag at d, keeping d in the tag's index.
func (tr *Tree) Tag(repo, tag, d string) {
	tr.Write(filepath.Join("repositories", repo, "_manifests", "tags", tag, "current", "link"), d)
	tr.Write(filepath.Join("repositories", repo, "_manifests", "tags", tag, "index", "sha256", Hex(d), "link"), d)
}

// Seed is the tree Seeded writes: app:v1 an index of two children (Amd,
// Arm); lone:v1 an image (Lone), with an untagged older image (Old) that
// the tag once named.
type Seed struct {
	Idx, Amd, Arm, Lone, Old string
	AmdBlobs, ArmBlobs       []string
	OldBlobs                 []string
}

// Seeded writes the seed tree.
func Seeded(t testing.TB) (*Tree, Seed) {
	tr := New(t)
	var s Seed
	s.Amd, s.AmdBlobs = tr.Image("app", "amd")
	s.Arm, s.ArmBlobs = tr.Image("app", "arm")
	s.Idx = tr.Index("app", s.Amd, s.Arm)
	tr.Tag("app", "v1", s.Idx)
	s.Old, s.OldBlobs = tr.Image("lone", "old")
	tr.Tag("lone", "v1", s.Old)
	s.Lone, _ = tr.Image("lone", "new")
	tr.Tag("lone", "v1", s.Lone) // the tag moves: old stays in v1's index
	return tr, s
}
