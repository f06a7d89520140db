package admission

import (
	"fmt"
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
	images, _, _ := unstructured.NestedSlice(spec, "images")
	for _, raw := range images {
		im, _ := raw.(map[string]any)
		if g, _, _ := unstructured.NestedString(im, "glob"); g != "" {
			r.Images = append(r.Images, g)
		}
	}
	auths, _, err := unstructured.NestedSlice(spec, "authorities")
	if err != nil {
		return nil, fmt.Errorf("spec.authorities: %w", err)
	}
	for _, raw := range auths {
		a, _ := raw.(map[string]any)
		n, pass := authorityNeeds(a)
		if pass {
			return nil, nil
		}
		if n.Signature || len(n.Predicates) > 0 {
			r.Alternatives = append(r.Alternatives, n)
		}
	}
	if len(r.Alternatives) == 0 {
		return nil, nil
	}
	return r, nil
}

// authorityNeeds is what one authority requires, and whether it is a
// static pass. A key or keyless authority needs a signature, unless it
// lists attestations: policy-controller then verifies the attestations
// (signed by that authority) instead.
func authorityNeeds(a map[string]any) (Needs, bool) {
	if action, _, _ := unstructured.NestedString(a, "static", "action"); action != "" {
		return Needs{}, strings.EqualFold(action, "pass")
	}
	n := Needs{Format: Legacy}
	if f, _, _ := unstructured.NestedString(a, "signatureFormat"); strings.EqualFold(f, "bundle") {
		n.Format = Bundle
	}
	atts, _, _ := unstructured.NestedSlice(a, "attestations")
	for _, raw := range atts {
		at, _ := raw.(map[string]any)
		if t, _, _ := unstructured.NestedString(at, "predicateType"); t != "" {
			n.Predicates = append(n.Predicates, t)
		}
	}
	_, key := a["key"]
	_, keyless := a["keyless"]
	n.Signature = (key || keyless) && len(n.Predicates) == 0
	return n, false
}
