package admission

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/oci"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/regcheck/regcheck/types"
)

// Attestation is one attestation a rule requires: its predicate type,
// the attestor sets that must have signed it, and the conditions on its
// content regcheck does not evaluate.
type Attestation struct {
	// PredicateType is the in-toto predicate type (a URI).
	PredicateType string
	// Sets are the attestor sets, every one of which must pass; none:
	// presence alone is checked.
	Sets []AttestorSet
	// Conditions names the checks on the attestation's content the
	// engine makes and regcheck does not (Kyverno conditions,
	// policy-controller policy): "" when there are none.
	Conditions string
	// Path is where the attestation is in the policy.
	Path string
}

// AttestationVerifier verifies the attestations of an image digest, of
// one predicate type, in format f (legacy .att tags, or sigstore bundle
// referrers), read in sigs, against one key entry, offline. A Verifier
// that also implements it has a rule's attestations verified; one that
// does not leaves them to the presence check.
type AttestationVerifier interface {
	VerifyAttestation(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, f Format, predicateType string) Verdict
}

var _ AttestationVerifier = CosignVerifier{}

// VerifyAttestation verifies ref's attestations of predicateType with
// e's key, as cosign verify-attestation --key --type does: in bundles
// (--new-bundle-format) or in the .att tag (cosign.VerifyImageAttestations,
// the in-toto subject checked against the digest), then the predicate
// type of those that verified. A refusal reached while a registry
// request failed is unverifiable, a fault (transportFaults.hide).
func (v CosignVerifier) VerifyAttestation(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, f Format, predicateType string) Verdict {
	ctx, faults := withTransportFaults(ctx)
	return faults.hide(v.verifyAttestation(ctx, ref, sigs, e, f, predicateType))
}

// verifyAttestation is VerifyAttestation's verification.
func (v CosignVerifier) verifyAttestation(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, f Format, predicateType string) Verdict {
	if f == Bundle {
		return v.verifyBundles(ctx, ref, sigs, e, func(p string) bool { return p == predicateType }, "attestation")
	}
	if r, ok := v.tufRefusal(e); ok {
		return r
	}
	if e.Unverifiable != "" {
		return Verdict{Outcome: Unverifiable, Reason: e.Unverifiable}
	}
	if len(e.Annotations) > 0 {
		return Verdict{Outcome: Unverifiable, Reason: fmt.Sprintf("the attestor at %s requires the annotations %s, which Kyverno compares with the attestations' payloads (pkg/image/verifiers/cpol/cosign/verifier.go, FetchAttestations, checkAnnotations): not evaluated by regcheck; check with kyverno test, or drop the attestor's annotations", e.Path, annotationsText(e.Annotations))}
	}
	if e.Keyless != nil {
		return v.verifyKeylessAttestation(ctx, ref, sigs, e, predicateType)
	}
	co, err := v.checkOpts(ctx, ref, sigs, e)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: err.Error()}
	}
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	co.Annotations = nil
	found, _, err := cosign.VerifyImageAttestations(ctx, ref, co, nameOptions(ref)...)
	if err != nil {
		return verdictOfAttestation(err)
	}
	return ofPredicateType(found, predicateType, func(att oci.Signature) Verdict {
		if !e.Tlog {
			return Verdict{Outcome: Verified}
		}
		return v.attestationTlog(ctx, ref, co, att, e, predicateType)
	})
}

// ofPredicateType is the verdict on the attestations cosign verified
// (found), as cosign verify-attestation --type judges them: the first of
// predicateType is judged by matched; one whose statement cannot be read
// is unverifiable (a fault); none of predicateType is a refusal in
// cosign's own words.
func ofPredicateType(found []oci.Signature, predicateType string, matched func(oci.Signature) Verdict) Verdict {
	var seen []string
	for _, att := range found {
		pt, err := attestationPredicate(att)
		if err != nil {
			// Not read, or not a statement: whether it is the one of
			// predicateType is not known, which is no refusal.
			return Verdict{Outcome: Unverifiable, Fault: true, Cause: err, Reason: err.Error()}
		}
		if pt != predicateType {
			seen = append(seen, pt)
			continue
		}
		return matched(att)
	}
	// cosign verify-attestation's own words for this.
	return Verdict{Outcome: Refused, Reason: fmt.Sprintf("none of the attestations matched the predicate type: %s, found: %s", predicateType, strings.Join(seen, ","))}
}

