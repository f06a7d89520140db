package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// Finder finds an image's signatures, attestations and SBOMs
// (artifacts.Finder).
type Finder interface {
	Find(ctx context.Context, repo name.Repository, subject string) (artifacts.Set, error)
}

// Checker applies policies to scanned images.
type Checker struct {
	Policies *Policies
	Finder   Finder
	// Parse gives an image's repository as the registry client reaches
	// it (scan.Scanner.Parse: its insecure hosts included).
	Parse func(ref string) (string, name.Reference, error)
	// Verifier, when set, verifies a present signature against the
	// rule's keys (verify.go); nil checks presence alone.
	Verifier Verifier

	verified verifyCache
}

// Apply adds to each resolved image of res what admission requires of
// it, and recomputes its verdict: for each rule that applies to a use
// and requires an artifact that is gone or not whole, SignatureMissing
// or SignedAttestationMissing, critical under an enforcing rule, a
// warning under an auditing one (or one whose namespace labels are not
// known); a fault finding when a fault hides the answer. An artifact
// that is not whole and that no rule requires is an ArtifactMissing
// info. Apply fails only when ctx ends.
func (c *Checker) Apply(ctx context.Context, res *types.Result) error {
	for _, im := range res.Images {
		if err := ctx.Err(); err != nil {
			return err
		}
		if im.Digest == "" {
			continue // not resolved: the walk's findings say why
		}
		im.Findings = append(im.Findings, c.Findings(ctx, im)...)
		im.UpdateVerdict()
	}
	return ctx.Err()
}

// Findings are what admission says of one resolved image.
func (c *Checker) Findings(ctx context.Context, im *types.Image) []types.Finding {
	ref, err := imageref.Parse(im.Reference)
	if err != nil {
		return nil
	}
	applied := c.applied(im, ref)
	sets := &repoSets{c: c, im: im, got: map[string]repoSet{}}
	set, ferr := sets.get(ctx, "")
	if ferr != nil {
		if len(applied) == 0 {
			return nil // nothing is required: a fault here is no one's concern
		}
		return []types.Finding{types.NewFinding(types.FaultCode(ferr), im.Digest, "",
			"could not look for the signatures and attestations %s requires of %s: %v", applied[0].rule.String(), types.ShortDigest(im.Digest), ferr)}
	}
	var out []types.Finding
	raised := map[artifacts.Kind]bool{}
	for _, a := range applied {
		out = append(out, a.digestRefusal(im)...) // refused before any signature is read (digest.go)
		fs := a.verdict(ctx, sets, im.Digest)
		if len(fs) == 0 {
			fs = c.verifyFindings(ctx, a, im, sets)
		}
		if len(fs) == 0 {
			fs = a.notEvaluated(im) // an ImageValidatingPolicy's undecided part (ivp.go)
		}
		for _, f := range fs {
			if f.Code == types.SignatureMissing {
				raised[artifacts.Signature] = true
			} else if f.Code == types.SignedAttestationMissing {
				raised[artifacts.Attestation] = true
			}
		}
		out = append(out, fs...)
	}
	return append(out, unrequired(set, raised)...)
}

// ruleUses is a rule and the uses of an image it applies to, with one
// failure action.
type ruleUses struct {
	rule     *Rule
	enforce  bool // the rule refuses these uses' pods
	unsure   bool // true only when it is unsure for every use
	workload bool // true only when it selects every use's workload, not its Pod
	uses     []types.Use
}

// ruleMode keys the uses a rule applies to with one failure action.
type ruleMode struct {
	rule    *Rule
	enforce bool
}

// applied groups the rules that apply to im's uses, rule by rule in the
// order read, and by failure action (a Kyverno override may enforce a
// rule in one namespace and audit it in another).
func (c *Checker) applied(im *types.Image, ref imageref.Ref) []*ruleUses {
	var out []*ruleUses
	byRule := map[ruleMode]*ruleUses{}
	for _, u := range im.Uses {
		for _, a := range c.Policies.Applying(u, ref) {
			k := ruleMode{a.Rule, a.Enforce}
			ru := byRule[k]
			if ru == nil {
				ru = &ruleUses{rule: a.Rule, enforce: a.Enforce, unsure: true, workload: true}
				byRule[k] = ru
				out = append(out, ru)
			}
			ru.unsure = ru.unsure && a.Unsure
			ru.workload = ru.workload && a.WorkloadOnly
			ru.uses = append(ru.uses, u)
		}
	}
	return out
}

