package admission

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/oci"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/types"
)

// BundleVerifier verifies the sigstore bundle signatures of an image
// digest (cosign v3's format: OCI 1.1 referrers of the digest), read in
// sigs, against one key entry, offline. A Verifier that also implements
// it has a rule's bundles verified; one that does not leaves them to the
// presence check.
type BundleVerifier interface {
	VerifyBundle(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) Verdict
}

var _ BundleVerifier = CosignVerifier{}

// VerifyBundle verifies ref's signature bundles with e's key, as cosign
// verify --new-bundle-format does (pkg/cosign GetBundles, then
// VerifyNewBundle on each with the digest as the artifact), the log
// ignored first (the key decides), then, where the engine requires a log
// proof, holding the bundle that verified to bundleTlog. Any bundle of the
// digest is a signature, whatever its statement's predicate type (an
// attestation bundle too), as Kyverno type: SigstoreBundle takes it
// (kyverno/kyverno pkg/image/verifiers/cpol/cosign/sigstore.go,
// fetchBundles: no predicate type asked for a signature) and cosign
// verify --new-bundle-format does. A refusal reached while a registry
// request failed is unverifiable, a fault (transportFaults.hide); so is a
// bundle that verifies while another could not be read, since Kyverno's
// fetchBundles fails on any referrer it cannot read where cosign's
// GetBundles passes over it.
func (v CosignVerifier) VerifyBundle(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) Verdict {
	ctx, faults := withTransportFaults(ctx)
	r := faults.hide(v.verifyBundles(ctx, ref, sigs, e, func(string) bool { return true }, "signature"))
	if cause := faults.err(); cause != nil && r.Outcome == Verified {
		return Verdict{Outcome: Unverifiable, Fault: true, Cause: cause, Reason: fmt.Sprintf(
			"a bundle verifies with the key, and another referrer of the digest could not be read (%v): Kyverno's SigstoreBundle verifier fails on any it cannot read (pkg/image/verifiers/cpol/cosign/sigstore.go, fetchBundles), so it admits nothing until the registry answers", cause)}
	}
	return r
}

// verifyBundles verifies the bundles of ref whose in-toto predicate type
// wants accepts ("" for a message signature), with e's key: Verified
// when one verifies (and its log proof passes where the engine requires
// one), Refused with cosign's text when every one is refused; Unverifiable
// when a bundle's statement does not parse, or none wanted was read (the
// finder saw one: GetBundles passes over a referrer it cannot read). A
// keyless entry is verified by its certificate (verifyKeylessBundles).
func (v CosignVerifier) verifyBundles(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, wants func(string) bool, what string) Verdict {
	if e.Unverifiable != "" {
		return Verdict{Outcome: Unverifiable, Reason: e.Unverifiable}
	}
	if v := kyvernoUnbuildable(e); v.Outcome != Verified {
		return v
	}
	if e.Keyless != nil {
		return v.verifyKeylessBundles(ctx, ref, sigs, e, wants, what)
	}
	co, err := v.checkOpts(ctx, ref, sigs, e)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: err.Error()}
	}
	co.NewBundleFormat = true
	co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
	// Kyverno's SigstoreBundle path does not look at annotations
	// (annotations.go): the bundle's subject annotations are not held to
	// the entry's.
	co.Annotations = nil
	bundles, h, policy, r := readBundles(ctx, ref, co.RegistryClientOpts)
	if r != nil {
		return *r
	}
	wanted, seen, garbled := wantedBundles(bundles, wants)
	var errs []error
	for _, b := range wanted {
		if err := verifyOneBundle(ctx, co, policy, b, *h); err != nil {
			errs = append(errs, err)
			continue
		}
		if v := bundleLayerAnnotations(b, e); v.Outcome != Verified {
			return v
		}
		switch r := v.kyvernoObserverTime(b, policy, e, co.SigVerifier); r.Outcome {
		case Refused:
			errs = append(errs, errors.New(r.Reason))
			continue
		case Unverifiable:
			return r
		}
		if !e.Tlog {
			return Verdict{Outcome: Verified}
		}
		// As cosign, any one bundle that passes with its log proof.
		switch r := v.bundleTlog(ctx, co, policy, b, e); r.Outcome {
		case Refused:
			errs = append(errs, errors.New(r.Reason))
		default:
			return r
		}
	}
	return bundlesOutcome(ctx, what, garbled, errs, seen)
}

