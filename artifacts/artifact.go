package artifacts

import "github.com/regcheck/regcheck/types"

// Kind is what an artifact says about its subject.
type Kind string

// Kinds of supply-chain artifact.
const (
	Signature   Kind = "signature"   // a cosign signature (legacy .sig tag, or a sigstore bundle with a message signature)
	Attestation Kind = "attestation" // an in-toto attestation (.att tag, or a sigstore bundle with a DSSE envelope)
	SBOM        Kind = "sbom"        // a software bill of materials (.sbom tag, or an SBOM referrer)
	Other       Kind = "other"       // a referrer of an artifactType regcheck does not name
)

// Layout is where, by which convention, an artifact was found.
type Layout string

// Layouts an artifact is found by.
const (
	// CosignTag: cosign's tag scheme, <repo>:sha256-<hex>.sig (.att, .sbom).
	CosignTag Layout = "cosign-tag"
	// ReferrersAPI: OCI 1.1 GET /v2/<name>/referrers/<digest>.
	ReferrersAPI Layout = "referrers-api"
	// ReferrersTag: the OCI 1.1 referrers tag schema fallback,
	// <repo>:sha256-<hex>, an index of the subject's referrers.
	ReferrersTag Layout = "referrers-tag"
)

// Artifact is one signature, attestation or SBOM of one subject, walked
// to its blobs with the one walker.
type Artifact struct {
	Kind   Kind   `json:"kind"`
	Layout Layout `json:"layout"`
	// Subject is the digest the artifact is about: the image's (an
	// index's), or one child's when it was signed per platform.
	Subject string `json:"subject"`
	// Platform is the child's platform when Subject is a child's.
	Platform string `json:"platform,omitempty"`
	// Ref is where it lives: repo:tag for the tag layouts, repo@digest
	// for a referrer.
	Ref string `json:"ref"`
	// Digest is the artifact manifest's digest ("" when a tag names it
	// but it could not be resolved).
	Digest string `json:"digest,omitempty"`
	// ArtifactType is the OCI artifactType (or the config media type that
	// stands for it), e.g. application/vnd.dev.sigstore.bundle.v0.3+json.
	ArtifactType string `json:"artifactType,omitempty"`
	// PredicateTypes are, for an attestation, the in-toto predicate
	// types it carries where the manifest says them (annotations), for
	// matching a policy's attestation requirement.
	PredicateTypes []string `json:"predicateTypes,omitempty"`
	// Whole reports whether the manifest and every blob it needs are
	// there; Findings say what is not (blob-missing, manifest-missing)
	// or what could not be asked (faults).
	Whole    bool            `json:"whole"`
	Findings []types.Finding `json:"findings,omitempty"`
}

// Set is what was found for one image: its artifacts, whole or not.
type Set struct {
	// Image is the subject's digest (the tag's target, or the pinned one).
	Image string `json:"image"`
	// Artifacts are sorted by kind, subject, layout, ref.
	Artifacts []Artifact `json:"artifacts"`
	// Faults are what could not be asked while looking (a referrers API
	// that answered 5xx, a tag list refused): where nothing is proven
	// absent. A requirement with only faults to go on is unknown, never
	// missing.
	Faults []types.Finding `json:"faults,omitempty"`
}
