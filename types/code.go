package types

import (
	"fmt"
	"slices"
)

// Code names a kind of finding. The set is fixed: reports and users match on it.
type Code string

// Findings about the image itself.
const (
	TagMissing         Code = "tag-missing"         // the tag does not exist
	ManifestMissing    Code = "manifest-missing"    // a digest (pinned, or the tag's target) does not exist
	ChildMissing       Code = "child-missing"       // an index child is gone: the GC-orphan case
	AttestationMissing Code = "attestation-missing" // only attestation children are gone; the image still runs
	BlobMissing        Code = "blob-missing"        // a config or layer blob is gone
	DigestMismatch     Code = "digest-mismatch"     // the bytes served do not hash to the digest asked for
	InvalidReference   Code = "invalid-reference"   // the reference cannot be parsed
	ForeignLayer       Code = "foreign-layer"       // a non-distributable layer, not checked
	UnsupportedMedia   Code = "unsupported-media-type"
)

// Findings about what a registry cleanup (a GHCR cleanup action, an ECR
// lifecycle policy, a GitLab cleanup policy, Harbor retention) would do to
// an in-use image (gc-check --cleanup).
const (
	// TagDeleted: the cleanup deletes the tag an in-use image names: the
	// next pull says manifest unknown.
	TagDeleted Code = "tag-deleted"
	// Archived: the cleanup moves a manifest an in-use image needs to an
	// archive tier (ECR's ARCHIVE storage class): a pull answers 404
	// until someone restores it.
	Archived Code = "archived"
)

// Findings about what a cluster runs, computed on top of a walk (package
// cluster): they compare what runs with what the registry serves now.
const (
	Drift                Code = "drift"                  // the tag resolves to another digest than the one running
	RunningDigestMissing Code = "running-digest-missing" // the running digest is gone: it lives only in node caches
	MutableReference     Code = "mutable-reference"      // referenced by tag, not pinned by digest
	PullAlwaysMutable    Code = "pull-always-mutable"    // imagePullPolicy Always on a mutable reference
	PinnedDigestUntagged Code = "pinned-digest-untagged" // a pinned digest no tag points at: a GC may delete it
	ImageIDOnly          Code = "image-id-only"          // the runtime reports an image ID, not a registry digest
	// LostForSomeNodes: a piece only some of the nodes a workload may run
	// on need is gone (a child of their platform, or its blob): those
	// nodes cannot pull the image; the others can.
	LostForSomeNodes Code = "lost-for-some-nodes"
	// LostForOtherPlatform: a piece only another platform needs is gone:
	// no node the workload may run on pulls it.
	LostForOtherPlatform Code = "lost-for-other-platform"
	// UnplannedUpgrade: the running digest changed while the pod
	// template's image string did not (a tag moved, then a restart or a
	// reschedule pulled it): other bits run and nobody changed the manifest.
	UnplannedUpgrade Code = "unplanned-upgrade"
	// PlatformMismatch: the reference names one platform's manifest (a
	// child of an index pinned by digest, or a tag on a single-platform
	// image) and the nodes the workload may run on are of another
	// platform: its pods fail there (exec format error, no matching
	// manifest). Lowered to a warning by package cluster where only some
	// of the nodes are.
	PlatformMismatch Code = "platform-mismatch"
)

// Findings about what admission requires of an image (package admission):
// the signatures and attestations an image policy asks for, which a
// registry keeps beside the image as artifacts of their own.
const (
	// SignatureMissing: a signature an enforcing policy requires for the
	// image is gone or not whole; the image pulls, the pod is refused.
	// An audit or warn policy lowers it to a warning.
	SignatureMissing Code = "signature-missing"
	// SignedAttestationMissing: an attestation an enforcing policy
	// requires is gone or not whole; as SignatureMissing.
	SignedAttestationMissing Code = "signed-attestation-missing"
	// ArtifactMissing: a signature, attestation or SBOM of the image is
	// gone or not whole, and no policy requires it: worth knowing only.
	ArtifactMissing Code = "artifact-missing"
	// SignatureRefused: the signature an enforcing policy requires is
	// there, and cosign refuses it with the policy's keys (another key, a
	// rotated key, a tampered payload, a signature of another digest, no
	// log proof where the engine requires one): the pod is refused. An
	// audit or warn policy lowers it to a warning.
	SignatureRefused Code = "signature-refused"
	// AttestationRefused: an attestation an enforcing policy requires is
	// there, of its predicate type, and cosign refuses it with the
	// attestor's keys (another key, a tampered envelope, an attestation of
	// another digest, no log proof where the engine requires one): the
	// pod is refused. An audit or warn policy lowers it to a warning.
	AttestationRefused Code = "attestation-refused"
	// SignatureUnverifiable: whether the signature verifies cannot be
	// decided offline (a KMS key, keyless identities without a trust
	// root, a log proof without a Rekor key): unknown, never ok.
	SignatureUnverifiable Code = "signature-unverifiable"
)

