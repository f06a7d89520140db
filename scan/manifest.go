package scan

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Manifest is what a scan keeps of a manifest or index the registry served:
// its kind and descriptors, not its bytes.
type Manifest struct {
	// Digest is the digest the bytes were fetched by, and hash to.
	Digest    string
	MediaType string
	children  []ocispec.Descriptor
}

// Children returns the manifests an index lists, or nil for an image manifest.
func (m Manifest) Children() ([]ocispec.Descriptor, error) {
	if !walk.IsIndex(m.MediaType) {
		return nil, nil
	}
	return m.children, nil
}

// Manifest fetches what ref points at (resolving a tag first), checking that
// the bytes hash to the digest. It shares the Scanner's cache: a manifest a
// walk fetched is not fetched again. Errors unwrap to the Err* sentinels.
func (s *Scanner) Manifest(ctx context.Context, ref string) (Manifest, error) {
	_, r, err := s.Parse(ref)
	if err != nil {
		return Manifest{}, err
	}
	digest := ""
	switch r := r.(type) {
	case name.Digest:
		digest = r.DigestStr()
	case name.Tag:
		d, err := s.r.Resolve(ctx, r.Context(), r.TagStr())
		if err != nil {
			return Manifest{}, fmt.Errorf("resolving %s: %w", ref, err)
		}
		digest = d.Digest
	}
	p, err := s.r.Manifest(ctx, r.Context(), digest)
	if err != nil {
		return Manifest{}, fmt.Errorf("fetching %s@%s: %w", r.Context().Name(), digest, err)
	}
	return Manifest{Digest: digest, MediaType: p.MediaType, children: p.Manifests}, nil
}

// configLimit is the most of a config blob Platform reads.
const configLimit = 4 << 20

// Platform returns the platform (os/architecture[/variant]) an image
// manifest of repo is for, as its config blob says: what a node of another
// platform cannot run. It is "" for an index (a runtime picks its child)
// and for a config that names no OS or architecture (an artifact).
func (s *Scanner) Platform(ctx context.Context, repo name.Repository, digest string) (string, error) {
	m, err := s.r.Manifest(ctx, repo, digest)
	if err != nil {
		return "", fmt.Errorf("fetching %s@%s: %w", repo.Name(), digest, err)
	}
	if !m.IsImage() || m.Config.Digest == "" {
		return "", nil
	}
	cfg := m.Config.Digest.String()
	_, body, err := s.c.do(ctx, repo, http.MethodGet, "blobs", cfg, configLimit)
	if err != nil {
		return "", fmt.Errorf("fetching the config %s of %s@%s: %w", cfg, repo.Name(), digest, err)
	}
	if got := godigest.FromBytes(body); got != m.Config.Digest {
		return "", fmt.Errorf("the config %s of %s@%s hashes to %s: %w", cfg, repo.Name(), digest, got, types.ErrDigestMismatch)
	}
	var c struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return "", fmt.Errorf("reading the config %s of %s@%s: %v: %w", cfg, repo.Name(), digest, err, types.ErrBadResponse)
	}
	if c.OS == "" || c.Architecture == "" {
		return "", nil
	}
	return strings.TrimSuffix(c.OS+"/"+c.Architecture+"/"+c.Variant, "/"), nil
}
