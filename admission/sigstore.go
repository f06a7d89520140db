package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// includeLabel opts a namespace in to policy-controller's checks.
const includeLabel = "policy.sigstore.dev/include"

// sigstoreRule reads a policy.sigstore.dev ClusterImagePolicy (v1alpha1
// or v1beta1: the fields read are the same) as one Rule whose
// alternatives are its authorities: policy-controller admits an image
// when any one authority is satisfied. A static authority with action
// pass needs nothing, so the policy then requires nothing.
func sigstoreRule(obj *unstructured.Unstructured, source string) (*Rule, error) {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	mode, _, _ := unstructured.NestedString(spec, "mode")
	r := &Rule{Engine: PolicyController, Kind: obj.GetKind(), Name: obj.GetName(), Source: source,
		Enforce: mode == "" || strings.EqualFold(mode, "enforce"), optIn: true}
	r.resources = readMatch(spec)
	images, _, _ := unstructured.NestedSlice(spec, "images")
	for i, raw := range images {
		im, _ := raw.(map[string]any)
		g, _, _ := unstructured.NestedString(im, "glob")
		if len(g) > MaxGlobLength {
			return nil, fmt.Errorf("spec.images[%d].glob: %d bytes, longer than the %d regcheck reads (no image name is that long)", i, len(g), MaxGlobLength)
		}
		if g != "" {
			r.Images = append(r.Images, g)
		}
	}
	auths, _, err := unstructured.NestedSlice(spec, "authorities")
	if err != nil {
		return nil, fmt.Errorf("spec.authorities: %w", err)
	}
	for i, raw := range auths {
		a, _ := raw.(map[string]any)
		n, pass := authorityNeeds(a)
		if pass {
			return nil, nil
		}
		if n.Signature || len(n.Predicates) > 0 {
			if n.refusal == nil {
				n.refusal = bundleRefusal(a, n, authorityName(a, i))
			}
			r.Alternatives = append(r.Alternatives, n.under(authorityPath(a, i)))
		}
	}
	if len(r.Alternatives) == 0 {
		return nil, nil
	}
	if _, ok := spec["policy"]; ok {
		// Evaluated on the authorities' results once one passes
		// (pkg/webhook/validator.go, ValidatePolicy): not by regcheck.
		kind, _, _ := unstructured.NestedString(spec, "policy", "type")
		r.Conditions = fmt.Sprintf("spec.policy (%s)", cmp.Or(kind, "a policy"))
	}
	return r, nil
}

// authorityPath names the i-th authority in the findings as
// policy-controller names it in its errors: its name, or authority-i
// when it has none (pkg/apis/policy/v1beta1/clusterimagepolicy_defaults.go,
// SetDefaults).
func authorityPath(a map[string]any, i int) string {
	return fmt.Sprintf("authorities[%d] (%s).", i, authorityName(a, i))
}

// authorityName is the i-th authority's name, authority-i when it has
// none.
func authorityName(a map[string]any, i int) string {
	if name, _, _ := unstructured.NestedString(a, "name"); name != "" {
		return name
	}
	return fmt.Sprintf("authority-%d", i)
}

// under is n with prefix before the path of each of its entries, its
// signature's and its attestations'.
func (n Needs) under(prefix string) Needs {
	n.Sets = prefixed(n.Sets, prefix)
	if n.refusal != nil {
		r := *n.refusal
		r.path = prefix + r.path
		n.refusal = &r
	}
	n.Attestations = slices.Clone(n.Attestations)
	for i := range n.Attestations {
		n.Attestations[i].Sets = prefixed(n.Attestations[i].Sets, prefix)
		n.Attestations[i].Path = prefix + n.Attestations[i].Path
		if n.Attestations[i].Conditions != "" {
			n.Attestations[i].Conditions = prefix + n.Attestations[i].Conditions
		}
	}
	return n
}

// prefixed is a copy of sets with prefix before each entry's path.
func prefixed(sets []AttestorSet, prefix string) []AttestorSet {
	out := slices.Clone(sets)
	for i := range out {
		out[i].Entries = slices.Clone(out[i].Entries)
		for j := range out[i].Entries {
			out[i].Entries[j].Path = prefix + out[i].Entries[j].Path
		}
	}
	return out
}

