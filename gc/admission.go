package gc

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// refusalAdvice says what to do about a signature or attestation the run
// deletes that an image policy requires.
const refusalAdvice = "keep what the policy requires: tag the signature or attestation (or the referrers tag index sha256-<hex> that lists it) before collecting, " +
	"or sign and attest the running digest again (cosign sign, cosign attest) right after the run; the image itself still pulls"

// refusal is the WouldBreak entry for an in-use image whose signature or
// attestation, required by an image policy that applies to one of its
// uses, is there now and gone after the run: broken under an enforcing
// policy (admission refuses the next pod), at-risk under an auditing one.
// Nil without policies, or when the run takes nothing a policy requires
// (what is missing already is not the run's doing).
func refusal(ctx context.Context, im InUse, digest string, sets artifactSets, lost []gcresult.ArtifactLoss, ps *admission.Policies) *gcresult.Entry {
	if ps == nil || len(ps.Rules) == 0 {
		return nil
	}
	before := required(ctx, ps, im, digest, sets.was)
	var added []types.Finding
	for _, f := range required(ctx, ps, im, digest, sets.is) {
		if !slices.ContainsFunc(before, func(b types.Finding) bool { return sameRequirement(b, f) }) {
			added = append(added, f)
		}
	}
	if len(added) == 0 {
		return nil
	}
	e := &gcresult.Entry{Reference: im.Reference, Repository: im.Repository, Digest: digest, Verdict: types.AtRisk, Uses: im.Uses, Advice: refusalAdvice}
	var why []string
	for _, f := range added {
		if f.Severity >= types.SeverityCritical {
			e.Verdict = types.Broken
		}
		l := gcresult.Loss{Code: f.Code, Message: "after the run, " + f.Message}
		for _, a := range lost {
			if a.Subject == digest && a.Kind == string(kindOf(f.Code)) && a.Digest != "" {
				l.Digest = cmp.Or(l.Digest, a.Digest)
				if !slices.Contains(e.Lost, a.Digest) {
					e.Lost = append(e.Lost, a.Digest)
				}
			}
		}
		e.Losses = append(e.Losses, l)
		why = append(why, l.Message)
	}
	slices.Sort(e.Lost)
	e.Reason = "the run deletes what an image policy requires: " + strings.Join(why, "; ")
	return e
}

// required are the findings of an image's policies over one view of its
// artifacts that say a required signature or attestation is not there.
func required(ctx context.Context, ps *admission.Policies, im InUse, digest string, set artifacts.Set) []types.Finding {
	c := &admission.Checker{Policies: ps, Finder: knownSet{set},
		Parse: func(string) (string, name.Reference, error) { return im.Reference, im.ref, nil }}
	var out []types.Finding
	for _, f := range c.Findings(ctx, &types.Image{Reference: im.Reference, Digest: digest, Uses: im.Uses}) {
		if f.Code == types.SignatureMissing || f.Code == types.SignedAttestationMissing {
			out = append(out, f)
		}
	}
	return out
}

// sameRequirement reports whether two findings are about the same rule's
// same requirement at the same severity: their messages agree up to what
// was found ("<policy> requires a signature of <digest> for <uses>").
func sameRequirement(a, b types.Finding) bool {
	ra, _, _ := strings.Cut(a.Message, "; ")
	rb, _, _ := strings.Cut(b.Message, "; ")
	return a.Code == b.Code && a.Severity == b.Severity && ra == rb
}

// kindOf is the artifact kind a requirement's code is about.
func kindOf(c types.Code) artifacts.Kind {
	if c == types.SignedAttestationMissing {
		return artifacts.Attestation
	}
	return artifacts.Signature
}

// knownSet is an admission.Finder that answers with a set already found.
type knownSet struct{ set artifacts.Set }

// Find returns the set.
func (k knownSet) Find(context.Context, name.Repository, string) (artifacts.Set, error) {
	return k.set, nil
}

// merge adds a refusal to the entry of an image the run also breaks.
func mergeEntry(e, r *gcresult.Entry) {
	if r == nil {
		return
	}
	e.Losses = append(e.Losses, r.Losses...)
	e.Lost = append(e.Lost, r.Lost...)
	slices.Sort(e.Lost)
	e.Lost = slices.Compact(e.Lost)
	e.Reason += "; " + r.Reason
	if r.Verdict == types.Broken {
		e.Verdict = types.Broken
	}
	e.Advice += "; and " + r.Advice
}