// Findings about the node's pull path (scan --registries-config): where a
// node's runtime got each piece, when it is not simply the registry.
const (
	// MirrorOnly: a mirror serves a piece the registry no longer has:
	// the node pulls it, one cache eviction from broken.
	MirrorOnly Code = "mirror-only"
	// MirrorLacks: a mirror does not hold a piece: the node falls back.
	MirrorLacks Code = "mirror-lacks"
	// MirrorStale: a mirror resolves the tag to another digest than the
	// registry: the node runs the mirror's bits, not the tag's.
	MirrorStale Code = "mirror-stale"
	// MirrorUnavailable: an endpoint of the pull path could not be asked;
	// the node moved on to one that serves the piece.
	MirrorUnavailable Code = "mirror-unavailable"
)

// Faults: the registry could not be asked. They prove nothing about the image.
const (
	Unauthorized  Code = "unauthorized"
	Forbidden     Code = "forbidden"
	RateLimited   Code = "rate-limited"
	RegistryFault Code = "registry-error"
	Unreachable   Code = "unreachable"
	// PingFailed: the registry's version check (GET /v2/) did not answer
	// as a registry does (a 404 from a proxy, a 5xx, an outage).
	PingFailed Code = "ping-failed"
	// TokenFailed: the token service named by the registry's challenge
	// did not issue a token.
	TokenFailed Code = "token-failed"
	// TLSError: the registry's certificate could not be verified.
	TLSError Code = "tls-error"
	// BadResponse: the registry answered, twice, with a body that is not
	// what was asked for (cut short, not a manifest, an invalid digest).
	BadResponse Code = "bad-response"
	// LimitExceeded: the image is larger than regcheck walks (children per
	// index, manifests per image); the rest was not checked.
	LimitExceeded Code = "limit-exceeded"
	// CredentialsError: the credentials for the registry could not be read
	// (a malformed pull secret, a failing credential helper).
	CredentialsError Code = "credentials-error"
	// RateLimitBudget: a manifest was not asked for, to keep within the
	// registry's pull budget (its rate limit, less a reserve) or a cap.
	RateLimitBudget Code = "rate-limit-budget"
)

// codeInfo is what the vocabulary says of one code.
type codeInfo struct {
	severity Severity
	// fault: the registry could not be asked; the image is unknown.
	fault bool
	// transient: a fault that may pass if asked again after a pause.
	transient bool
	// advice says what to do; platform and digest name the child or blob.
	advice func(platform, digest string) string
	// description is the one-line rule text (SARIF, docs/json.md).
	description string
}

func says(s string) func(string, string) string { return func(string, string) string { return s } }

