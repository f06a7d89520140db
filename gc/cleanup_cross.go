package gc

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// crossCleanup walks each in-use image of a cleaned repository over the
// registry as it is and as the runs leave it; what it lacks only after,
// the cleanup breaks. A digest pin the runs leave untagged is at-risk;
// the signatures and attestations the runs delete are listed, and refused
// under the admission policies given.
func (c *cleanupCheck) crossCleanup(ctx context.Context) {
	before, after := cleanedView{Reader: c.rd, sc: c.sc}, cleanedView{Reader: c.rd, sc: c.sc, gone: c.goneByName()}
	for _, im := range c.inUse {
		r := c.byRepo[im.Repository]
		if r == nil || unexamined(c.rep, im, r.err, c.unasked[im.Reference]) {
			continue
		}
		was, now := walkImage(ctx, before, im.ref), walkImage(ctx, after, im.ref)
		if faults := append(was.faults, now.faults...); len(faults) > 0 {
			c.problems = append(c.problems, skip(c.rep, im.Reference, "the registry could not be asked: "+faults[0].Message))
			continue
		}
		losses := c.explain(r, im, minus(now.losses, was.losses))
		losses = append(losses, untaggedPin(r, im)...)
		losses = c.narrow(im, losses)
		refused := c.cleanupArtifacts(ctx, r, im, was.digest, before, after)
		e := cleanupEntry(im, was.digest, losses)
		switch {
		case e == nil && refused != nil:
			c.rep.WouldBreak = append(c.rep.WouldBreak, *refused)
		case e != nil:
			mergeEntry(e, refused)
			c.rep.WouldBreak = append(c.rep.WouldBreak, *e)
		}
	}
}

// explain says, for each loss, which cleanup removes it, under which rule,
// and how to keep it: a removed tag is tag-deleted, an archived manifest
// archived.
func (c *cleanupCheck) explain(r *cleanRepo, im InUse, losses []gcresult.Loss) []gcresult.Loss {
	for i, l := range losses {
		var rm removed
		var ok bool
		switch {
		case l.Code == types.TagMissing && l.Digest == "":
			if rm, ok = r.gone.tags[im.Tag]; ok {
				l.Code, l.Message = types.TagDeleted, tagDeletedMessage(im, rm)
			}
		case l.Digest != "":
			if rm, ok = r.gone.archived[l.Digest]; ok {
				l.Message = fmt.Sprintf("%s %s is archived by %s (%s, run %d): a pull answers 404 until it is restored", pieceName(l), l.Digest, rm.policy, rm.Rule.Rule, rm.run)
				l.Code = types.Archived
			} else if rm, ok = r.gone.manifests[l.Digest]; ok {
				l.Message = fmt.Sprintf("%s %s is deleted by %s (%s, run %d)", pieceName(l), l.Digest, rm.policy, rm.Rule.Rule, rm.run)
			}
		}
		if ok {
			l.Policy, l.Rule, l.Keep = rm.policy, rm.Rule.Rule, rm.Keep
		}
		losses[i] = l
	}
	return losses
}

// tagDeletedMessage says how the in-use tag goes.
func tagDeletedMessage(im InUse, rm removed) string {
	how := fmt.Sprintf("tag %s is deleted by %s (%s, run %d)", im.Tag, rm.policy, rm.Rule.Rule, rm.run)
	if rm.with != "" {
		how = fmt.Sprintf("tag %s goes with manifest %s, which %s deletes (%s, run %d)", im.Tag, rm.with, rm.policy, rm.Rule.Rule, rm.run)
	}
	if !rm.Eligible.IsZero() {
		how += ", eligible since " + rm.Eligible.UTC().Format("2006-01-02T15:04:05Z")
	}
	return how + ": the next pull of " + im.Reference + " says manifest unknown"
}

// pieceName names what a loss is of the image.
func pieceName(l gcresult.Loss) string {
	switch l.Code {
	case types.ChildMissing:
		return "the index's " + cmp.Or(l.Platform, "unknown platform") + " manifest"
	case types.AttestationMissing:
		return "attestation manifest"
	}
	return "manifest"
}

// untaggedPin is the at-risk loss of a digest pin that a tag named before
// the runs and none after, while the manifest stays: the next cleanup of
// untagged manifests (or a garbage collector) deletes it.
func untaggedPin(r *cleanRepo, im InUse) []gcresult.Loss {
	if im.Digest == "" || r.after == nil {
		return nil
	}
	had := r.before.TagsOf(im.Digest)
	m := r.after.Manifests[im.Digest]
	if len(had) == 0 || len(r.after.TagsOf(im.Digest)) > 0 || m == nil || m.Archived {
		return nil
	}
	rm := r.gone.tags[had[0]]
	return []gcresult.Loss{{Code: types.PinnedDigestUntagged, Digest: im.Digest, Policy: rm.policy, Rule: rm.Rule.Rule, Keep: rm.Keep,
		Message: fmt.Sprintf("the pinned digest keeps pulling, but %s deletes its tag(s) %s (%s, run %d): untagged, it is what the next cleanup of untagged manifests or a garbage collector deletes", rm.policy, strings.Join(had, ", "), rm.Rule.Rule, rm.run)}}
}