// verifyKeylessAttestation verifies ref's legacy attestations (.att) by
// their certificates, as verifyKeyless verifies signatures and cosign
// verify-attestation --certificate-identity --certificate-oidc-issuer
// --trusted-root does: chained to the Fulcio CA given, of one of the
// entry's identities, the log proof checked where the engine requires
// it (its integrated time then the time the certificate must be valid
// at), the in-toto subject checked against the digest; then the
// predicate type of those that verified.
func (v CosignVerifier) verifyKeylessAttestation(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, predicateType string) Verdict {
	co, missing := v.keylessOpts(ctx, ref, sigs, e, cosign.IntotoSubjectClaimVerifier, nil)
	if missing != nil {
		return v.uncertified(ctx, ref, sigs, e, attestations, *missing)
	}
	found, _, err := cosign.VerifyImageAttestations(ctx, ref, co, nameOptions(ref)...)
	if err != nil {
		if e.TlogSearch && !v.anySET(ref, co, attestations) {
			return Verdict{Outcome: Unverifiable, Reason: searchText("attestation", e) + " (offline, cosign says: " + err.Error() + ")"}
		}
		return verdictOfAttestation(err)
	}
	if k := e.Keyless.kyverno; k != nil {
		if v := kyvernoAttestationCerts(found, predicateType, k, e); v != nil {
			return *v
		}
	}
	return ofPredicateType(found, predicateType, func(oci.Signature) Verdict { return Verdict{Outcome: Verified} })
}

// kyvernoAttestationCerts is Kyverno's certificate match on the legacy
// attestations cosign verified (FetchAttestations): every one of
// predicateType must match the attestor, the first that does not
// refuses the image; nil when none refuses.
func kyvernoAttestationCerts(found []oci.Signature, predicateType string, k *kyvernoCert, e KeyEntry) *Verdict {
	for _, att := range found {
		if pt, err := attestationPredicate(att); err != nil || pt != predicateType {
			continue
		}
		if err := k.anyMatches([]oci.Signature{att}); err != nil {
			v := kyvernoCertRefusal(err, e)
			return &v
		}
	}
	return nil
}

// verdictOfAttestation reads cosign's error for attestations as
// verdictOf does for signatures: ErrNoMatchingAttestations is a refusal.
func verdictOfAttestation(err error) Verdict {
	var none *cosign.ErrNoMatchingAttestations
	if errors.As(err, &none) {
		return Verdict{Outcome: Refused, Reason: err.Error()}
	}
	return verdictOf(err)
}

// attestationTlog is a legacy attestation's log proof where the engine
// requires one, judged as VerifyLegacy judges a signature's: its SET
// (dev.sigstore.cosign/bundle) checked against the policy's Rekor key or
// the trusted root's, cosign.VerifyImageAttestations run again with the
// log required, and one of predicateType among those that pass; none
// carried is a refusal, or unknown where the engine searches Rekor.
func (v CosignVerifier) attestationTlog(ctx context.Context, ref name.Digest, co *cosign.CheckOpts, att oci.Signature, e KeyEntry, predicateType string) Verdict {
	if !carriesSET([]oci.Signature{att}) {
		if e.TlogSearch {
			return Verdict{Outcome: Unverifiable, Reason: searchText("attestation", e)}
		}
		return Verdict{Outcome: Refused, Reason: fmt.Sprintf("the attestation verifies with the key at %s, but carries no transparency-log proof, which the policy requires (attested with --tlog-upload=false); set rekor.ignoreTlog: true if the log is not used, or attest again with the log", e.Path)}
	}
	withLog, missing := v.logOpts(co, e)
	if missing != nil {
		return *missing
	}
	found, _, err := cosign.VerifyImageAttestations(ctx, ref, withLog, nameOptions(ref)...)
	if err != nil {
		return verdictOfAttestation(err)
	}
	for _, a := range found {
		if pt, err := attestationPredicate(a); err == nil && pt == predicateType {
			return Verdict{Outcome: Verified}
		}
	}
	return Verdict{Outcome: Refused, Reason: fmt.Sprintf("no attestation of predicate type %s passes with its transparency-log proof checked", predicateType)}
}

