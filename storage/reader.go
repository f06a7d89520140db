package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Version is the registry release line that serves a storage: 2.x and 3.x
// read the same tree but for one link (see ManifestLink).
type Version int

// The release lines.
const (
	// V3 is distribution 3.x.
	V3 Version = iota
	// V2 is docker/distribution 2.x, which also serves a manifest through
	// its _layers link.
	V2
)

// Reader returns the storage as a walk.Reader: what a registry of release
// line v serves from it. A tag resolves through its current link; a
// manifest as linkedManifest says, then its blob data is read; a blob
// through the repository's _layers link, then its data.
// What the storage does not hold, manifest data gone since Open included,
// is types.ErrNotFound: for a node, data gone is absence. Manifest data
// that cannot be read, or is not a manifest, is a fault.
func (s *Storage) Reader(v Version) walk.Reader { return reader{s: s, v: v} }

// reader is a Storage as one release line's registry serves it.
type reader struct {
	s *Storage
	v Version
}

var _ walk.Reader = reader{}

// Resolve reads the tag's current link.
func (rd reader) Resolve(_ context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	r, err := rd.repository(repo)
	if err != nil {
		return walk.Descriptor{}, err
	}
	if t := r.Tags[tag]; t != nil && t.Current != "" {
		return walk.Descriptor{Digest: t.Current}, nil
	}
	return walk.Descriptor{}, fmt.Errorf("tag %s is not in repository %s: %w", tag, r.Name, types.ErrNotFound)
}

// Manifest reads a manifest the repository links, parsed by walk.Parse.
func (rd reader) Manifest(_ context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	r, err := rd.repository(repo)
	if err != nil {
		return walk.Manifest{}, err
	}
	target, ok := rd.s.LinkedManifest(r, digest, rd.v)
	if !ok {
		return walk.Manifest{}, fmt.Errorf("repository %s does not serve manifest %s: %w", r.Name, digest, types.ErrNotFound)
	}
	m, err := rd.s.ManifestData(target)
	if err != nil {
		return walk.Manifest{}, err
	}
	return m.Manifest, nil
}

// Blob says whether the repository links the blob and its data exists.
func (rd reader) Blob(_ context.Context, repo name.Repository, digest string) error {
	r, err := rd.repository(repo)
	if err != nil {
		return err
	}
	if !rd.s.LinkedBlob(r, digest) {
		return fmt.Errorf("repository %s does not serve blob %s: %w", r.Name, digest, types.ErrNotFound)
	}
	return nil
}

func (rd reader) repository(repo name.Repository) (*Repository, error) {
	if r := rd.s.Repositories[repo.RepositoryStr()]; r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("repository %s is not in the storage: %w", repo.RepositoryStr(), types.ErrNotFound)
}

// storageRegistry names the storage's repositories in a walk: the reader
// keys on the repository path alone, and a host keeps the path as it is
// (without one, "app" would become Docker Hub's "library/app").
var storageRegistry, _ = name.NewRegistry("storage.invalid")

// Repo is the repository path of the storage as a walk names it.
func Repo(path string) name.Repository { return storageRegistry.Repo(path) }

// ManifestLink is the digest of the blob data a repository's manifest
// store reads for manifest d: its revision link's and, on 2.x, its _layers
// link's, where 2.1.0 once put manifests; "" when neither is a valid link.
func (s *Storage) ManifestLink(r *Repository, d string, v Version) string {
	if t := r.Revisions[d]; t != "" {
		return t
	}
	if v == V2 {
		return r.Layers[d]
	}
	return ""
}

// LinkedManifest resolves a manifest digest in a repository as the
// registry's manifest store does (see ManifestLink). It returns the target
// digest and whether the manifest is served: whether its data exists.
func (s *Storage) LinkedManifest(r *Repository, d string, v Version) (string, bool) {
	t := s.ManifestLink(r, d, v)
	return t, t != "" && s.Blobs[t]
}

// LinkedBlob resolves a blob in a repository: its _layers link, then data.
func (s *Storage) LinkedBlob(r *Repository, d string) bool {
	t := r.Layers[d]
	return t != "" && s.Blobs[t]
}

// Stored is a manifest's blob data as a walk reads it, with the schema 1
// fsLayers a collector marks and a walk does not read.
type Stored struct {
	walk.Manifest
	// FSLayers is a schema 1 manifest's blobSums.
	FSLayers []string
}

// References is distribution's Manifest.References(), whose digests a
// collector marks: an index's children; a schema 1 manifest's fsLayers;
// else the config (the zero one too: distribution appends it) then layers.
func (m *Stored) References() []string {
	var out []string
	switch {
	case m.IsIndex():
		for _, c := range m.Manifests {
			out = append(out, c.Digest.String())
		}
	case len(m.FSLayers) > 0:
		out = m.FSLayers
	default:
		out = append(out, m.Config.Digest.String())
		for _, l := range m.Layers {
			out = append(out, l.Digest.String())
		}
	}
	return out
}

// manifestCache holds the parsed manifest data a Storage and its copies read.
type manifestCache struct {
	mu sync.Mutex
	m  map[string]*Stored
}

// ManifestData reads and parses the blob data of a manifest. Data gone is
// types.ErrNotFound; data unreadable or not a manifest is a fault.
func (s *Storage) ManifestData(d string) (*Stored, error) {
	s.manifests.mu.Lock()
	m, ok := s.manifests.m[d]
	s.manifests.mu.Unlock()
	if ok {
		return m, nil
	}
	b, err := os.ReadFile(s.blobPath(d))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("the data of manifest %s is gone: %w", d, types.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("reading manifest %s: %w", d, err)
	}
	p, err := walk.Parse(b, "")
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w (%w)", d, err, types.ErrBadResponse)
	}
	m = &Stored{Manifest: p}
	if !p.IsIndex() && !p.IsImage() {
		var schema1 struct {
			FSLayers []struct {
				BlobSum string `json:"blobSum"`
			} `json:"fsLayers"`
		}
		_ = json.Unmarshal(b, &schema1) // walk.Parse read it: it is JSON
		for _, l := range schema1.FSLayers {
			m.FSLayers = append(m.FSLayers, l.BlobSum)
		}
	}
	s.manifests.mu.Lock()
	s.manifests.m[d] = m
	s.manifests.mu.Unlock()
	return m, nil
}