// codes is the one table of the vocabulary: each code once, with its
// severity, its advice and its description.
var codes = map[Code]codeInfo{
	TagMissing: {severity: SeverityCritical, advice: says("push the tag again, or point the workload at a tag that exists"),
		description: "the tag does not exist"},
	ManifestMissing: {severity: SeverityCritical, advice: says("the digest is gone from the registry: rebuild and push, then pin the workload to the new digest"),
		description: "a digest (pinned, or the tag's target) no longer exists"},
	ChildMissing: {severity: SeverityCritical, advice: childMissingAdvice,
		description: "an index child a platform needs is gone"},
	TagDeleted: {severity: SeverityCritical, advice: says("keep the tag in the cleanup's own terms (the finding names the rule and how), or pin the workload to a digest the cleanup keeps"),
		description: "a registry cleanup deletes the tag an in-use image names: its next pull fails"},
	Archived: {severity: SeverityCritical, advice: says("restore the image from the archive tier (ECR: move it back to the STANDARD storage class) and keep it out of the pull-time rule"),
		description: "a registry cleanup archives a manifest an in-use image needs: pulls fail until it is restored"},
	BlobMissing: {severity: SeverityCritical, advice: says("rebuild and push; the manifest resolves but a blob it needs is gone"),
		description: "a config or layer blob is gone"},
	DigestMismatch: {severity: SeverityCritical, advice: says("the registry serves bytes that do not match the digest: check for a proxy or a corrupt store, and rebuild"),
		description: "the bytes served do not hash to the digest asked for"},
	InvalidReference: {severity: SeverityCritical, advice: says("fix the image reference in the manifest"),
		description: "the image reference cannot be parsed"},
	AttestationMissing: {severity: SeverityWarning, advice: says("the image still runs; rebuild and push to restore its attestation (provenance and SBOM checks will fail until then)"),
		description: "only attestation manifests are gone; the image still runs"},
	UnsupportedMedia: {severity: SeverityWarning, advice: says(""),
		description: "a manifest type regcheck does not walk"},
	ForeignLayer: {severity: SeverityInfo, advice: says(""),
		description: "a non-distributable layer, not checked"},
	// Drift is raised to high by package cluster where the next start pulls.
	Drift: {severity: SeverityWarning, advice: says(""),
		description: "the tag resolves to another digest than the container runs"},
	RunningDigestMissing: {severity: SeverityHigh, advice: says(""),
		description: "the running digest is gone from the registry; only node caches hold it"},
	// A tag reference alone is not a risk: the verdict stays ok.
	MutableReference: {severity: SeverityInfo, advice: says(""),
		description: "referenced by tag, not pinned by digest"},
	PullAlwaysMutable: {severity: SeverityWarning, advice: says(""),
		description: "imagePullPolicy Always on a tag"},
	PinnedDigestUntagged: {severity: SeverityWarning, advice: says(""),
		description: "a pinned digest no tag points at: a garbage collector may delete it"},
	ImageIDOnly: {severity: SeverityInfo, advice: says(""),
		description: "the runtime reports an image ID, not a registry digest"},
	LostForSomeNodes: {severity: SeverityWarning, advice: childMissingAdvice,
		description: "a piece of the image that only some of the eligible nodes' platform needs is gone: those nodes cannot pull it"},
	LostForOtherPlatform: {severity: SeverityInfo, advice: childMissingAdvice,
		description: "a piece of the image that only a platform no eligible node runs needs is gone"},
	PlatformMismatch: {severity: SeverityCritical, advice: says("pin the multi-platform index that lists this manifest rather than one platform's child (regcheck pin pins the index), build and push the image for the nodes' platform, or keep the workload on nodes of the manifest's platform with a nodeSelector on kubernetes.io/arch"),
		description: "the reference names a single-platform manifest and nodes the workload may run on are of another platform: its pods cannot start there"},
	UnplannedUpgrade: {severity: SeverityHigh, advice: says("pin the workload back to the digest it ran before (regcheck pin --from-records), or pin it to the new one if the change is wanted"),
		description: "the running digest changed while the pod template's image did not: a tag moved and a restart pulled other bits"},
	SignatureMissing: {severity: SeverityCritical, advice: says("sign the running digest again (cosign sign) and push the signature; the image itself is whole"),
		description: "a signature an enforcing admission policy requires is gone or not whole: the pod will be refused"},
	SignedAttestationMissing: {severity: SeverityCritical, advice: says("attest the running digest again (cosign attest) and push the attestation; the image itself is whole"),
		description: "an attestation an enforcing admission policy requires is gone or not whole: the pod will be refused"},
	SignatureRefused: {severity: SeverityCritical, advice: says("sign the running digest again as the policy's entry asks (cosign sign --key with the key it names; keyless, as the identity and issuer it names), or fix the policy if its key was rotated or its identity changed; cosign verify with the entry's key or --certificate-identity shows the same refusal"),
		description: "the signature an enforcing admission policy requires is there, and cosign refuses it with the policy's keys: the pod will be refused"},
	AttestationRefused: {severity: SeverityCritical, advice: says("attest the running digest again as the policy's attestor asks (cosign attest --type, with the key it names or keyless as the identity it names), or fix the attestor if its key was rotated or its identity changed; cosign verify-attestation --type with the attestor's key or --certificate-identity shows the same refusal"),
		description: "an attestation an enforcing admission policy requires is there, and cosign refuses it with the attestor's keys: the pod will be refused"},
	SignatureUnverifiable: {severity: SeverityWarning, fault: true, advice: says("give the policy's public key inline (Kyverno keys.publicKeys, policy-controller key.data); for a log proof or keyless, pass --trusted-root (a trusted_root.json made by cosign trusted-root create) or name the roots and Rekor key in the policy; or verify with cosign where the key or trust root is at hand"),
		description: "whether the signature verifies with the policy's keys cannot be decided offline (a KMS or Secret key, keyless without a trust root, a log proof without a Rekor key)"},
	ArtifactMissing: {severity: SeverityInfo, advice: says(""),
		description: "a signature, attestation or SBOM of the image is gone or not whole; no policy requires it"},
	MirrorOnly: {severity: SeverityWarning, advice: says("push the image to the registry again from the mirror (regcheck rescue), or pin the workload to a digest the registry holds: the mirror's copy is one eviction from gone"),
		description: "only a mirror of the node's pull path still serves a piece the registry has lost"},
	MirrorLacks: {severity: SeverityInfo, advice: says(""),
		description: "a mirror of the node's pull path does not hold a piece: the node falls back to the next endpoint"},
	MirrorStale: {severity: SeverityWarning, advice: says("refresh the mirror's copy of the tag, or pin the workload by digest so that the mirror and the registry serve the same bits"),
		description: "a mirror of the node's pull path resolves the tag to another digest than the registry: the node runs the mirror's"},
	MirrorUnavailable: {severity: SeverityInfo, advice: says(""),
		description: "an endpoint of the node's pull path could not be asked; the node moved on to one that serves the piece"},
	Unauthorized: {severity: SeverityWarning, fault: true, advice: says("give regcheck credentials for this registry (the docker config, or the pods' pull secrets in a cluster)"),
		description: "the registry asked for credentials: the image could not be checked"},
	Forbidden: {severity: SeverityWarning, fault: true, advice: says("the credentials used cannot pull this repository"),
		description: "the registry refused access: the image could not be checked"},
	RateLimited: {severity: SeverityWarning, fault: true, transient: true, advice: says("the registry rate-limited the check: run again later or with credentials"),
		description: "the registry rate-limited the check: the image could not be checked"},
	RegistryFault: {severity: SeverityWarning, fault: true, transient: true, advice: says("the registry could not be checked: run again when it answers"),
		description: "the registry failed: the image could not be checked"},
	Unreachable: {severity: SeverityWarning, fault: true, transient: true, advice: says("the registry could not be checked: run again when it answers"),
		description: "the registry could not be reached: the image could not be checked"},
	PingFailed: {severity: SeverityWarning, fault: true, transient: true, advice: says("the registry's version check (GET /v2/) did not answer as a registry does: check the host and any proxy in front of it, then run again"),
		description: "the registry's version check (GET /v2/) did not answer as a registry does: the image could not be checked"},
	TokenFailed: {severity: SeverityWarning, fault: true, transient: true, advice: says("the registry's token service did not issue a token: check it and any proxy in front of it, then run again"),
		description: "the token service named by the registry did not issue a token: the image could not be checked"},
	TLSError: {severity: SeverityWarning, fault: true, advice: says("the registry's certificate is not trusted: give regcheck the CA that signed it, or skip verification for this host alone"),
		description: "the registry's TLS certificate could not be verified: the image could not be checked"},
	BadResponse: {severity: SeverityWarning, fault: true, transient: true, advice: says("the registry answered twice with something that is not what was asked (cut short, not a manifest): check any proxy in front of it, then run again"),
		description: "the registry answered with a body that is not what was asked for: the image could not be checked"},
	LimitExceeded: {severity: SeverityWarning, fault: true, advice: says("the image is larger than regcheck walks: check the rest with the registry's own tools"),
		description: "the image is larger than regcheck walks: the rest of it was not checked"},
	CredentialsError: {severity: SeverityWarning, fault: true, advice: says("fix the credentials regcheck reads for this registry (the docker config, its credential helper, the kubelet credential provider plugin named, or the pull secret named)"),
		description: "the credentials for the registry could not be read: the image could not be checked"},
	RateLimitBudget: {severity: SeverityWarning, fault: true, advice: says("the check stopped pulling manifests from this registry to leave its rate limit's last pulls to the nodes: run again after the limit's window, with credentials that have a higher limit, or with a higher cap on pulls"),
		description: "a manifest GET would have spent the registry's pull budget (its rate limit, less a reserve, or a cap on pulls): it was not sent, and the image could not be checked"},
}

func childMissingAdvice(platform, digest string) string {
	if digest == "" {
		return fmt.Sprintf("build and push the image for %s, or drop the platform if no such node runs it", platform)
	}
	return fmt.Sprintf("rebuild and push; the tag resolves but its %s manifest %s is gone", platform, ShortDigest(digest))
}

// Codes returns every code, sorted.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Severity returns the code's default severity.
func (c Code) Severity() Severity { return codes[c].severity }

// Fault reports whether the code is a fault (the registry could not answer)
// rather than a fact about the image.
func (c Code) Fault() bool { return codes[c].fault }

// Transient reports whether the code is a fault that may pass if the
// registry is asked again after a pause (a timeout, a 5xx, a 429, a bad
// response), unlike a refusal (credentials, certificates) or a limit.
func (c Code) Transient() bool { return codes[c].transient }

// Advice is what to do about a finding of this code, for the index child
// of platform or the manifest or blob digest ("" where none applies).
func (c Code) Advice(platform, digest string) string {
	if info, ok := codes[c]; ok {
		return info.advice(platform, digest)
	}
	return ""
}

// Description is the code's one-line meaning.
func (c Code) Description() string { return codes[c].description }
