package gc

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/regcheck/regcheck/admission"
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

	plan *Plan
}

// Plan returns the simulated run behind the report.
func (r *Report) Plan() *Plan { return r.plan }

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

// note adds a note of kind ("" for none).
func (r *Report) note(kind NoteKind, text string) {
	r.Notes = append(r.Notes, Note{Kind: kind, Text: text})
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

// Options says which collector run to predict.
type Options struct {
	Model Model
	// ModelAssumed says Model is a default, not what the registry is known
	// to run: the report says so, and its advice covers either model.
	ModelAssumed   bool
	DeleteUntagged bool
	// Host, when set, limits the in-use set to references on this registry
	// host; otherwise references match storage repositories by path alone.
	Host string
	// AllRepositories makes API mode examine every repository the
	// registry's _catalog lists, not only those of in-use images: a
	// complete wouldDelete list, at the cost of reading the whole registry.
	AllRepositories bool
	// Policies, when set, are the image policies admission enforces (the
	// cluster's, read with gc-check --cluster): an in-use image whose
	// signature or attestation an enforcing policy requires, and the run
	// deletes, would be refused: WouldBreak, broken (storage mode only).
	// Without them a lost artifact is information (WouldLoseArtifacts).
	Policies *admission.Policies
}

// newReport starts the report of a prediction of plan's run.
func newReport(mode Mode, opts Options, plan *Plan) *Report {
	return &Report{SchemaVersion: SchemaVersion, Mode: mode, Model: opts.Model, ModelAssumed: opts.ModelAssumed, DeleteUntagged: opts.DeleteUntagged,
		Abort: plan.Abort, WouldBreak: []Entry{}, AlreadyBroken: []Entry{}, Damage: []Damage{}, Skipped: []Skipped{},
		WouldLoseArtifacts: []ArtifactLoss{}, WouldOrphanArtifacts: []OrphanedArtifact{}, plan: plan}
}

// finish sums the report and says what to do.
func (r *Report) finish() {
	p := r.plan
	r.Counts = Counts{WouldBreak: len(r.WouldBreak), AlreadyBroken: len(r.AlreadyBroken), Manifests: len(p.Manifests),
		Blobs: len(p.Blobs), LayerLinks: len(p.LayerLinks), Damage: len(r.Damage), Skipped: len(r.Skipped),
		ArtifactsLost: len(r.WouldLoseArtifacts), ArtifactsOrphaned: len(r.WouldOrphanArtifacts)}
	for _, m := range p.Manifests {
		r.Counts.TagIndexEntries += len(m.TagIndex)
	}
	r.Advice = advise(r)
}

// skip lists an in-use image that could not be examined, and returns why
// as an error: the prediction is incomplete.
func (r *Report) skip(ref, reason string) error {
	r.Skipped = append(r.Skipped, Skipped{Reference: ref, Reason: reason})
	return fmt.Errorf("%s: %s", ref, reason)
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

// entry builds an Entry from losses; nil when there are none.
func entry(im InUse, digest string, losses []Loss, advice string) *Entry {
	if len(losses) == 0 {
		return nil
	}
	e := &Entry{Reference: im.Reference, Repository: im.Repository, Digest: digest, Verdict: types.AtRisk, Losses: losses, Uses: im.Uses, Advice: advice}
	var children, blobs, atts, top []string
	for _, l := range losses {
		if l.Code.Severity() >= types.SeverityCritical {
			e.Verdict = types.Broken
		}
		if l.Digest != "" {
			e.Lost = append(e.Lost, l.Digest)
		}
		switch l.Code {
		case types.ChildMissing:
			children = append(children, l.Platform+" "+types.ShortDigest(l.Digest))
		case types.BlobMissing:
			blobs = append(blobs, types.ShortDigest(l.Digest))
		case types.AttestationMissing:
			atts = append(atts, types.ShortDigest(l.Digest))
		default:
			top = append(top, l.Message)
		}
	}
	sort.Strings(e.Lost)
	parts := top
	if len(children) > 0 {
		parts = append(parts, "index kept, child manifest "+strings.Join(children, ", ")+" unlinked")
	}
	if len(blobs) > 0 {
		parts = append(parts, fmt.Sprintf("%d blob(s) gone: %s", len(blobs), strings.Join(blobs, ", ")))
	}
	if len(atts) > 0 {
		parts = append(parts, "attestation(s) lost: "+strings.Join(atts, ", "))
	}
	e.Reason = strings.Join(parts, "; ")
	return e
}

const alreadyAdvice = "already broken: rebuild the image from its commit and push it again (to a registry whose GC keeps index children), then point the workload at the new digest"

// breakAdvice is what to do about one in-use image the run breaks. An
// assumed model's advice is conditional on it: the registry may already run
// the other one.
func breakAdvice(o Options) string {
	switch {
	case o.Model == Distribution28 && o.DeleteUntagged && o.ModelAssumed:
		return "if the registry runs distribution 2.x, do not run its GC with --delete-untagged: run without it, tag the children it lists, or move to distribution 3.x, whose GC keeps the children of tagged indexes; if it runs 3.x, predict again with the distribution-3 model"
	case o.Model == Distribution28 && o.DeleteUntagged:
		return "do not run 2.x's GC with --delete-untagged: upgrade to distribution 3.x, run without --delete-untagged, or tag the children it lists"
	case o.DeleteUntagged:
		return ifModel(o.Model, o.ModelAssumed) + "run without --delete-untagged, or tag the digests it lists so the collector keeps them"
	}
	return ifModel(o.Model, o.ModelAssumed) + "tag the digests it lists, or relink them, before collecting"
}

// ifModel opens advice that holds only under an assumed model.
func ifModel(m Model, assumed bool) string {
	if !assumed {
		return ""
	}
	return "if the registry runs " + m.Release() + ": "
}

// advise is the report's advice, most urgent first.
func advise(r *Report) []string {
	var out []string
	if r.Abort != nil {
		a := fmt.Sprintf("the collector would stop in repository %s (%s) and delete nothing: push a tag to %s, or delete that repository, then check again", r.Abort.Repository, r.Abort.Message, r.Abort.Repository)
		if r.ModelAssumed {
			a = fmt.Sprintf("if the registry runs %s, its collector would stop in repository %s (%s) and delete nothing: push a tag to %s, or delete that repository, then check again; if it runs another release, predict again with that model", r.Model.Release(), r.Abort.Repository, r.Abort.Message, r.Abort.Repository)
		}
		out = append(out, a)
	}
	if len(r.WouldBreak) > 0 {
		switch {
		case r.Model == Distribution28 && r.DeleteUntagged && r.ModelAssumed:
			out = append(out, "if the registry runs distribution 2.x, do not run garbage-collect --delete-untagged on it: run without --delete-untagged, tag every child listed under wouldBreak, or move to distribution 3.x, whose GC keeps the children of tagged indexes; if it runs 3.x, predict again with the distribution-3 model")
		case r.Model == Distribution28 && r.DeleteUntagged:
			out = append(out, "do not run garbage-collect --delete-untagged on distribution 2.x: upgrade to distribution 3.x (its GC keeps the children of tagged indexes), run without --delete-untagged, or tag every child listed under wouldBreak")
		default:
			out = append(out, ifModel(r.Model, r.ModelAssumed)+"run without --delete-untagged, or tag the in-use digests listed under wouldBreak")
		}
	}
	if len(r.WouldLoseArtifacts) > 0 {
		out = append(out, ifModel(r.Model, r.ModelAssumed)+"the run deletes signatures or attestations of in-use images (wouldLoseArtifacts): tag them (or the referrers index that lists them) before collecting, or sign and attest the running digests again after it; the images themselves still pull")
	}
	if len(r.AlreadyBroken) > 0 {
		out = append(out, "rebuild the already-broken images from their commits, push them again, and point the workloads at the new digests; nodes that still run them do so from their cache")
	}
	return out
}