// repoSets finds one image's artifacts once per repository a rule reads
// them from: "" is the image's own, another the repository a policy
// names (Kyverno's repository, policy-controller's source.oci), where
// cosign keeps them as sha256-<hex>.sig tags of the image's digest.
type repoSets struct {
	c   *Checker
	im  *types.Image
	got map[string]repoSet
}

type repoSet struct {
	set artifacts.Set
	err error
}

// get asks the Finder for the image's artifacts in repo, once.
func (s *repoSets) get(ctx context.Context, repo string) (artifacts.Set, error) {
	if r, ok := s.got[repo]; ok {
		return r.set, r.err
	}
	set, err := s.find(ctx, repo)
	s.got[repo] = repoSet{set, err}
	return set, err
}

func (s *repoSets) find(ctx context.Context, repo string) (artifacts.Set, error) {
	at := s.im.Reference
	if repo != "" {
		at = repo
	}
	_, r, err := s.c.Parse(at)
	if err != nil {
		return artifacts.Set{}, fmt.Errorf("parsing %s: %w", at, err)
	}
	set, err := s.c.Finder.Find(ctx, r.Context(), s.im.Digest)
	if err != nil {
		if repo != "" {
			return set, fmt.Errorf("looking for the artifacts of %s in %s: %w", s.im.Reference, repo, err)
		}
		return set, fmt.Errorf("looking for the artifacts of %s: %w", s.im.Reference, err)
	}
	return set, nil
}

// presence is whether a rule's needs are met, and what is not.
type presence struct {
	state   artifacts.Presence
	lacking []lack // what is missing, or unknown
}

// lack is one artifact a rule needs and the set lacks.
type lack struct {
	kind      artifacts.Kind
	predicate string
	state     artifacts.Presence
	seen      []artifacts.Artifact // matching artifacts that are not whole
	set       artifacts.Set        // where it was looked for
	format    Format               // the layout the engine looks in
	err       error                // the set could not be read at all
}

// verdict is the findings for one rule over the set.
func (ru *ruleUses) verdict(ctx context.Context, sets *repoSets, digest string) []types.Finding {
	p := ru.rule.presence(ctx, sets)
	if p.state == artifacts.Present {
		return nil
	}
	var out []types.Finding
	for _, l := range p.lacking {
		if l.state == artifacts.Unknown {
			out = append(out, ru.faultFinding(l, digest))
			continue
		}
		out = append(out, ru.missingFinding(l, digest))
	}
	return out
}

// presence meets the rule's alternatives against the set: present when
// one is met, else unknown when a fault may hide one, else missing; the
// lacks are the first alternative's not met (the unknown one's, if any).
func (r *Rule) presence(ctx context.Context, sets *repoSets) presence {
	best := presence{state: artifacts.Missing}
	for i, n := range r.Alternatives {
		p := needsIn(ctx, sets, n)
		if p.state == artifacts.Present {
			return p
		}
		if i == 0 || p.state == artifacts.Unknown && best.state == artifacts.Missing {
			best = p
		}
	}
	return best
}

// needsIn meets one alternative in the repository it reads from. An
// alternative whose entries read from different repositories is not
// judged by presence: each entry's verification looks in its own; nor is
// one the engine refuses before reading anything (refusal.go): what is
// there changes nothing, verification says the engine's refusal.
func needsIn(ctx context.Context, sets *repoSets, n Needs) presence {
	if n.PerEntry || n.refusal != nil {
		return presence{state: artifacts.Present}
	}
	set, err := sets.get(ctx, n.Repository)
	if err != nil {
		return presence{state: artifacts.Unknown, lacking: []lack{{kind: artifacts.Signature, state: artifacts.Unknown, err: err}}}
	}
	return needsPresence(set, n)
}

