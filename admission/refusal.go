package admission

import (
	"context"
	"fmt"
	"strings"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/types"
)

// engineRefusal is an engine's own error for an alternative it refuses
// before reading any signature or attestation of the image (a
// policy-controller key authority with signatureFormat: bundle): every
// image the policy governs fails that alternative, signed or not.
type engineRefusal struct {
	// path is the field that makes the engine refuse, for the findings.
	path string
	// text is the engine's error, as it words it.
	text string
	// advice says what to change in the policy or the signing.
	advice string
	// unlessArtifact, when set, is the artifact type of a referrer the
	// engine reads first under a setting regcheck does not read; with one
	// there, whole, the refusal is not certain: unverifiable, unlessText
	// saying why.
	unlessArtifact, unlessText string
}

// refusalResult is the result of an alternative the engine refuses up
// front: refused, with the engine's text; an attestation refusal when the
// alternative requires attestations and no signature.
func refusalResult(n Needs) altResult {
	r := altResult{outcome: Refused, entry: KeyEntry{Path: n.refusal.path},
		verdict: Verdict{Outcome: Refused, Reason: n.refusal.text}, refusal: n.refusal}
	if !n.Signature && len(n.Predicates) > 0 {
		r.attestation, r.predicate = true, strings.Join(n.Predicates, ", ")
	}
	return r
}

// refusalIn is refusalResult met against the set the alternative reads
// from: unverifiable where a whole referrer of refusal.unlessArtifact is
// there (the engine may read it), or where the set could not be read to
// tell.
func refusalIn(ctx context.Context, sets *repoSets, n Needs) altResult {
	r := refusalResult(n)
	if n.refusal.unlessArtifact == "" {
		return r
	}
	set, err := sets.get(ctx, n.Repository)
	if err != nil {
		r.outcome, r.refusal = Unverifiable, nil
		r.verdict = Verdict{Outcome: Unverifiable, Fault: true, Cause: err, Reason: fmt.Sprintf("%s, unless %s: whether one is there could not be asked: %v", n.refusal.text, n.refusal.unlessText, err)}
		return r
	}
	for _, a := range set.Match(artifacts.Query{Kind: artifacts.Signature}) {
		if a.Whole && a.ArtifactType == n.refusal.unlessArtifact {
			r.outcome, r.refusal = Unverifiable, nil
			r.verdict = Verdict{Outcome: Unverifiable, Reason: fmt.Sprintf("%s is there; the engine refuses the authority (%s) unless %s", a.Ref, n.refusal.text, n.refusal.unlessText)}
			return r
		}
	}
	return r
}

// refusalFinding says that the engine refuses every image under the
// alternative, whatever is there, in its own words, and what to do (the
// finding's advice): broken under an enforcing rule, at-risk under a
// warning one (act).
func (ru *ruleUses) refusalFinding(r altResult, digest string) types.Finding {
	what, code := "a signature", types.SignatureRefused
	if r.attestation {
		what, code = "an attestation of predicate type "+r.predicate, types.AttestationRefused
	}
	msg := fmt.Sprintf("%s%s requires %s of %s by %s for %s; %s refuses that authority before reading any signature or attestation of the image, signed or not: %s",
		ru.rule.named(), ru.overridden(), what, types.ShortDigest(digest), r.entry.Path, usesText(ru.uses), ru.rule.Engine, r.verdict.Reason)
	return ru.act(types.NewAdvisedFinding(code, digest, "", msg, r.refusal.advice))
}
