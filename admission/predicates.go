package admission

// policyControllerPredicates are the short predicate types a
// ClusterImagePolicy's attestations[].predicateType may name, and the
// in-toto URIs they stand for. policy-controller v0.13.1 compares an
// attestation's statement with the URI (cosign v2.5.0
// pkg/policy/attestation.go, AttestationToPayloadJSON, through
// options.PredicateTypeMap); any other value is compared as written.
// TestPolicyControllerPredicates holds the table to cosign's own map.
// Kyverno compares its type literally: the table is policy-controller's
// alone.
var policyControllerPredicates = map[string]string{
	"custom":           "https://cosign.sigstore.dev/attestation/v1",
	"slsaprovenance":   "https://slsa.dev/provenance/v0.2",
	"slsaprovenance02": "https://slsa.dev/provenance/v0.2",
	"slsaprovenance1":  "https://slsa.dev/provenance/v1",
	"spdx":             "https://spdx.dev/Document",
	"spdxjson":         "https://spdx.dev/Document",
	"cyclonedx":        "https://cyclonedx.org/bom",
	"link":             "https://in-toto.io/Link/v1",
	"vuln":             "https://cosign.sigstore.dev/attestation/vuln/v1",
	"openvex":          "https://openvex.dev/ns",
}

// policyControllerPredicate is the predicate URI policy-controller
// looks for when an authority names t.
func policyControllerPredicate(t string) string {
	if uri, ok := policyControllerPredicates[t]; ok {
		return uri
	}
	return t
}
