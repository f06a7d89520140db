package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/types"
)

// Artifact types and annotations the classification reads.
const (
	// sigstoreBundlePrefix starts the media type of every sigstore bundle
	// version (application/vnd.dev.sigstore.bundle.v0.3+json).
	sigstoreBundlePrefix = "application/vnd.dev.sigstore.bundle"
	// bundleContent says what a bundle carries: "message-signature" or
	// "dsse-envelope" (cosign's WriteAttestationNewBundleFormat).
	bundleContent = "dev.sigstore.bundle.content"
	// bundlePredicateType is the in-toto predicate type of a bundle's DSSE
	// envelope.
	bundlePredicateType = "dev.sigstore.bundle.predicateType"
	// cosignSignPredicate is the predicate cosign v3 signs an image with in
	// the bundle format: a DSSE envelope that is a signature, not an
	// attestation.
	cosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"
	// layerPredicateType is the annotation cosign puts on each layer of a
	// legacy .att manifest (and of an in-toto referrer).
	layerPredicateType = "predicateType"
	// Artifact types of cosign's legacy signatures and in-toto
	// attestations stored as OCI 1.1 referrers.
	cosignSigArtifact = "application/vnd.dev.cosign.artifact.sig.v1+json"
	intotoArtifact    = "application/vnd.in-toto+json"
)

// classify names what a referrer is from its descriptor (artifact type and
// annotations, which the referrers API and index copy from the manifest),
// with the predicate types the annotations give for an attestation.
func classify(d ocispec.Descriptor) (Kind, []string) {
	at, ann := d.ArtifactType, d.Annotations
	switch {
	case strings.HasPrefix(at, sigstoreBundlePrefix):
		pt := ann[bundlePredicateType]
		switch {
		case ann[bundleContent] == "message-signature", pt == cosignSignPredicate:
			return Signature, nil
		case pt != "":
			return Attestation, []string{pt}
		case ann[bundleContent] == "dsse-envelope":
			return Attestation, nil
		}
		return Signature, nil // a bundle that says no more: cosign reads it as a signature
	case at == cosignSigArtifact:
		return Signature, nil
	case at == intotoArtifact || strings.HasPrefix(at, "application/vnd.in-toto"):
		return Attestation, nil
	case isSBOM(at):
		return SBOM, nil
	}
	return Other, nil
}

// unannotatedBundle reports whether a descriptor names a sigstore bundle
// without saying what it carries: a signature or an attestation is told
// apart only by the manifest's annotations.
func unannotatedBundle(d ocispec.Descriptor) bool {
	return strings.HasPrefix(d.ArtifactType, sigstoreBundlePrefix) &&
		d.Annotations[bundleContent] == "" && d.Annotations[bundlePredicateType] == ""
}

// isSBOM reports whether an artifact type names an SBOM format (SPDX,
// CycloneDX, syft).
func isSBOM(at string) bool {
	at = strings.ToLower(at)
	return strings.Contains(at, "spdx") || strings.Contains(at, "cyclonedx") || strings.Contains(at, "syft") || strings.Contains(at, "sbom")
}

// describe fills a referrer's artifact type and annotations from its
// manifest when the list that named it carried neither (one more GET,
// only then). A manifest that cannot be read leaves d as it was and
// returns why: a fault hides what the referrer is, so the caller keeps
// it as a fault (unknown), never as an absence.
func (l *look) describe(ctx context.Context, d ocispec.Descriptor) (ocispec.Descriptor, error) {
	if l.raw == nil {
		return d, nil
	}
	body, _, err := l.raw.RawManifest(ctx, l.repo, d.Digest.String())
	if err != nil {
		return d, fmt.Errorf("reading referrer %s@%s to tell what it is: %w", l.repo.Name(), d.Digest, err)
	}
	var m struct {
		ArtifactType string             `json:"artifactType"`
		Config       ocispec.Descriptor `json:"config"`
		Annotations  map[string]string  `json:"annotations"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return d, fmt.Errorf("referrer %s@%s is not a manifest: %w", l.repo.Name(), d.Digest, errors.Join(types.ErrBadResponse, err))
	}
	d.ArtifactType, d.Annotations = m.ArtifactType, m.Annotations
	if d.ArtifactType == "" && m.Config.MediaType != ocispec.MediaTypeEmptyJSON {
		d.ArtifactType = m.Config.MediaType // OCI 1.1: the config's type stands for it
	}
	return d, nil
}

// layerPredicateTypes reads the predicate types an attestation manifest's
// layers are annotated with (cosign's .att), sorted; the manifest is the
// one the walk read, so it is not fetched again.
func (l *look) layerPredicateTypes(ctx context.Context, digest string) []string {
	m, err := l.r.Manifest(ctx, l.repo, digest)
	if err != nil {
		return nil
	}
	var out []string
	for _, layer := range m.Layers {
		if pt := layer.Annotations[layerPredicateType]; pt != "" && !slices.Contains(out, pt) {
			out = append(out, pt)
		}
	}
	slices.Sort(out)
	return out
}
