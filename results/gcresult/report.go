// Package gcresult is what gc-check finds: the report of a predicted
// garbage-collector run (what it deletes, which in-use images it breaks,
// what is broken already), filled by package gc and rendered by report.
// It is vocabulary: it imports nothing of regcheck's but types, and no
// HTTP, so a renderer names it without linking the registry client.
package gcresult

import (
	"encoding/json"

	"github.com/regcheck/regcheck/types"
)

// SchemaVersion versions the JSON form of a Report.
const SchemaVersion = "regcheck.gc/v1"

// Mode is how a Report was made.
type Mode string

// The modes.
const (
	// ModeStorage read the registry's filesystem storage (Check).
	ModeStorage Mode = "storage"
	// ModeAPI asked the registry through its HTTP API (CheckAPI).
	ModeAPI Mode = "api"
)

// Report is what gc-check found: what a collector run would delete, which
// in-use images that breaks, and what is broken already.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	// Model is the collector predicted. ModelAssumed is true when the
	// caller did not say which one the registry runs and Model is a
	// default: the prediction holds only if the registry runs it, and the
	// advice says what to do under either model.
	Model        Model `json:"model"`
	ModelAssumed bool  `json:"modelAssumed"`
	// Mode is how the prediction was made: ModeStorage read the registry's
	// files, ModeAPI asked the registries in Registries through their API.
	Mode           Mode     `json:"mode"`
	Storage        string   `json:"storage,omitempty"`
	Registries     []string `json:"registries,omitempty"`
	DeleteUntagged bool     `json:"deleteUntagged"`
	// Abort is set when the collector would stop and delete nothing.
	Abort *Abort `json:"abort,omitempty"`
	// WouldBreak are in-use images the run would break (or strip of
	// attestations); AlreadyBroken those broken before it.
	WouldBreak    []Entry `json:"wouldBreak"`
	AlreadyBroken []Entry `json:"alreadyBroken"`
	// WouldLoseArtifacts are signatures, attestations and SBOMs of in-use
	// images, whole now, that the run deletes or leaves not whole (storage
	// mode only): the images pull, an admission policy requiring one
	// refuses them.
	WouldLoseArtifacts []ArtifactLoss `json:"wouldLoseArtifacts"`
	// WouldOrphanArtifacts are artifact tags whose subject the run deletes
	// (storage mode only): they stay, about an image that is gone.
	WouldOrphanArtifacts []OrphanedArtifact `json:"wouldOrphanArtifacts"`
	// WouldDelete is the run's deletions by repository, then every blob.
	WouldDelete Deletions `json:"wouldDelete"`
	// Damage is everything already broken in the storage, in use or not.
	Damage []Damage `json:"damage"`
	// Skipped are in-use references that are not in this storage, or that
	// could not be read.
	Skipped []Skipped `json:"skipped"`
	Counts  Counts    `json:"counts"`
	// Advice says what to do, most urgent first.
	Advice []string `json:"advice"`
	// Notes say what the prediction could not see.
	Notes []Note `json:"notes,omitempty"`
	// Cleanup is set when a cleanup was predicted (ModeCleanup).
	Cleanup *Cleanup `json:"cleanup,omitempty"`
}

// Note is one thing a prediction could not see. Its JSON form is its
// Text alone.
type Note struct {
	// Kind, when set, says what the note is about, for a caller that adds
	// how to act on it in its own terms (a command, its flags).
	Kind NoteKind
	Text string
}

// NoteKind says what a note is about.
type NoteKind string

// The kinds of note a caller can act on; the other notes have none.
const (
	// NoteInUseOnly says that only the repositories of in-use images were
	// examined: Options.AllRepositories examines every repository the
	// registry's _catalog lists.
	NoteInUseOnly NoteKind = "in-use-only"
	// NoteBlobs says that API mode cannot see which blobs a run deletes:
	// storage mode (Check) can.
	NoteBlobs NoteKind = "blobs"
	// NoteUndecided says that distribution 3 keeps a manifest if a tag in
	// a repository not examined reaches it: Options.AllRepositories
	// decides.
	NoteUndecided NoteKind = "undecided"
)

func (n Note) String() string { return n.Text }

// MarshalJSON writes the note as its text.
func (n Note) MarshalJSON() ([]byte, error) { return json.Marshal(n.Text) }

// UnmarshalJSON reads a note written by MarshalJSON: its text, no kind.
func (n *Note) UnmarshalJSON(b []byte) error {
	*n = Note{}
	return json.Unmarshal(b, &n.Text)
}

// Deletions is a plan grouped by repository.
type Deletions struct {
	Repositories []RepositoryDeletions `json:"repositories"`
	// Blobs is every blob whose data would be deleted.
	Blobs []string `json:"blobs"`
}

// RepositoryDeletions is what a run deletes in, or from under, one repository.
type RepositoryDeletions struct {
	Repository string             `json:"repository"`
	Manifests  []ManifestDeletion `json:"manifests"`
	// Blobs are deleted blobs this repository links (its _layers links or
	// its manifests' own data).
	Blobs      []string `json:"blobs"`
	LayerLinks []string `json:"layerLinks"`
}

// Counts sums a report.
type Counts struct {
	WouldBreak      int `json:"wouldBreak"`
	AlreadyBroken   int `json:"alreadyBroken"`
	Manifests       int `json:"manifests"`
	Blobs           int `json:"blobs"`
	LayerLinks      int `json:"layerLinks"`
	TagIndexEntries int `json:"tagIndexEntries"`
	Damage          int `json:"damage"`
	Skipped         int `json:"skipped"`
	// ArtifactsLost and ArtifactsOrphaned count WouldLoseArtifacts and
	// WouldOrphanArtifacts.
	ArtifactsLost     int `json:"artifactsLost"`
	ArtifactsOrphaned int `json:"artifactsOrphaned"`
}

