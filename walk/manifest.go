package walk

import (
	"encoding/json"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Manifest is what a walk keeps of a manifest or index: its kind and
// descriptors, not its bytes.
type Manifest struct {
	MediaType string
	Manifests []ocispec.Descriptor // an index's children
	Config    ocispec.Descriptor
	Layers    []ocispec.Descriptor
}

// IsIndex reports whether the manifest is an OCI index or a Docker
// manifest list.
func (m Manifest) IsIndex() bool { return IsIndex(m.MediaType) }

// IsImage reports whether the manifest is an OCI or Docker schema 2 image
// manifest.
func (m Manifest) IsImage() bool { return IsImage(m.MediaType) }

// IsIndex reports whether a media type is an index (OCI index, Docker list).
func IsIndex(mediaType string) bool { return types.MediaType(mediaType).IsIndex() }

// IsImage reports whether a media type is an image manifest (OCI, Docker
// schema 2).
func IsImage(mediaType string) bool { return types.MediaType(mediaType).IsImage() }

// Parse reads a manifest body. Its media type is the body's own, else the
// Content-Type's when that names a manifest, else what its fields say (an
// OCI index has manifests, an OCI image a config). A body that is not
// JSON, names no kind, or lists a descriptor without a valid digest is an
// error: it is not a manifest, whatever its store meant by it. A manifest
// of a kind regcheck does not walk is not an error.
func Parse(body []byte, contentType string) (Manifest, error) {
	var raw struct {
		SchemaVersion int                  `json:"schemaVersion"`
		MediaType     string               `json:"mediaType"`
		Manifests     []ocispec.Descriptor `json:"manifests"`
		Config        *ocispec.Descriptor  `json:"config"`
		Layers        []ocispec.Descriptor `json:"layers"`
		FSLayers      json.RawMessage      `json:"fsLayers"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Manifest{}, fmt.Errorf("the body is not a manifest: %w", err)
	}
	m := Manifest{MediaType: raw.MediaType, Manifests: raw.Manifests, Layers: raw.Layers}
	if raw.Config != nil {
		m.Config = *raw.Config
	}
	switch {
	case m.MediaType != "":
	case IsIndex(contentType) || IsImage(contentType):
		m.MediaType = contentType
	case raw.Manifests != nil:
		m.MediaType = ocispec.MediaTypeImageIndex
	case raw.Config != nil:
		m.MediaType = ocispec.MediaTypeImageManifest
	case raw.SchemaVersion == 1 || raw.FSLayers != nil:
		m.MediaType = string(types.DockerManifestSchema1)
	default:
		return Manifest{}, errors.New("the body names no media type and has neither manifests nor a config: it is not a manifest")
	}
	return m, m.validate()
}

// validate checks that every descriptor a walk would follow has a valid
// digest.
func (m Manifest) validate() error {
	switch {
	case m.IsIndex():
		if m.Manifests == nil {
			return errors.New("an index without a manifests list")
		}
		for i, d := range m.Manifests {
			if err := d.Digest.Validate(); err != nil {
				return fmt.Errorf("index entry %d has an invalid digest %q: %w", i, d.Digest, err)
			}
		}
	case m.IsImage():
		if err := m.Config.Digest.Validate(); err != nil {
			return fmt.Errorf("the config has an invalid digest %q: %w", m.Config.Digest, err)
		}
		for i, d := range m.Layers {
			if err := d.Digest.Validate(); err != nil {
				return fmt.Errorf("layer %d has an invalid digest %q: %w", i+1, d.Digest, err)
			}
		}
	}
	return nil
}

// Annotations buildx puts on an attestation manifest's index descriptor.
const (
	annotationRefType    = "vnd.docker.reference.type"
	annotationRefDigest  = "vnd.docker.reference.digest"
	refTypeAttestation   = "attestation-manifest"
	platformUnknownShort = "unknown/unknown"
)

// IsAttestation reports whether an index child is an attestation manifest
// as docker buildx pushes it (annotation vnd.docker.reference.type, or
// platform unknown/unknown with vnd.docker.reference.digest): metadata about
// an image, not an image a node runs.
func IsAttestation(d ocispec.Descriptor) bool {
	if d.Annotations[annotationRefType] == refTypeAttestation {
		return true
	}
	return d.Platform != nil && PlatformString(d.Platform) == platformUnknownShort && d.Annotations[annotationRefDigest] != ""
}

// AttestsTo returns the digest of the image an attestation child attests to.
func AttestsTo(d ocispec.Descriptor) string { return d.Annotations[annotationRefDigest] }

// IsForeignLayer reports whether a layer media type is non-distributable
// (Windows base layers): registries need not hold such blobs.
func IsForeignLayer(mediaType string) bool {
	switch mediaType {
	case string(types.DockerForeignLayer), ocispec.MediaTypeImageLayerNonDistributable, //nolint:staticcheck // still in use
		ocispec.MediaTypeImageLayerNonDistributableGzip, ocispec.MediaTypeImageLayerNonDistributableZstd: //nolint:staticcheck
		return true
	}
	return false
}

// PlatformString writes a platform as os/arch[/variant], "" for none.
func PlatformString(p *ocispec.Platform) string {
	if p == nil {
		return ""
	}
	return (&v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}).String()
}