// attestationPredicate is the predicate type of a legacy attestation's
// in-toto statement (a DSSE envelope whose payload is base64), read as
// cosign verify-attestation and policy-controller read it (cosign
// pkg/policy/attestation.go AttestationToPayloadJSON;
// sigstore/policy-controller pkg/webhook/validator.go,
// ValidatePolicyAttestationsForAuthority): from the signed statement, not
// the layer's predicateType annotation, which is not signed. att is
// cosign's static copy of what it verified (static.Copy), so its payload
// is in memory: no second GET. A failed read is a types.ErrRegistry, a
// payload that does not parse a types.ErrBadResponse.
func attestationPredicate(att oci.Signature) (string, error) {
	raw, err := att.Payload()
	if err != nil {
		return "", fmt.Errorf("%w: reading the attestation: %w", types.ErrRegistry, err)
	}
	var env struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return "", fmt.Errorf("%w: the attestation is not a DSSE envelope: %w", types.ErrBadResponse, err)
	}
	body, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return "", fmt.Errorf("%w: the attestation's DSSE payload is not base64: %w", types.ErrBadResponse, err)
	}
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return "", fmt.Errorf("%w: the attestation's payload is not an in-toto statement: %w", types.ErrBadResponse, err)
	}
	return st.PredicateType, nil
}

// kyvernoAttestations reads a verifyImages entry's attestations[]: the
// predicate type (type, or the older predicateType), its attestors (or,
// where it names none, Kyverno's empty attestor: emptyAttestor), and
// whether it has conditions. Each entry reads in its own repository,
// else the rule's.
func kyvernoAttestations(vi map[string]any, repo string) []Attestation {
	as, _, _ := unstructured.NestedSlice(vi, "attestations")
	var out []Attestation
	for i, raw := range as {
		a, _ := raw.(map[string]any)
		t, _, _ := unstructured.NestedString(a, "type")
		if t == "" {
			t, _, _ = unstructured.NestedString(a, "predicateType")
		}
		if t == "" {
			continue
		}
		path := fmt.Sprintf("attestations[%d]", i)
		at := Attestation{PredicateType: t, Path: path, Sets: emptyAttestor(path)}
		if list, _, _ := unstructured.NestedSlice(a, "attestors"); len(list) > 0 {
			at.Sets = attestorSets(list, path+".", false)
		}
		at.Sets = withRepository(at.Sets, repo)
		if _, ok := a["conditions"]; ok {
			at.Conditions = path + ".conditions (JMESPath)"
		}
		out = append(out, at)
	}
	return out
}

// authorityAttestations reads a ClusterImagePolicy authority's
// attestations[]: each signed by the authority's key (its sets), with
// its policy (CUE or Rego) unevaluated.
func authorityAttestations(a map[string]any, sets []AttestorSet, repo string) []Attestation {
	atts, _, _ := unstructured.NestedSlice(a, "attestations")
	var out []Attestation
	for i, raw := range atts {
		at, _ := raw.(map[string]any)
		t, _, _ := unstructured.NestedString(at, "predicateType")
		if t == "" {
			continue
		}
		path := fmt.Sprintf("attestations[%d]", i)
		x := Attestation{PredicateType: policyControllerPredicate(t), Path: path, Sets: withRepository(sets, repo)}
		if _, ok := at["policy"]; ok {
			kind, _, _ := unstructured.NestedString(at, "policy", "type")
			x.Conditions = fmt.Sprintf("%s.policy (%s)", path, cmp.Or(kind, "a policy"))
		}
		out = append(out, x)
	}
	return out
}

