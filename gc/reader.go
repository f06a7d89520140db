package gc

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

// Reader returns the storage as a walk.Reader: what a registry running
// model serves from it. A tag resolves through its current link; a
// manifest as linkedManifest says, then its blob data is read; a blob
// through the repository's _layers link, then its data.
// What the storage does not hold, manifest data gone since Open included,
// is types.ErrNotFound: for a node, data gone is absence. Manifest data
// that cannot be read, or is not a manifest, is a fault.
func (s *Storage) Reader(model Model) walk.Reader { return reader{s: s, model: model} }

// reader is a Storage as one model's registry serves it.
type reader struct {
	s     *Storage
	model Model
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
	target, ok := rd.s.linkedManifest(r, digest, rd.model)
	if !ok {
		return walk.Manifest{}, fmt.Errorf("repository %s does not serve manifest %s: %w", r.Name, digest, types.ErrNotFound)
	}
	m, err := rd.s.manifest(target)
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
	if !rd.s.linkedBlob(r, digest) {
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

// repoRef is the repository path of the storage as a walk names it.
func repoRef(path string) name.Repository { return storageRegistry.Repo(path) }

// manifestLink is the digest of the blob data a repository's manifest
// store reads for manifest d: its revision link's and, on 2.x, its _layers
// link's, where 2.1.0 once put manifests; "" when neither is a valid link.
func (s *Storage) manifestLink(r *Repository, d string, model Model) string {
	if t := r.Revisions[d]; t != "" {
		return t
	}
	if model == Distribution28 {
		return r.Layers[d]
	}
	return ""
}

// linkedManifest resolves a manifest digest in a repository as the
// registry's manifest store does (see manifestLink). It returns the target
// digest and whether the manifest is served: whether its data exists.
func (s *Storage) linkedManifest(r *Repository, d string, model Model) (string, bool) {
	t := s.manifestLink(r, d, model)
	return t, t != "" && s.Blobs[t]
}

// linkedBlob resolves a blob in a repository: its _layers link, then data.
func (s *Storage) linkedBlob(r *Repository, d string) bool {
	t := r.Layers[d]
	return t != "" && s.Blobs[t]
}

// stored is a manifest's blob data as a walk reads it, with the schema 1
// fsLayers the collector marks and a walk does not read.
type stored struct {
	walk.Manifest
	fsLayers []string
}

// references is distribution's Manifest.References(), whose digests the
// collector marks: an index's children; a schema 1 manifest's fsLayers;
// else the config (the zero one too: distribution appends it) then layers.
func (m *stored) references() []string {
	var out []string
	switch {
	case m.IsIndex():
		for _, c := range m.Manifests {
			out = append(out, c.Digest.String())
		}
	case len(m.fsLayers) > 0:
		out = m.fsLayers
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
	m  map[string]*stored
}

// manifest reads and parses the blob data of a manifest. Data gone is
// types.ErrNotFound; data unreadable or not a manifest is a fault.
func (s *Storage) manifest(d string) (*stored, error) {
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
	m = &stored{Manifest: p}
	if !p.IsIndex() && !p.IsImage() {
		var schema1 struct {
			FSLayers []struct {
				BlobSum string `json:"blobSum"`
			} `json:"fsLayers"`
		}
		_ = json.Unmarshal(b, &schema1) // walk.Parse read it: it is JSON
		for _, l := range schema1.FSLayers {
			m.fsLayers = append(m.fsLayers, l.BlobSum)
		}
	}
	s.manifests.mu.Lock()
	s.manifests.m[d] = m
	s.manifests.mu.Unlock()
	return m, nil
}
