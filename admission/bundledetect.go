package admission

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v3/pkg/cosign"
)

// DetectingVerifier verifies as an engine that reads an image's sigstore
// bundles when it has any, and its legacy .sig/.att tags otherwise:
// Kyverno's ImageValidatingPolicy (kyverno/kyverno
// pkg/image/verifiers/ivpol/cosign/verifier.go,
// buildCheckOptsWithBundleDetection: cosign.GetBundles in the attestor's
// repository, then CheckOpts.NewBundleFormat when it found any), and
// cosign verify / verify-attestation v3's own --new-bundle-format. A
// Verifier that does not implement it has such a rule's signature
// verified in the legacy layout and its attestations in either.
type DetectingVerifier interface {
	// VerifyDetected verifies ref's signature (predicateType "") or its
	// attestation of predicateType, read in sigs, against e.
	VerifyDetected(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, predicateType string) Verdict
}

var _ DetectingVerifier = CosignVerifier{}

// VerifyDetected verifies in the layout the engine reads: the bundles
// when sigs holds any for ref, else the legacy tags. In the bundle
// layout a signature is any bundle of the digest that verifies with the
// key, whatever its predicate type, as Kyverno's VerifyImageSignature
// (cosign.VerifyImageAttestations when NewBundleFormat) and cosign
// verify --new-bundle-format accept it; an attestation is one of
// predicateType among those that verify (VerifyAttestationSignature).
// Whether bundles are there is decided by cosign.GetBundles, as the
// engine decides it; a fault in asking is unverifiable, never a refusal.
func (v CosignVerifier) VerifyDetected(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, predicateType string) Verdict {
	if e.Unverifiable != "" {
		return Verdict{Outcome: Unverifiable, Reason: e.Unverifiable}
	}
	f, err := v.detectFormat(ctx, ref, sigs)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Fault: true, Reason: fmt.Sprintf(
			"looking for the sigstore bundles of the digest in %s (the engine reads them when there are any, the legacy .sig/.att tags otherwise): %v", sigs, err)}
	}
	switch {
	case predicateType != "":
		return v.VerifyAttestation(ctx, ref, sigs, e, f, predicateType)
	case f == Bundle:
		// A bundle with no DSSE envelope (a message signature) is
		// refused by cosign.VerifyImageAttestations ("bundle does not
		// contain a DSSE envelope"): it is passed over here too.
		return v.verifyBundles(ctx, ref, sigs, e, func(p string) bool { return p != "" }, "signature")
	}
	return v.VerifyLegacy(ctx, ref, sigs, e)
}

// detectFormat is the layout ref's signatures are read in: Bundle when
// cosign.GetBundles finds any bundle in sigs, Legacy when it finds none
// (cosign's ErrNoMatchingAttestations, "no valid bundles exist in
// registry"). Any other error (the referrers could not be listed) is
// returned: the engine would read the legacy tags then, but whether
// bundles are there is not known.
func (v CosignVerifier) detectFormat(ctx context.Context, ref name.Digest, sigs name.Repository) (Format, error) {
	bundles, _, err := cosign.GetBundles(ctx, ref, v.registryOpts(ctx, ref, sigs), nameOptions(ref)...)
	var none *cosign.ErrNoMatchingAttestations
	switch {
	case err == nil && len(bundles) > 0:
		return Bundle, nil
	case err == nil || errors.As(err, &none):
		return Legacy, nil
	}
	return "", err
}