// needsPresence meets one alternative: every artifact it names.
func needsPresence(set artifacts.Set, n Needs) presence {
	var qs []artifacts.Query
	if n.Signature {
		qs = append(qs, artifacts.Query{Kind: artifacts.Signature})
	}
	for _, p := range n.Predicates {
		qs = append(qs, artifacts.Query{Kind: artifacts.Attestation, PredicateType: p})
	}
	out := presence{state: artifacts.Present}
	for _, q := range qs {
		st, seen := queryPresence(set, q, n.Format)
		if st == artifacts.Present || bundleSignsFor(set, q, n.Format) {
			continue
		}
		out.lacking = append(out.lacking, lack{kind: q.Kind, predicate: q.PredicateType, state: st, seen: seen, set: set, format: n.Format})
		if st == artifacts.Unknown || out.state == artifacts.Present {
			out.state = st
		}
	}
	return out
}

// bundleSignsFor: for an engine that reads bundles, a whole attestation
// bundle stands for the signature, since the engine takes any bundle
// that verifies with the key for one, as cosign verify
// --new-bundle-format does; verification then decides. An
// ImageValidatingPolicy (AnyFormat: bundles when the image has any;
// kyverno/kyverno pkg/image/verifiers/ivpol/cosign/verifier.go,
// VerifyImageSignature: cosign.VerifyImageAttestations over every bundle,
// no predicate type asked); Kyverno type: SigstoreBundle (Bundle;
// pkg/image/verifiers/cpol/cosign/sigstore.go, fetchBundles: every
// referrer of artifact type application/vnd.dev.sigstore.bundle*, filtered
// by predicate type only for an attestation (opts.Type), then
// verifyBundles with the image digest as the artifact, which a DSSE
// statement meets by its subject). policy-controller's bundle
// signatures are refused before (bundleRefusal).
func bundleSignsFor(set artifacts.Set, q artifacts.Query, f Format) bool {
	if f == Legacy || q.Kind != artifacts.Signature {
		return false
	}
	bundles := artifacts.Query{Kind: artifacts.Attestation, Layouts: []artifacts.Layout{artifacts.ReferrersAPI, artifacts.ReferrersTag}}
	return slices.ContainsFunc(set.Match(bundles), func(a artifacts.Artifact) bool {
		return a.Whole && strings.HasPrefix(a.ArtifactType, "application/vnd.dev.sigstore.bundle")
	})
}

// queryPresence is Set.Presence narrowed to the layouts a format is kept
// in, with the matching artifacts that are not whole.
func queryPresence(set artifacts.Set, q artifacts.Query, f Format) (artifacts.Presence, []artifacts.Artifact) {
	hidden := false
	for _, fd := range set.Faults {
		if fd.Digest == "" || fd.Digest == set.Image {
			hidden = true
		}
	}
	var seen []artifacts.Artifact
	for _, a := range set.Match(q) {
		if !inFormat(a.Layout, f) {
			continue
		}
		if a.Whole {
			return artifacts.Present, nil
		}
		seen = append(seen, a)
		hidden = hidden || slices.ContainsFunc(a.Findings, func(fd types.Finding) bool { return fd.Code.Fault() })
	}
	if hidden {
		return artifacts.Unknown, seen
	}
	return artifacts.Missing, seen
}

// inFormat reports whether an artifact found by layout l is where an
// engine verifying format f looks.
func inFormat(l artifacts.Layout, f Format) bool {
	switch f {
	case Legacy:
		return l == artifacts.CosignTag
	case Bundle:
		return l == artifacts.ReferrersAPI || l == artifacts.ReferrersTag
	}
	return true
}

// missingFinding says that an artifact the rule needs is gone.
func (ru *ruleUses) missingFinding(l lack, digest string) types.Finding {
	code, what := types.SignatureMissing, "a signature"
	if l.kind == artifacts.Attestation {
		code, what = types.SignedAttestationMissing, "an attestation"
		if l.predicate != "" {
			what += " of predicate type " + l.predicate
		}
	}
	msg := fmt.Sprintf("%s%s requires %s of %s for %s; %s%s", ru.rule.named(), ru.overridden(), what, types.ShortDigest(digest), usesText(ru.uses), seenText(l.seen), invisibleText(l))
	return ru.act(types.NewFinding(code, digest, "", "%s", msg))
}

