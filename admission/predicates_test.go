package admission

import (
	"testing"

	"github.com/in-toto/in-toto-golang/in_toto"
	slsa02 "github.com/in-toto/in-toto-golang/in_toto/slsa_provenance/v0.2"
	slsa1 "github.com/in-toto/in-toto-golang/in_toto/slsa_provenance/v1"
	"github.com/sigstore/cosign/v3/pkg/cosign/attestation"
)

// TestPolicyControllerPredicates holds the short predicate types to the
// constants cosign's options.PredicateTypeMap is built of (the same map
// in cosign v2.5.0, which policy-controller v0.13.1 links, and v3.1.3;
// importing the options package itself would link cosign's whole CLI).
func TestPolicyControllerPredicates(t *testing.T) {
	for in, want := range map[string]string{
		"custom": attestation.CosignCustomProvenanceV01, "slsaprovenance": slsa02.PredicateSLSAProvenance,
		"slsaprovenance02": slsa02.PredicateSLSAProvenance, "slsaprovenance1": slsa1.PredicateSLSAProvenance,
		"spdx": in_toto.PredicateSPDX, "spdxjson": in_toto.PredicateSPDX, "cyclonedx": in_toto.PredicateCycloneDX,
		"link": in_toto.PredicateLinkV1, "vuln": attestation.CosignVulnProvenanceV01, "openvex": attestation.OpenVexNamespace,
		// Anything else is compared as written, case included.
		"https://example.com/p": "https://example.com/p", "SPDXJSON": "SPDXJSON",
	} {
		if got := policyControllerPredicate(in); got != want {
			t.Errorf("policyControllerPredicate(%q) = %q, cosign maps it to %q", in, got, want)
		}
	}
}
