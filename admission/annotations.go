package admission

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sigstore/cosign/v3/pkg/oci"
)

// Where the engines look for an attestor's annotations:
//
//   - Kyverno ClusterPolicy, type Cosign: in the verified signatures'
//     payloads, the optional map cosign sign -a writes (kyverno/kyverno
//     pkg/image/verifiers/cpol/cosign/verifier.go, VerifySignature, then
//     cosign.go checkAnnotations: one payload must hold every pair), as
//     cosign verify -a does (pkg/cosign SimpleClaimVerifier with
//     CheckOpts.Annotations): regcheck hands them to cosign.
//   - Kyverno ClusterPolicy, type SigstoreBundle: not looked for
//     (cpol/cosign/sigstore.go, verifyBundleAndFetchAttestations never
//     reads opts.Annotations): a bundle is admitted whatever its
//     annotations.
//   - Kyverno ClusterPolicy attestations (legacy .att): compared with the
//     attestations' payloads, DSSE envelopes that have no optional map
//     (FetchAttestations, checkAnnotations): not evaluated by regcheck
//     (unknown).
//   - Kyverno ImageValidatingPolicy: in the verified signature's OCI
//     layer annotations (pkg/image/verifiers/ivpol/cosign/certs.go,
//     checkSignatureAnnotations: sig.Annotations()), which cosign sign -a
//     does not write: regcheck compares them as Kyverno does.
//   - policy-controller: authorities have no annotations.

// annotationsText writes annotations as k=v pairs, sorted.
func annotationsText(ann map[string]string) string {
	parts := make([]string, 0, len(ann))
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		parts = append(parts, k+"="+ann[k])
	}
	return strings.Join(parts, ",")
}

// claimAnnotations are e's annotations as cosign's CheckOpts.Annotations
// (checked in the signed payload, as cosign verify -a does), nil when the
// engine does not look for them there.
func claimAnnotations(e KeyEntry) map[string]any {
	if len(e.Annotations) == 0 || e.annotationsInLayer {
		return nil
	}
	out := make(map[string]any, len(e.Annotations))
	for k, v := range e.Annotations {
		out[k] = v
	}
	return out
}

// annotationVerdict adds to a refusal the annotations the entry requires,
// when cosign refused for them.
func annotationVerdict(v Verdict, e KeyEntry) Verdict {
	if v.Outcome == Refused && len(e.Annotations) > 0 && strings.Contains(v.Reason, "annotation") {
		v.Reason += fmt.Sprintf("; the entry at %s requires the signed payload to hold the annotations %s (cosign sign -a; cosign verify -a shows the same refusal)", e.Path, annotationsText(e.Annotations))
	}
	return v
}

// layerAnnotations holds the signatures that verified to the entry's
// annotations as a Kyverno ImageValidatingPolicy does: one signature's OCI
// layer annotations must hold every pair (checkSignatureAnnotations);
// Verified when one does, or when the entry names none.
func layerAnnotations(found []oci.Signature, e KeyEntry) Verdict {
	if !e.annotationsInLayer || len(e.Annotations) == 0 {
		return Verdict{Outcome: Verified}
	}
	var errs []string
	for _, s := range found {
		have, err := s.Annotations()
		if err != nil {
			errs = append(errs, "failed to fetch annotation from signature")
			continue
		}
		if msg := annotationsMismatch(e.Annotations, have); msg != "" {
			errs = append(errs, msg)
			continue
		}
		return Verdict{Outcome: Verified}
	}
	return Verdict{Outcome: Refused, Reason: fmt.Sprintf("the signature verifies with the key, but no signature matched the required annotations: [%s]: "+
		"Kyverno's ImageValidatingPolicy compares cosign.annotations (%s) with the signature's OCI layer annotations (pkg/image/verifiers/ivpol/cosign/certs.go, checkSignatureAnnotations), "+
		"not with the signed payload where cosign sign -a writes them, so a signature made by cosign sign -a does not meet it; drop cosign.annotations, or require the annotations in a ClusterPolicy attestor, which reads the payload",
		strings.Join(errs, "; "), e.Path+": "+annotationsText(e.Annotations))}
}

// annotationsMismatch is Kyverno's error for the first pair of want that
// have does not hold ("" when every pair is held).
func annotationsMismatch(want, have map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] != want[k] {
			return fmt.Sprintf("annotations mismatch: %s does not match expected value %s for key %s", have[k], want[k], k)
		}
	}
	return ""
}
