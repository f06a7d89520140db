package admission

import (
	"context"
	"encoding/asn1"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// A keyless sigstore bundle carries the signer's certificate (Fulcio's)
// and its transparency-log entry; the engines verify it against a whole
// trusted root (sigstore-go's root.TrustedMaterial), never the legacy
// options' roots and keys:
//
//   - Kyverno ClusterPolicy / Policy, type: SigstoreBundle: sigstore-go
//     directly (kyverno pkg/image/verifiers/cpol/cosign/sigstore.go):
//     its TUF trusted root (getTrustedMaterial; the attestor's roots,
//     rekor.pubkey, ctlog.pubkey are not used), the options of
//     buildVerifyOptions (kyvernoVerifierOptions: no SCT is ever asked
//     for), and the identity of buildPolicy: issuer and subject (or
//     their RegExp forms) both given, else no identity, which sigstore-go
//     refuses ("can't verify identities without providing at least one
//     identity").
//   - ImageValidatingPolicy and policy-controller (signatureFormat:
//     bundle): cosign's CheckOpts (VerifyNewBundle's
//     verificationOptions: the SCT unless IgnoreSCT, the log and its
//     integrated time unless IgnoreTlog, else now or the RFC 3161
//     timestamp with UseSignedTimestamps) with TrustedMaterial: the
//     ImageValidatingPolicy's TUF root (opts.go, resolveTrustedMaterial),
//     policy-controller's TrustRoot named by trustRootRef or its TUF root
//     (pkg/webhook/validator.go, checkOptsFromAuthority).
//
// --trusted-root stands for the TUF trusted root offline.

// sctOID is the X.509 extension of a certificate's embedded SCTs.
var sctOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}

// keylessBundleCheck verifies one bundle against a keyless entry:
// Verified, Refused with the engine's text, or Unverifiable.
type keylessBundleCheck func(ctx context.Context, b *sgbundle.Bundle, policy verify.ArtifactPolicyOption, h v1.Hash) Verdict

// verifyKeylessBundles verifies ref's bundles of what wants with e's
// certificate identities, as the engine does: Verified when one
// verifies; Refused with the engine's text when every one is refused;
// Unverifiable when the trust material is not given (saying what to
// supply), or a bundle is undecided and none verifies.
func (v CosignVerifier) verifyKeylessBundles(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, wants func(string) bool, what string) Verdict {
	check, r := v.keylessCheckOf(e)
	if check == nil {
		return r
	}
	bundles, h, policy, miss := readBundles(ctx, ref, v.registryOpts(ctx, ref, sigs))
	if miss != nil {
		return *miss
	}
	wanted, seen, garbled := wantedBundles(bundles, wants)
	var errs []error
	var undecided *Verdict
	for _, b := range wanted {
		switch r := check(ctx, b, policy, *h); r.Outcome {
		case Refused:
			errs = append(errs, errors.New(r.Reason))
			continue
		case Unverifiable:
			undecided = &r
			continue
		}
		return bundleLayerAnnotations(b, e)
	}
	if undecided != nil {
		return *undecided
	}
	return bundlesOutcome(ctx, what, garbled, errs, seen)
}

// keylessCheckOf is how e's engine verifies a keyless bundle, or, when
// the trust material it needs is not given, the verdict saying what to
// supply.
func (v CosignVerifier) keylessCheckOf(e KeyEntry) (keylessBundleCheck, Verdict) {
	tm, missing := v.keylessBundleMaterial(e)
	if tm == nil {
		return nil, Verdict{Outcome: Unverifiable, Reason: missing}
	}
	if e.kyvernoBundle != nil {
		return kyvernoKeylessCheck(tm, e)
	}
	if e.Keyless.bundleTSA {
		return nil, Verdict{Outcome: Unverifiable, Reason: fmt.Sprintf("the authority at %s names an rfc3161timestamp: policy-controller then verifies a keyless bundle at its RFC 3161 timestamp, the log ignored, which regcheck does not verify offline yet", e.Path)}
	}
	return cosignKeylessCheck(tm, e), Verdict{}
}