// wantedBundles splits bundles into those whose predicate type wants
// accepts, the predicate types of the others, and the first statement
// that does not parse.
func wantedBundles(bundles []*sgbundle.Bundle, wants func(string) bool) (wanted []*sgbundle.Bundle, seen []string, garbled error) {
	for _, b := range bundles {
		pt, err := bundlePredicate(b)
		switch {
		case err != nil:
			garbled = cmp.Or(garbled, err)
		case !wants(pt):
			seen = append(seen, pt)
		default:
			wanted = append(wanted, b)
		}
	}
	return wanted, seen, garbled
}

// readBundles reads ref's bundles as cosign verify --new-bundle-format
// does (pkg/cosign GetBundles), and the policy that holds each to the
// digest; a verdict when they cannot be read: GetBundles passes over a
// referrer it cannot read (a fault as well as a garbled bundle), so
// after the finder found the bundle, "none" is no refusal.
func readBundles(ctx context.Context, ref name.Digest, opts []ociremote.Option) ([]*sgbundle.Bundle, *v1.Hash, verify.ArtifactPolicyOption, *Verdict) {
	bundles, h, err := cosign.GetBundles(ctx, ref, opts, nameOptions(ref)...)
	if err != nil {
		return nil, nil, nil, &Verdict{Outcome: Unverifiable, Fault: true, Reason: "reading the bundles: " + err.Error()}
	}
	digest, err := hex.DecodeString(h.Hex)
	if err != nil {
		return nil, nil, nil, &Verdict{Outcome: Unverifiable, Reason: fmt.Sprintf("the digest %s: %v", h, err)}
	}
	return bundles, h, verify.WithArtifactDigest(h.Algorithm, digest), nil
}

// bundlesOutcome is the verdict when no bundle of what verified: a
// bundle whose statement does not parse leaves it unverifiable (a
// fault), as does none of what read (unreadBundle); else cosign's
// refusals of each.
func bundlesOutcome(ctx context.Context, what string, garbled error, errs []error, seen []string) Verdict {
	switch {
	case garbled != nil:
		return Verdict{Outcome: Unverifiable, Fault: true, Cause: garbled, Reason: garbled.Error()}
	case len(errs) == 0:
		return unreadBundle(ctx, what, seen)
	}
	return Verdict{Outcome: Refused, Reason: "no matching bundles: " + errors.Join(errs...).Error()}
}

// unreadBundle is the verdict when no bundle of what was read: the
// artifacts finder saw one (presence is its to prove), so it was passed
// over or read as another kind. Unverifiable: a fault when a request
// failed.
func unreadBundle(ctx context.Context, what string, seen []string) Verdict {
	v := Verdict{Outcome: Unverifiable, Reason: fmt.Sprintf("no %s bundle of the digest was read (bundles of predicate types %v were): the one the artifacts finder saw was passed over by cosign (GetBundles skips a referrer it cannot read) or read as another kind", what, seen)}
	if cause := transportFaultsOf(ctx).err(); cause != nil {
		v.Fault, v.Cause = true, cause
		v.Reason += fmt.Sprintf(": %v", cause)
	}
	return v
}