// act finishes a finding about what the rule requires with what the
// engine does about it: under audit or warn the pod is admitted (a
// warning); where it is not known whether the rule selects the pod, a
// warning too; under enforce the pod is refused (the code's own
// severity).
func (ru *ruleUses) act(f types.Finding) types.Finding {
	switch {
	case !ru.enforce:
		f.Severity = types.SeverityWarning
		f.Message += ": the pod is admitted, the policy reports it"
	case ru.workload:
		f.Severity = types.SeverityWarning
		f.Message += ": the rule selects the workload, not the Pod a restart creates, so a restarted pod is admitted; the next change of the workload's image will be refused"
	case ru.unsure:
		f.Severity = types.SeverityWarning
		f.Message += ": if the policy selects the pod (it selects by namespace labels that are not known, or by the pod's own labels or annotations), the pod will be refused"
	default:
		f.Message += ": the pod will be refused"
	}
	return f
}

// overridden says when the uses' failure action is not the rule's own.
func (ru *ruleUses) overridden() string {
	switch {
	case ru.enforce == ru.rule.Enforce:
		return ""
	case ru.enforce:
		return ", Enforce in this namespace (validationFailureActionOverrides)"
	}
	return ", Audit in this namespace (validationFailureActionOverrides)"
}

// faultFinding says that a fault hides whether a needed artifact is there.
func (ru *ruleUses) faultFinding(l lack, digest string) types.Finding {
	cause := types.Finding{Code: types.RegistryFault, Message: "a fault"}
	if l.err != nil {
		cause = types.Finding{Code: types.FaultCode(l.err), Message: l.err.Error()}
	}
	set := l.set
	for _, f := range set.Faults {
		if f.Digest == "" || f.Digest == set.Image { // a child's fault hides none of the image's own
			cause = f
			break
		}
	}
	for _, a := range l.seen {
		for _, f := range a.Findings {
			if f.Code.Fault() {
				cause = f
			}
		}
	}
	what := "a signature"
	if l.kind == artifacts.Attestation {
		what = "an attestation"
	}
	return types.NewAdvisedFinding(cause.Code, digest, "",
		fmt.Sprintf("%s requires %s of %s for %s, and whether it is there could not be asked: %s", ru.rule.named(), what, types.ShortDigest(digest), usesText(ru.uses), cause.Message),
		cause.Code.Advice("", digest))
}

// unrequired are info findings for the artifacts that are not whole, of
// a kind no rule raised a finding for; faults are left out.
func unrequired(set artifacts.Set, raised map[artifacts.Kind]bool) []types.Finding {
	var out []types.Finding
	for _, a := range set.Artifacts {
		if a.Whole || raised[a.Kind] || slices.ContainsFunc(a.Findings, func(f types.Finding) bool { return f.Code.Fault() }) {
			continue
		}
		out = append(out, types.NewFinding(types.ArtifactMissing, a.Digest, a.Platform,
			"the %s %s of %s is not whole (%s); no policy read requires it", a.Kind, a.Ref, types.ShortDigest(a.Subject), findingsText(a.Findings)))
	}
	return out
}

// seenText says what was found of a needed artifact.
func seenText(seen []artifacts.Artifact) string {
	if len(seen) == 0 {
		return "none is there"
	}
	a := seen[0]
	return fmt.Sprintf("%s is not whole (%s)", a.Ref, findingsText(a.Findings))
}

// findingsText lists findings' codes and messages.
func findingsText(fs []types.Finding) string {
	if len(fs) == 0 {
		return "no reason given"
	}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, string(f.Code)+": "+f.Message)
	}
	return strings.Join(parts, "; ")
}

// usesText names up to three uses.
func usesText(uses []types.Use) string {
	var parts []string
	for i, u := range uses {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(uses)-3))
			break
		}
		parts = append(parts, useText(u))
	}
	return strings.Join(parts, ", ")
}

// useText names one use: "Deployment shop/web", or file:line.
func useText(u types.Use) string {
	switch {
	case u.Kind != "" || u.Name != "":
		return strings.TrimSpace(u.Kind + " " + strings.TrimPrefix(namespaceOf(u)+"/"+u.Name, "/"))
	case u.File != "":
		return fmt.Sprintf("%s:%d", u.File, u.Line)
	}
	return "namespace " + namespaceOf(u)
}
