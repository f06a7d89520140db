package scan

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

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