// cipMatch is one entry of a ClusterImagePolicy's spec.match: the
// policy applies only to resources of a listed group, version and
// resource, and with a selector, only to those whose labels it selects.
type cipMatch struct {
	group, version, resource string
	bySelector               bool
}

// readMatch reads spec.match.
func readMatch(spec map[string]any) []cipMatch {
	list, _, _ := unstructured.NestedSlice(spec, "match")
	var out []cipMatch
	for _, raw := range list {
		m, _ := raw.(map[string]any)
		g, _, _ := unstructured.NestedString(m, "group")
		v, _, _ := unstructured.NestedString(m, "version")
		res, _, _ := unstructured.NestedString(m, "resource")
		_, sel := m["selector"]
		out = append(out, cipMatch{group: g, version: v, resource: res, bySelector: sel})
	}
	return out
}

// podSpecables are the group, version and resource of the kinds
// policy-controller validates, by kind.
var podSpecables = map[string][3]string{
	"Pod": {"", "v1", "pods"}, "Deployment": {"apps", "v1", "deployments"}, "ReplicaSet": {"apps", "v1", "replicasets"},
	"StatefulSet": {"apps", "v1", "statefulsets"}, "DaemonSet": {"apps", "v1", "daemonsets"},
	"Job": {"batch", "v1", "jobs"}, "CronJob": {"batch", "v1", "cronjobs"},
}

// matchesResources applies a ClusterImagePolicy's spec.match to the
// resources admission sees for a use, as policy-controller's
// GetMatchingPolicies does: no match list selects everything; an entry
// with a selector over the object's labels (which a use does not carry)
// matches unsure.
func (r *Rule) matchesResources(res []resource) (ok, unsure bool) {
	if len(r.resources) == 0 {
		return true, false
	}
	for _, x := range res {
		gvr, known := podSpecables[x.kind]
		if !known {
			continue
		}
		for _, m := range r.resources {
			if m.group != gvr[0] || m.resource != gvr[2] || m.version != gvr[1] && m.version != "*" {
				continue
			}
			if !m.bySelector {
				return true, false
			}
			ok, unsure = true, true
		}
	}
	return ok, unsure
}

// authorityNeeds is what one authority requires, and whether it is a
// static pass. A key or keyless authority needs a signature, unless it
// lists attestations: policy-controller then verifies the attestations
// (signed by that authority) instead.
func authorityNeeds(a map[string]any) (Needs, bool) {
	if action, _, _ := unstructured.NestedString(a, "static", "action"); action != "" {
		if action != "fail" {
			return Needs{}, true
		}
		return Needs{Signature: true, refusal: staticRefusal(a)}, false
	}
	n := Needs{Format: Legacy}
	if isBundleFormat(a) {
		n.Format = Bundle
	}
	atts, _, _ := unstructured.NestedSlice(a, "attestations")
	for _, raw := range atts {
		at, _ := raw.(map[string]any)
		if t, _, _ := unstructured.NestedString(at, "predicateType"); t != "" {
			n.Predicates = append(n.Predicates, policyControllerPredicate(t))
		}
	}
	_, key := a["key"]
	_, keyless := a["keyless"]
	n.Signature = (key || keyless) && len(n.Predicates) == 0
	n.Repository = authoritySource(a)
	if n.Signature {
		n.Sets = authorityAttestors(a)
		n.entryRepositories()
	} else if len(n.Predicates) > 0 {
		n.Attestations = authorityAttestations(a, authorityAttestors(a), n.Repository)
	}
	return n, false
}

// authoritySource is an authority's source[].oci: the repository
// policy-controller reads its signatures and attestations from
// (ociremote.WithTargetRepository, as COSIGN_REPOSITORY), the last one
// listed where several are, as its validator's loop over the sources
// leaves it (pkg/webhook/validator.go, remoteOpts per source).
func authoritySource(a map[string]any) string {
	srcs, _, _ := unstructured.NestedSlice(a, "source")
	repo := ""
	for _, raw := range srcs {
		m, _ := raw.(map[string]any)
		if oci, _, _ := unstructured.NestedString(m, "oci"); oci != "" {
			repo = oci
		}
	}
	return repo
}