// withRepository is sets with repo as the repository of each entry that
// names none.
func withRepository(sets []AttestorSet, repo string) []AttestorSet {
	out := slices.Clone(sets)
	for i := range out {
		out[i].Entries = slices.Clone(out[i].Entries)
		for j := range out[i].Entries {
			if out[i].Entries[j].Repository == "" {
				out[i].Entries[j].Repository = repo
			}
		}
	}
	return out
}

// attestationResult verifies one attestation a rule requires against its
// sets: as a signature's sets are verified, then, when it verifies and
// the engine checks its content too, unverifiable: the conditions are
// not evaluated, never ok by silence.
func (c *Checker) attestationResult(ctx context.Context, ref name.Digest, f Format, a Attestation) altResult {
	r := c.alternative(ctx, ref, a.Sets, check{format: f, predicate: a.PredicateType, attestation: true})
	r.attestation, r.predicate = true, a.PredicateType
	if r.outcome == Verified && a.Conditions != "" {
		r.outcome, r.conditions = Unverifiable, a.Conditions
	}
	return r
}

// emptyAttestor is what Kyverno 1.19 verifies an attestation that names
// no attestors with: one set of one empty attestor (kyverno/kyverno
// pkg/engine/internal/imageverifier.go, "add an empty attestor to allow
// fetching and checking attestations"; the rule's attestors are not
// used, and api/kyverno/v1 ImageVerification.Convert gives the
// deprecated key to the rule's signature only). With neither key nor
// certificate, cosign verifies keyless against Sigstore's public-good
// roots (Kyverno's TUF root, which --trusted-root stands for here), the
// log and the SCT required, and Kyverno matches no identity.
func emptyAttestor(path string) []AttestorSet {
	e := KeyEntry{Path: path + " (no attestors: Kyverno's empty keyless attestor)", Tlog: true,
		Keyless: &Keyless{kyverno: &kyvernoCert{}}}
	e.kyvernoTUF = kyvernoTUF(nil, e)
	return []AttestorSet{{Entries: []KeyEntry{e}}}
}

// ruleConditionsFinding says that an alternative of the rule verifies
// and that the check the engine then makes of the whole policy (a
// ClusterImagePolicy's spec.policy) is not evaluated: unknown, never ok.
func (ru *ruleUses) ruleConditionsFinding(n Needs, digest string) types.Finding {
	what := "its signature"
	if len(n.Predicates) > 0 {
		what = "its attestations of " + strings.Join(n.Predicates, ", ")
	}
	return types.NewAdvisedFinding(types.SignatureUnverifiable, digest, "",
		fmt.Sprintf("%s: %s of %s for %s verify, and the policy's %s, which the engine evaluates next, is not evaluated by regcheck: whether the engine admits the pod is not known",
			ru.rule.named(), what, types.ShortDigest(digest), usesText(ru.uses), ru.rule.Conditions),
		"check the policy with the engine itself (policy-controller's policy-tester --policy FILE --image IMAGE)")
}

// conditionsFinding says that an attestation verifies and that what the
// engine checks of its content is not evaluated: unknown, never ok.
func (ru *ruleUses) conditionsFinding(r altResult, digest string) types.Finding {
	return types.NewAdvisedFinding(types.SignatureUnverifiable, digest, "",
		fmt.Sprintf("%s requires an attestation of predicate type %s of %s for %s; it verifies with the attestor's key, and its conditions (%s) are not evaluated by regcheck: whether the engine admits the pod is not known",
			ru.rule.named(), r.predicate, types.ShortDigest(digest), usesText(ru.uses), r.conditions),
		"check the attestation's conditions with the engine itself (kyverno test, or cosign verify-attestation --policy for a CUE or Rego policy)")
}