// Skipped is an in-use reference gc-check did not look at, and why.
type Skipped struct {
	Reference string `json:"reference"`
	Reason    string `json:"reason"`
}

// Entry is an in-use image that is (or would be) broken or at risk.
type Entry struct {
	Reference  string `json:"reference"`
	Repository string `json:"repository"`
	// Digest is what the reference resolves to in the storage.
	Digest string `json:"digest,omitempty"`
	// Verdict is broken, or at-risk when only warnings (attestations) are lost.
	Verdict types.Verdict `json:"verdict"`
	// Reason says in one line what happens to it.
	Reason string `json:"reason"`
	// Losses are the manifests and blobs it loses; Lost their digests.
	Losses []Loss   `json:"losses"`
	Lost   []string `json:"lost"`
	// DeletedBlobs are the blobs it needs whose data the run deletes,
	// those under a lost child included.
	DeletedBlobs []string    `json:"deletedBlobs,omitempty"`
	Advice       string      `json:"advice"`
	Uses         []types.Use `json:"uses,omitempty"`
}

// ManifestDeletion is one revision link deleted: _manifests/revisions/<alg>/<hex>.
type ManifestDeletion struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
	// TagIndex names the tags whose index/<alg>/<hex> entry goes with it.
	TagIndex []string `json:"tagIndex,omitempty"`
}

// Abort is a predicted failure of the collector's mark phase.
type Abort struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest,omitempty"`
	// Message is the collector's own error text.
	Message string `json:"message"`
}

// Damage is one thing already broken in the storage, whoever uses it.
type Damage struct {
	Repository string     `json:"repository"`
	Kind       DamageKind `json:"kind"`
	// Digest is the manifest or blob concerned; Tag and Parent (an index)
	// say where it was reached from.
	Digest  string `json:"digest"`
	Tag     string `json:"tag,omitempty"`
	Parent  string `json:"parent,omitempty"`
	Message string `json:"message"`
}

// DamageKind names a kind of damage.
type DamageKind string

// Kinds of damage.
const (
	// TagManifestGone: a tag's current link names a manifest the repository
	// no longer serves.
	TagManifestGone DamageKind = "tag-manifest-gone"
	// ChildUnlinked: an index the repository serves lists a child it does not
	// link (what 2.x's --delete-untagged does to tagged indexes).
	ChildUnlinked DamageKind = "child-unlinked"
	// RevisionDataGone: a revision link whose blob data is gone; reached
	// from a tag, a child whose link is there and whose data is not.
	RevisionDataGone DamageKind = "revision-data-gone"
	// LayerLinkDangling: a _layers link whose blob data is gone (2.x's GC
	// deletes blobs and leaves their links).
	LayerLinkDangling DamageKind = "layer-link-dangling"
	// BlobUnavailable: a manifest the repository serves needs a blob it
	// cannot serve (no _layers link, or no data).
	BlobUnavailable DamageKind = "blob-unavailable"
	// ManifestUnreadable: a manifest's blob data is there but cannot be
	// read, or is not a manifest.
	ManifestUnreadable DamageKind = "manifest-unreadable"
)

// Loss is one thing an image needs that is (or would be) gone.
type Loss struct {
	Code types.Code `json:"code"`
	// Digest is the manifest or blob lost; Parent the manifest listing it.
	Digest   string `json:"digest"`
	Parent   string `json:"parent,omitempty"`
	Platform string `json:"platform,omitempty"`
	Message  string `json:"message"`

	// Policy, Rule and Keep are set when a cleanup removes it: which
	// cleanup, which of its rules, and how the policy would keep it (or
	// which version of the cleanup would).
	Policy string `json:"policy,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Keep   string `json:"keep,omitempty"`

	// Blob says Parent lists it as a config or layer, not as a child.
	Blob bool `json:"-"`
}

// ArtifactLoss is a signature, attestation or SBOM of an in-use image,
// whole before the run, that the run deletes or leaves not whole: the
// image still pulls, but an admission policy that requires the artifact
// refuses the pod.
type ArtifactLoss struct {
	// Reference is the in-use image; Subject the digest the artifact is
	// about (the image's, or a child's: Platform).
	Reference string `json:"reference"`
	Subject   string `json:"subject"`
	Platform  string `json:"platform,omitempty"`
	// Kind and Layout are artifacts.Kind's and artifacts.Layout's values:
	// what the artifact is, and by which convention it was found.
	Kind   string `json:"kind"`
	Layout string `json:"layout"`
	// Ref and Digest locate the artifact (repo:tag or repo@digest).
	Ref    string `json:"ref"`
	Digest string `json:"digest,omitempty"`
	// PredicateTypes are an attestation's, where its manifest says them.
	PredicateTypes []string `json:"predicateTypes,omitempty"`
	// Reason says what the run does to it.
	Reason string `json:"reason"`
}

// OrphanedArtifact is an artifact tag (cosign's sha256-<hex>.sig, .att,
// .sbom, or the referrers tag sha256-<hex>) whose subject manifest the run
// deletes: the tag and what it holds stay, about an image that is gone.
type OrphanedArtifact struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Subject    string `json:"subject"`
}
