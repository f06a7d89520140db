package rescue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"

	"github.com/regcheck/regcheck/types"
)

// Source is where a copy of lost content may still be. It answers one
// question: the bytes of digest D. It need not know tags, and a
// content-addressed store (a node's content store, an OCI layout) holds no
// repositories either: it ignores Want.Repo.
type Source interface {
	// Open returns the bytes stored under w.Digest, unchecked: the caller
	// verifies that they hash to it. An error wrapping types.ErrNotFound
	// says the source does not hold them; any other error is a fault.
	Open(ctx context.Context, w Want) (io.ReadCloser, error)
	// String names the source in a plan.
	String() string
}

// Want is one piece a rescue looks for.
type Want struct {
	// Repo is the image's repository in the registry being rescued.
	Repo name.Repository
	// Digest is the piece's digest ("sha256:…").
	Digest string
	// Manifest is true for a manifest or index, false for a blob: a
	// registry serves them apart, a content store does not care.
	Manifest bool
}

// Store is a folder of blobs by digest (blobs/<algorithm>/<hex>): a
// containerd content store or an OCI image layout. It reads only committed
// blobs; containerd's ingest/ folder (downloads in progress) is never read.
type Store struct {
	dir  string // the folder holding blobs/
	kind string // "content store" or "OCI layout"
}

var _ Source = (*Store)(nil)

// contentDir is the folder containerd's content plugin keeps under its root.
const contentDir = "io.containerd.content.v1.content"

// ContentStore opens a containerd content store read-only. dir is the
// content folder itself (…/io.containerd.content.v1.content, holding
// blobs/ and ingest/), a containerd root holding it (/var/lib/containerd,
// or k3s's /var/lib/rancher/k3s/agent/containerd), or a folder whose
// containerd/ subfolder is such a root (k3s's /var/lib/rancher/k3s/agent).
func ContentStore(dir string) (*Store, error) {
	if isFile(filepath.Join(dir, "oci-layout")) {
		return nil, fmt.Errorf("%s is an OCI image layout, not a containerd content store", dir)
	}
	tried := []string{dir, filepath.Join(dir, contentDir), filepath.Join(dir, "containerd", contentDir)}
	for _, d := range tried {
		if isDir(filepath.Join(d, "blobs")) && (isDir(filepath.Join(d, "ingest")) || filepath.Base(d) == contentDir) {
			return &Store{dir: d, kind: "content store"}, nil
		}
	}
	return nil, fmt.Errorf("no containerd content store (blobs/ and ingest/) in %s, %s or %s", tried[0], tried[1], tried[2])
}

// OCILayout opens an OCI image layout (oci-layout, index.json, blobs/) read-only.
func OCILayout(dir string) (*Store, error) {
	b, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI image layout: %w", dir, err)
	}
	var l struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(b, &l); err != nil || l.Version == "" {
		return nil, fmt.Errorf("%s: oci-layout names no imageLayoutVersion", dir)
	}
	if !isDir(filepath.Join(dir, "blobs")) {
		return nil, fmt.Errorf("%s is an OCI image layout without blobs/", dir)
	}
	return &Store{dir: dir, kind: "OCI layout"}, nil
}

// Dir is the folder holding blobs/.
func (s *Store) Dir() string { return s.dir }

func (s *Store) String() string { return s.kind + " " + s.dir }

// Open opens blobs/<algorithm>/<hex>. Only a regular file is read.
func (s *Store) Open(_ context.Context, w Want) (io.ReadCloser, error) {
	d, err := digest.Parse(w.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	p := filepath.Join(s.dir, "blobs", string(d.Algorithm()), d.Encoded())
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s does not hold %s: %w", s, d, types.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", s, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %s is not a regular file", s, p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	return f, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// verifier hashes what is read through it and, at the end, fails unless
// the bytes hash to the digest: nothing that does not is ever handed on
// whole. It counts the bytes read.
type verifier struct {
	r    io.Reader
	c    io.Closer
	want digest.Digest
	h    hash.Hash
	n    int64
	what string
}

// verify wraps rc (a source's bytes for d) in a verifier.
func verify(rc io.ReadCloser, d digest.Digest, what string) (*verifier, error) {
	if err := d.Validate(); err != nil {
		rc.Close()
		return nil, err
	}
	return &verifier{r: rc, c: rc, want: d, h: d.Algorithm().Hash(), what: what}, nil
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if errors.Is(err, io.EOF) {
		if got := digest.NewDigest(v.want.Algorithm(), v.h); got != v.want {
			return n, fmt.Errorf("%s: the bytes for %s hash to %s: %w", v.what, v.want, got, types.ErrDigestMismatch)
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.c.Close() }
