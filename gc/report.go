package gc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// note adds a note of kind ("" for none).
func note(r *gcresult.Report, kind gcresult.NoteKind, text string) {
	r.Notes = append(r.Notes, gcresult.Note{Kind: kind, Text: text})
}

// Options says which collector run to predict.
type Options struct {
	Model gcresult.Model
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
func newReport(mode gcresult.Mode, opts Options, plan *Plan) *gcresult.Report {
	return &gcresult.Report{SchemaVersion: gcresult.SchemaVersion, Mode: mode, Model: opts.Model, ModelAssumed: opts.ModelAssumed, DeleteUntagged: opts.DeleteUntagged,
		Abort: plan.Abort, WouldBreak: []gcresult.Entry{}, AlreadyBroken: []gcresult.Entry{}, Damage: []gcresult.Damage{}, Skipped: []gcresult.Skipped{},
		WouldLoseArtifacts: []gcresult.ArtifactLoss{}, WouldOrphanArtifacts: []gcresult.OrphanedArtifact{}}
}

// finish sums the report and says what to do.
func finish(r *gcresult.Report, p *Plan) {
	r.Counts = gcresult.Counts{WouldBreak: len(r.WouldBreak), AlreadyBroken: len(r.AlreadyBroken), Manifests: len(p.Manifests),
		Blobs: len(p.Blobs), LayerLinks: len(p.LayerLinks), Damage: len(r.Damage), Skipped: len(r.Skipped),
		ArtifactsLost: len(r.WouldLoseArtifacts), ArtifactsOrphaned: len(r.WouldOrphanArtifacts)}
	for _, m := range p.Manifests {
		r.Counts.TagIndexEntries += len(m.TagIndex)
	}
	r.Advice = advise(r)
}

// skip lists an in-use image that could not be examined, and returns why
// as an error: the prediction is incomplete.
func skip(r *gcresult.Report, ref, reason string) error {
	r.Skipped = append(r.Skipped, gcresult.Skipped{Reference: ref, Reason: reason})
	return fmt.Errorf("%s: %s", ref, reason)
}

// entry builds an Entry from losses; nil when there are none.
func entry(im InUse, digest string, losses []gcresult.Loss, advice string) *gcresult.Entry {
	if len(losses) == 0 {
		return nil
	}
	e := &gcresult.Entry{Reference: im.Reference, Repository: im.Repository, Digest: digest, Verdict: types.AtRisk, Losses: losses, Uses: im.Uses, Advice: advice}
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
	case o.Model == gcresult.Distribution28 && o.DeleteUntagged && o.ModelAssumed:
		return "if the registry runs distribution 2.x, do not run its GC with --delete-untagged: run without it, tag the children it lists, or move to distribution 3.x, whose GC keeps the children of tagged indexes; if it runs 3.x, predict again with the distribution-3 model"
	case o.Model == gcresult.Distribution28 && o.DeleteUntagged:
		return "do not run 2.x's GC with --delete-untagged: upgrade to distribution 3.x, run without --delete-untagged, or tag the children it lists"
	case o.DeleteUntagged:
		return ifModel(o.Model, o.ModelAssumed) + "run without --delete-untagged, or tag the digests it lists so the collector keeps them"
	}
	return ifModel(o.Model, o.ModelAssumed) + "tag the digests it lists, or relink them, before collecting"
}

// ifModel opens advice that holds only under an assumed model.
func ifModel(m gcresult.Model, assumed bool) string {
	if !assumed {
		return ""
	}
	return "if the registry runs " + m.Release() + ": "
}

// advise is the report's advice, most urgent first.
func advise(r *gcresult.Report) []string {
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
		case r.Model == gcresult.Distribution28 && r.DeleteUntagged && r.ModelAssumed:
			out = append(out, "if the registry runs distribution 2.x, do not run garbage-collect --delete-untagged on it: run without --delete-untagged, tag every child listed under wouldBreak, or move to distribution 3.x, whose GC keeps the children of tagged indexes; if it runs 3.x, predict again with the distribution-3 model")
		case r.Model == gcresult.Distribution28 && r.DeleteUntagged:
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