// keylessBundleMaterial is the trusted root e's engine verifies a
// keyless bundle against (--trusted-root standing for its TUF root),
// nil and what to supply when it is not given or lacks what the entry
// requires (a Fulcio CA; a Rekor log where the log is required).
func (v CosignVerifier) keylessBundleMaterial(e KeyEntry) (root.TrustedMaterial, string) {
	if e.trustRoot != "" && e.kyvernoBundle == nil {
		return nil, fmt.Sprintf("the authority at %s verifies a keyless bundle against the TrustRoot %s as a whole (policy-controller's bundle path: root.NewTrustedRootFromProtobuf of its sigstoreKeys, pkg/webhook/validator.go checkOptsFromAuthority), which regcheck does not rebuild offline yet (a legacy .sig or .att under it is verified); --trusted-root is not taken in its place: check with cosign verify --new-bundle-format and a trusted root holding the TrustRoot's material", e.Path, e.trustRoot)
	}
	tm := v.TrustedRoot
	if tm == nil {
		return nil, keylessBundleSupply(e)
	}
	switch {
	case len(tm.FulcioCertificateAuthorities()) == 0:
		return nil, supplyCA
	case keylessBundleTlog(e) && len(tm.RekorLogs()) == 0:
		return nil, supplyBundleRekor
	}
	return tm, ""
}

// keylessBundleSupply says, with no trusted root given, what to supply
// for e's engine to be followed offline.
func keylessBundleSupply(e KeyEntry) string {
	own := strings.TrimSpace(e.RekorPEM+e.Keyless.RootsPEM+e.Keyless.CTLogPEM) != ""
	switch {
	case e.kyvernoBundle != nil && own:
		return fmt.Sprintf("the signature at %s is a keyless sigstore bundle, which Kyverno verifies against its TUF trusted root only (pkg/image/verifiers/cpol/cosign/sigstore.go, getTrustedMaterial): the attestor's roots, rekor.pubkey and ctlog.pubkey are not used for a bundle; give that trusted root as --trusted-root (Sigstore's, or one made by cosign trusted-root create with your CA and log keys)", e.Path)
	case own:
		return fmt.Sprintf("the signature at %s is a keyless sigstore bundle, which the engine verifies against its trusted root as a whole (cosign's TrustedMaterial), not the policy's roots or keys: give that trusted root as --trusted-root (Sigstore's, or one made by cosign trusted-root create)", e.Path)
	}
	return fmt.Sprintf("the signature at %s is a keyless sigstore bundle, which the engine verifies against its TUF trusted root (Fulcio CAs, Rekor and CT log keys): give that trusted root as --trusted-root (Sigstore's, or one made by cosign trusted-root create) to have it verified offline", e.Path)
}

// keylessBundleTlog reports whether e's engine requires a keyless
// bundle's log entry: Kyverno and the ImageValidatingPolicy unless the
// log is ignored; policy-controller always, unless it names a timestamp
// authority.
func keylessBundleTlog(e KeyEntry) bool {
	if e.Keyless.bundleLog {
		return !e.Keyless.bundleTSA
	}
	return e.Tlog
}