// verifyOneBundle is cosign's check of one bundle
// (verifyImageAttestationsSigstoreBundle): the signature with the key and
// the artifact digest, then the in-toto statement's subject against it.
func verifyOneBundle(ctx context.Context, co *cosign.CheckOpts, policy verify.ArtifactPolicyOption, b *sgbundle.Bundle, h v1.Hash) error {
	if _, err := cosign.VerifyNewBundle(ctx, co, policy, b); err != nil {
		return err
	}
	env, ok := b.Content.(*protobundle.Bundle_DsseEnvelope)
	if !ok {
		return nil // a message signature: the digest is what was signed
	}
	body, err := json.Marshal(env.DsseEnvelope)
	if err != nil {
		return fmt.Errorf("reading the bundle's DSSE envelope: %w", err)
	}
	att, err := static.NewAttestation(body)
	if err != nil {
		return fmt.Errorf("reading the bundle's DSSE envelope: %w", err)
	}
	return co.ClaimVerifier(att, h, co.Annotations)
}

// bundleLayerAnnotations holds a bundle that verified to an
// ImageValidatingPolicy's annotations: Kyverno compares them with the
// oci.Signature cosign.VerifyImageAttestations makes of the bundle
// (static.NewAttestation of its DSSE envelope, whose layer annotations
// are cosign's own), as layerAnnotations does for a .sig.
func bundleLayerAnnotations(b *sgbundle.Bundle, e KeyEntry) Verdict {
	if !e.annotationsInLayer || len(e.Annotations) == 0 {
		return Verdict{Outcome: Verified}
	}
	env, ok := b.Content.(*protobundle.Bundle_DsseEnvelope)
	if !ok {
		return Verdict{Outcome: Refused, Reason: "the bundle does not contain a DSSE envelope"}
	}
	body, err := json.Marshal(env.DsseEnvelope)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: "reading the bundle's DSSE envelope: " + err.Error()}
	}
	att, err := static.NewAttestation(body)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: "reading the bundle's DSSE envelope: " + err.Error()}
	}
	return layerAnnotations([]oci.Signature{att}, e)
}

// bundlePredicate is the in-toto predicate type of a bundle's DSSE
// statement, "" for a message signature; a statement that does not parse
// is a types.ErrBadResponse.
func bundlePredicate(b *sgbundle.Bundle) (string, error) {
	env, ok := b.Content.(*protobundle.Bundle_DsseEnvelope)
	if !ok || env.DsseEnvelope == nil {
		return "", nil
	}
	var st struct {
		PredicateType string `json:"predicateType"`
	}
	if err := json.Unmarshal(env.DsseEnvelope.GetPayload(), &st); err != nil {
		return "", fmt.Errorf("%w: the bundle's DSSE payload is not an in-toto statement: %w", types.ErrBadResponse, err)
	}
	return st.PredicateType, nil
}

// bundleTlog decides the transparency-log proof of a bundle that verified
// with the key, where the engine requires one: none carried is a refusal
// (signed with --tlog-upload=false); one carried is checked as cosign
// verify --new-bundle-format --trusted-root checks it (VerifyNewBundle,
// the log required: sigstore-go's WithTransparencyLog(1), the entry's
// inclusion promise and inclusion proof against the trusted logs' keys,
// its body against the bundle's signature and key), with --trusted-root
// (bundleLogMaterial): a refusal is sigstore-go's own text; with no
// trusted root given, unverifiable.
func (v CosignVerifier) bundleTlog(ctx context.Context, co *cosign.CheckOpts, policy verify.ArtifactPolicyOption, b *sgbundle.Bundle, e KeyEntry) Verdict {
	entries, err := b.TlogEntries()
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: "reading the bundle's transparency-log entries: " + err.Error()}
	}
	if len(entries) == 0 {
		return Verdict{Outcome: Refused, Reason: fmt.Sprintf("the bundle verifies with the key at %s, but carries no transparency-log entry, which the policy requires (signed with --tlog-upload=false); set rekor.ignoreTlog: true (policy-controller: no ctlog) if the log is not used, or sign again with the log", e.Path)}
	}
	tm, missing := v.bundleLogMaterial(e)
	if tm == nil {
		return Verdict{Outcome: Unverifiable, Reason: missing}
	}
	withLog := *co
	withLog.IgnoreTlog, withLog.TrustedMaterial = false, tm
	if _, err := cosign.VerifyNewBundle(ctx, &withLog, policy, b); err != nil {
		return Verdict{Outcome: Refused, Reason: "the bundle verifies with the key, and its transparency-log entry does not: " + err.Error()}
	}
	return Verdict{Outcome: Verified}
}

