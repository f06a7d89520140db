package admission

import (
	"fmt"
	"testing"

	"github.com/in-toto/in-toto-golang/in_toto"
	slsa02 "github.com/in-toto/in-toto-golang/in_toto/slsa_provenance/v0.2"
	slsa1 "github.com/in-toto/in-toto-golang/in_toto/slsa_provenance/v1"
	"github.com/sigstore/cosign/v3/pkg/cosign/attestation"

	"github.com/regcheck/regcheck/yamlfile"
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

// TestShortPredicateRead: a ClusterImagePolicy's short predicateType is
// required as its URI, the presence check and the attestation's
// verification alike; Kyverno's type is required as written.
func TestShortPredicateRead(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"policy-controller spdxjson", `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata: {name: p}
spec:
  images: [{glob: "**"}]
  authorities: [{key: {data: k}, attestations: [{name: sbom, predicateType: spdxjson}]}]`,
			"[https://spdx.dev/Document] https://spdx.dev/Document"},
		{"Kyverno spdxjson stays literal", `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: p}
spec:
  rules:
    - name: r
      verifyImages: [{imageReferences: ["*"], attestations: [{type: spdxjson, attestors: [{entries: [{keys: {publicKeys: k}}]}]}]}]`,
			"[spdxjson] spdxjson"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := &Policies{Labels: map[string]map[string]string{}}
			if problems := ps.readObjects(yamlfile.File{Name: "p.yaml", Data: []byte(c.doc)}); len(problems) > 0 {
				t.Fatalf("problems: %+v", problems)
			}
			if len(ps.Rules) != 1 || len(ps.Rules[0].Alternatives) != 1 || len(ps.Rules[0].Alternatives[0].Attestations) != 1 {
				t.Fatalf("rules %+v", ps.Rules)
			}
			n := ps.Rules[0].Alternatives[0]
			if got := fmt.Sprint(n.Predicates, " ", n.Attestations[0].PredicateType); got != c.want {
				t.Errorf("predicates %q, want %q", got, c.want)
			}
		})
	}
}