// kyvernoKeylessCheck verifies as Kyverno's SigstoreBundle path: one
// sigstore-go verifier with buildVerifyOptions' options over the trusted
// root, each bundle held to buildPolicy's policy.
func kyvernoKeylessCheck(tm root.TrustedMaterial, e KeyEntry) (keylessBundleCheck, Verdict) {
	verifier, err := verify.NewVerifier(tm, kyvernoVerifierOptions(e)...)
	if err != nil {
		return nil, Verdict{Outcome: Unverifiable, Reason: "building Kyverno's bundle verifier: " + err.Error()}
	}
	var opts []verify.PolicyOption
	hint := ""
	var id cosign.Identity
	if len(e.Keyless.Identities) > 0 {
		id = e.Keyless.Identities[0]
	}
	if (id.Issuer != "" || id.IssuerRegExp != "") && (id.Subject != "" || id.SubjectRegExp != "") {
		cid, err := verify.NewShortCertificateIdentity(id.Issuer, id.IssuerRegExp, id.Subject, id.SubjectRegExp)
		if err != nil {
			// buildPolicy fails the rule with it.
			return nil, Verdict{Outcome: Refused, Reason: fmt.Sprintf("Kyverno cannot build the policy of the keyless attestor at %s: failed to build policy: %v", e.Path, err)}
		}
		opts = append(opts, verify.WithCertificateIdentity(cid))
	} else {
		hint = fmt.Sprintf(" (the keyless attestor at %s does not name both issuer and subject: Kyverno's buildPolicy then gives sigstore-go no identity, and every bundle is refused; name both)", e.Path)
	}
	return func(_ context.Context, b *sgbundle.Bundle, policy verify.ArtifactPolicyOption, _ v1.Hash) Verdict {
		if _, err := verifier.Verify(b, verify.NewPolicy(policy, opts...)); err != nil {
			return Verdict{Outcome: Refused, Reason: "sigstore-go, with Kyverno's SigstoreBundle options: " + err.Error() + hint}
		}
		return Verdict{Outcome: Verified}
	}, Verdict{}
}

// cosignKeylessCheck verifies as cosign.VerifyImageAttestations does a
// bundle under CheckOpts built as the ImageValidatingPolicy and
// policy-controller build them: the identities, the trusted root, the
// log and the SCT as the entry requires them. A certificate that carries
// SCTs, where they are required and the trusted root holds no CT log
// key, is undecided: the engine's root may hold it.
func cosignKeylessCheck(tm root.TrustedMaterial, e KeyEntry) keylessBundleCheck {
	tlog := keylessBundleTlog(e)
	co := &cosign.CheckOpts{
		Identities:          e.Keyless.Identities,
		IgnoreTlog:          !tlog,
		IgnoreSCT:           e.Keyless.IgnoreSCT,
		TrustedMaterial:     tm,
		NewBundleFormat:     true,
		ClaimVerifier:       cosign.IntotoSubjectClaimVerifier,
		UseSignedTimestamps: !tlog && e.Keyless.bundleSignedTime,
		Offline:             true,
	}
	return func(ctx context.Context, b *sgbundle.Bundle, policy verify.ArtifactPolicyOption, h v1.Hash) Verdict {
		if !co.IgnoreSCT && len(tm.CTLogs()) == 0 && carriesSCT(b) {
			return Verdict{Outcome: Unverifiable, Reason: supplyCT}
		}
		if err := verifyOneBundle(ctx, co, policy, b, h); err != nil {
			return Verdict{Outcome: Refused, Reason: err.Error() + sctHint(e, err)}
		}
		return Verdict{Outcome: Verified}
	}
}

// carriesSCT reports whether a bundle's certificate embeds SCTs.
func carriesSCT(b *sgbundle.Bundle) bool {
	vc, err := b.VerificationContent()
	if err != nil || vc.Certificate() == nil {
		return false
	}
	for _, x := range vc.Certificate().Extensions {
		if x.Id.Equal(sctOID) {
			return true
		}
	}
	return false
}

// sctHint says what to do when the refusal is for want of an SCT.
func sctHint(e KeyEntry, err error) string {
	if !strings.Contains(err.Error(), "SCT") {
		return ""
	}
	return fmt.Sprintf(" (the engine requires the certificate's SCT: the signer's CA embeds none, or the trusted root's CT logs do not verify it; if your CA has no CT log, set insecureIgnoreSCT: true on the authority at %s (ImageValidatingPolicy: ctlog.insecureIgnoreSCT), as cosign's --insecure-ignore-sct)", e.Path)
}