// narrow judges the platform losses for the nodes the image's uses may run
// on (with --cluster, as scan does); a loss no node's platform needs is
// dropped into a note.
func (c *cleanupCheck) narrow(im InUse, losses []gcresult.Loss) []gcresult.Loss {
	if len(losses) == 0 {
		return losses
	}
	img := &types.Image{Reference: im.Reference, Uses: im.Uses}
	for _, l := range losses {
		img.Findings = append(img.Findings, types.NewFinding(l.Code, l.Digest, l.Platform, "%s", l.Message))
	}
	cluster.NarrowToNodes(img)
	var out []gcresult.Loss
	for i, f := range img.Findings {
		l := losses[i]
		l.Code, l.Message = f.Code, f.Message
		if f.Severity < types.SeverityWarning {
			note(c.rep, "", im.Reference+": "+f.Message)
			continue
		}
		out = append(out, l)
	}
	return out
}

// cleanupArtifacts lists the signatures and attestations of the image
// (resolved to digest) the runs delete, and returns the refusal they
// cause under the admission policies, if any. Artifacts that could not be
// read leave a note, and under admission policies make the prediction
// incomplete.
func (c *cleanupCheck) cleanupArtifacts(ctx context.Context, r *cleanRepo, im InUse, digest string, before, after cleanedView) *gcresult.Entry {
	if digest == "" {
		return nil
	}
	sets, err := findArtifacts(ctx, before, after, im, digest)
	if err != nil {
		note(c.rep, "", "the signatures and attestations of "+im.Reference+" could not be read, so their loss is not predicted: "+err.Error())
		if c.copts.Admission != nil && len(c.copts.Admission.Rules) > 0 {
			c.problems = append(c.problems, fmt.Errorf("%s: whether the cleanup deletes what its image policies require is not known: %w", im.Reference, err))
		}
		return nil
	}
	lost := sets.losses(im)
	var keeps []string
	for i, a := range lost {
		how, rm, ok := artifactRemoval(r.gone, a)
		if ok {
			lost[i].Reason = fmt.Sprintf("%s by %s (%s, run %d)", how, rm.policy, rm.Rule.Rule, rm.run)
			keeps = appendKeep(keeps, rm.Keep)
		}
	}
	c.rep.WouldLoseArtifacts = append(c.rep.WouldLoseArtifacts, lost...)
	e := refusal(ctx, im, digest, sets, lost, c.copts.Admission)
	if e != nil && len(keeps) > 0 {
		e.Advice = strings.Join(keeps, "; ") + "; or " + e.Advice
	}
	return e
}

// artifactRemoval says how the runs remove an artifact: its manifest
// deleted or archived, or the tag naming it (cosign's .sig, .att) removed.
func artifactRemoval(g *removal, a gcresult.ArtifactLoss) (string, removed, bool) {
	if rm, ok := g.manifests[a.Digest]; ok {
		return "deleted", rm, true
	}
	if rm, ok := g.archived[a.Digest]; ok {
		return "archived", rm, true
	}
	if i := strings.LastIndex(a.Ref, ":"); i >= 0 && !strings.Contains(a.Ref, "@") {
		if rm, ok := g.tags[a.Ref[i+1:]]; ok {
			return "its tag " + a.Ref[i+1:] + " deleted", rm, true
		}
	}
	return "", removed{}, false
}

func appendKeep(keeps []string, k string) []string {
	if k == "" || slices.Contains(keeps, k) {
		return keeps
	}
	return append(keeps, k)
}

// cleanupEntry is the WouldBreak entry of an in-use image that loses
// something to the cleanup; nil when it loses nothing. Its advice is each
// rule's fix in the cleanup's own terms.
func cleanupEntry(im InUse, digest string, losses []gcresult.Loss) *gcresult.Entry {
	if len(losses) == 0 {
		return nil
	}
	e := &gcresult.Entry{Reference: im.Reference, Repository: im.Repository, Digest: digest, Verdict: types.AtRisk, Losses: losses, Uses: im.Uses}
	var why, keeps []string
	for _, l := range losses {
		if l.Code.Severity() >= types.SeverityCritical {
			e.Verdict = types.Broken
		}
		if l.Digest != "" && !slices.Contains(e.Lost, l.Digest) {
			e.Lost = append(e.Lost, l.Digest)
		}
		why = append(why, l.Message)
		keeps = appendKeep(keeps, cmp.Or(l.Keep, l.Code.Advice(l.Platform, l.Digest)))
	}
	slices.Sort(e.Lost)
	e.Reason = strings.Join(why, "; ")
	e.Advice = strings.Join(keeps, "; ")
	return e
}
