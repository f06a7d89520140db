package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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
	if !isIndex(m.MediaType) {
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
		d, err := s.c.resolve(ctx, r)
		if err != nil {
			return Manifest{}, fmt.Errorf("resolving %s: %w", ref, err)
		}
		digest = d.Digest
	}
	p, err := s.c.manifest(ctx, r.Context(), digest)
	if err != nil {
		return Manifest{}, fmt.Errorf("fetching %s@%s: %w", r.Context().Name(), digest, err)
	}
	return Manifest{Digest: digest, MediaType: p.MediaType, children: p.Manifests}, nil
}

// parsed is the part of a manifest or index the walk needs.
type parsed struct {
	MediaType string
	Manifests []ocispec.Descriptor
	Config    ocispec.Descriptor
	Layers    []ocispec.Descriptor
}

// parseManifest reads a manifest body. Its media type is the body's own,
// else the Content-Type's when that names a manifest, else what its fields
// say (an OCI index has manifests, an OCI image a config). A body that is
// not JSON, names no kind, or lists a descriptor without a valid digest is
// an error: it is not a manifest, whatever the registry meant by it. A
// manifest of a kind regcheck does not walk is not an error.
func parseManifest(body []byte, contentType string) (parsed, error) {
	var raw struct {
		SchemaVersion int                  `json:"schemaVersion"`
		MediaType     string               `json:"mediaType"`
		Manifests     []ocispec.Descriptor `json:"manifests"`
		Config        *ocispec.Descriptor  `json:"config"`
		Layers        []ocispec.Descriptor `json:"layers"`
		FSLayers      json.RawMessage      `json:"fsLayers"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return parsed{}, fmt.Errorf("the body is not a manifest: %w", err)
	}
	p := parsed{MediaType: raw.MediaType, Manifests: raw.Manifests, Layers: raw.Layers}
	if raw.Config != nil {
		p.Config = *raw.Config
	}
	switch {
	case p.MediaType != "":
	case isIndex(contentType) || isImage(contentType):
		p.MediaType = contentType
	case raw.Manifests != nil:
		p.MediaType = ocispec.MediaTypeImageIndex
	case raw.Config != nil:
		p.MediaType = ocispec.MediaTypeImageManifest
	case raw.SchemaVersion == 1 || raw.FSLayers != nil:
		p.MediaType = string(types.DockerManifestSchema1)
	default:
		return parsed{}, errors.New("the body names no media type and has neither manifests nor a config: it is not a manifest")
	}
	return p, p.validate()
}

// validate checks that every descriptor the walk would follow has a valid
// digest.
func (p parsed) validate() error {
	switch {
	case isIndex(p.MediaType):
		if p.Manifests == nil {
			return errors.New("an index without a manifests list")
		}
		for i, d := range p.Manifests {
			if err := d.Digest.Validate(); err != nil {
				return fmt.Errorf("index entry %d has an invalid digest %q: %w", i, d.Digest, err)
			}
		}
	case isImage(p.MediaType):
		if err := p.Config.Digest.Validate(); err != nil {
			return fmt.Errorf("the config has an invalid digest %q: %w", p.Config.Digest, err)
		}
		for i, d := range p.Layers {
			if err := d.Digest.Validate(); err != nil {
				return fmt.Errorf("layer %d has an invalid digest %q: %w", i+1, d.Digest, err)
			}
		}
	}
	return nil
}

func isIndex(mt string) bool {
	return mt == ocispec.MediaTypeImageIndex || mt == string(types.DockerManifestList)
}

func isImage(mt string) bool {
	return mt == ocispec.MediaTypeImageManifest || mt == string(types.DockerManifestSchema2)
}