// cosignOCI11Signature is the artifact type of a signature in cosign's
// experimental OCI 1.1 layout (a referrer, not a sigstore bundle).
const cosignOCI11Signature = "application/vnd.dev.cosign.artifact.sig.v1+json"

// isBundleFormat reports whether an authority reads sigstore bundles:
// signatureFormat exactly "bundle", as policy-controller compares it
// (pkg/webhook/validator.go, checkOptsFromAuthority: NewBundleFormat:
// authority.SignatureFormat == "bundle"; the CRD does not restrict the
// field), so that "Bundle" reads the legacy layout.
func isBundleFormat(a map[string]any) bool {
	f, _, _ := unstructured.NestedString(a, "signatureFormat")
	return f == "bundle"
}

// staticRefusal is policy-controller's error for a static authority
// whose action is fail (pkg/webhook/validator.go, ValidatePolicy: any
// other action passes): it admits no image the policy's globs match.
func staticRefusal(a map[string]any) *engineRefusal {
	msg, _, _ := unstructured.NestedString(a, "static", "message")
	return &engineRefusal{path: "static.action", text: "disallowed by static policy: " + msg,
		advice: "this policy admits no image its globs match: leave the image out of its spec.images, or remove the static fail authority, if the image is meant to run"}
}

// bundleRefusal is policy-controller's own error for an authority with
// signatureFormat: bundle that it refuses before reading any signature
// or attestation of the image (sigstore/policy-controller
// pkg/webhook/validator.go), nil when it reads them:
//
//   - a key authority: checkOptsFromAuthority returns "when using the new
//     bundle format, the authority must be keyless" (a TODO there: key
//     authorities are not supported with bundles), which
//     ValidatePolicySignaturesForAuthority wraps as "constructing
//     checkOpts for <name>: " and ValidatePolicyAttestationsForAuthority
//     as "creating CheckOpts: ". The ClusterImagePolicy itself is
//     admitted: its validation (pkg/apis/policy/v1beta1,
//     Authority.Validate) does not look at signatureFormat.
//   - a keyless authority's signature: it reaches cosign's
//     VerifyImageSignatures (validSignatures, pkg/webhook/validation.go)
//     with NewBundleFormat, which returns "bundle support for image
//     signatures is not yet implemented" (sigstore/cosign/v3
//     pkg/cosign/verify.go, v3.0.5 as policy-controller's go.mod pins it,
//     and still v3.1.3), unless the experimental enable-oci11 of
//     config-policy-controller finds a signature in cosign's experimental
//     OCI 1.1 layout first (verifyImageSignaturesExperimentalOCI; not a
//     sigstore bundle, and off by default). Its attestations are read
//     (verifyImageAttestationsSigstoreBundle).
func bundleRefusal(a map[string]any, n Needs, name string) *engineRefusal {
	if !isBundleFormat(a) {
		return nil
	}
	const keyless = "when using the new bundle format, the authority must be keyless"
	if _, key := a["key"]; key {
		r := &engineRefusal{path: "signatureFormat",
			advice: "policy-controller reads sigstore bundles for keyless authorities only: for this key, set signatureFormat: legacy (the default) and sign with cosign sign --new-bundle-format=false (cosign attest --new-bundle-format=false for attestations)"}
		if n.Signature {
			r.text = fmt.Sprintf("constructing checkOpts for %s: %s", name, keyless)
		} else {
			r.text = "creating CheckOpts: " + keyless
		}
		return r
	}
	if _, ok := a["keyless"]; ok && n.Signature {
		return &engineRefusal{path: "signatureFormat",
			text:           fmt.Sprintf("signature keyless validation failed for authority %s for the image: bundle support for image signatures is not yet implemented", name),
			advice:         "policy-controller verifies a keyless authority's bundles as attestations (attestations[].predicateType), not as signatures: set signatureFormat: legacy (the default) and sign with cosign sign --new-bundle-format=false",
			unlessArtifact: cosignOCI11Signature,
			unlessText:     "enable-oci11 is set in config-policy-controller (not read by regcheck): cosign's VerifyImageSignatures then verifies a signature of cosign's experimental OCI 1.1 layout first (verifyImageSignaturesExperimentalOCI)"}
	}
	return nil
}