// nameOptions are the name options a reference to ref's repository
// needs: plain HTTP where the registry client reaches it so.
func nameOptions(ref name.Digest) []name.Option {
	if ref.Context().Registry.Scheme() == "http" {
		return []name.Option{name.Insecure}
	}
	return nil
}

// verifyWith runs the verification what asks for with the Checker's
// Verifier: in the layout the image has (DetectingVerifier) for a rule
// that reads either (an ImageValidatingPolicy); the legacy signature, the
// bundle signature (BundleVerifier), or an attestation
// (AttestationVerifier).
func (c *Checker) verifyWith(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, what check) Verdict {
	if d, ok := c.Verifier.(DetectingVerifier); ok && what.format == AnyFormat {
		return d.VerifyDetected(ctx, ref, sigs, e, what.predicate)
	}
	switch {
	case what.attestation:
		return c.Verifier.(AttestationVerifier).VerifyAttestation(ctx, ref, sigs, e, what.format, what.predicate)
	case what.format == Bundle:
		return c.Verifier.(BundleVerifier).VerifyBundle(ctx, ref, sigs, e)
	}
	return c.Verifier.VerifyLegacy(ctx, ref, sigs, e)
}

// verifies reports whether the Checker's Verifier verifies what: a
// Verifier that does not implement the bundle or attestation check leaves
// it to the presence check.
func (c *Checker) verifies(what check) bool {
	switch {
	case what.attestation:
		_, ok := c.Verifier.(AttestationVerifier)
		return ok
	case what.format == Bundle:
		_, ok := c.Verifier.(BundleVerifier)
		return ok
	}
	return true
}

// needsResult verifies one alternative: its signature, where it names
// keys, and each attestation that names attestors. All must pass: a
// refusal of any is the alternative's refusal; else an undecided one
// leaves it unverifiable. What names no keys was met by presence.
func (c *Checker) needsResult(ctx context.Context, ref name.Digest, n Needs) altResult {
	out := altResult{outcome: Verified}
	sig := check{format: n.Format}
	if n.Signature && len(n.Sets) > 0 && c.verifies(sig) {
		out = c.alternative(ctx, ref, n.Sets, sig)
	}
	for _, a := range n.Attestations {
		if out.outcome == Refused {
			break
		}
		if len(a.Sets) == 0 || !c.verifies(check{format: n.Format, attestation: true}) {
			continue
		}
		if r := c.attestationResult(ctx, ref, n.Format, a); r.outcome != Verified && (out.outcome == Verified || r.outcome == Refused) {
			out = r
		}
	}
	return out
}

// invisibleText says, of an artifact the engine's format does not find,
// that one is there in the other format, which the engine does not read
// (a v3 bundle under Kyverno type: Cosign or policy-controller's default
// legacy format; a .sig under type: SigstoreBundle), and what to do.
func invisibleText(l lack) string {
	if l.format == AnyFormat {
		return ""
	}
	for _, a := range l.set.Match(artifacts.Query{Kind: l.kind, PredicateType: l.predicate}) {
		if !a.Whole || inFormat(a.Layout, l.format) {
			continue
		}
		if l.format == Legacy {
			return fmt.Sprintf("; a sigstore bundle (%s) is there, which this rule does not read (it reads the legacy .sig/.att tags): set Kyverno type: SigstoreBundle (policy-controller signatureFormat: bundle), or sign again with --new-bundle-format=false", a.Ref)
		}
		return fmt.Sprintf("; a legacy %s is there, which this rule does not read (it reads sigstore bundles): set Kyverno type: Cosign (policy-controller signatureFormat: legacy), or sign again with --new-bundle-format", a.Ref)
	}
	return ""
}
