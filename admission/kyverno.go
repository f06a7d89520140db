package admission

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// podControllers are the kinds Kyverno's autogen extends a Pod rule to
// when the policy does not say otherwise (pkg/autogen/v1).
var podControllers = []string{"DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController", "CronJob"}

// autogenAnnotation lists the controllers a policy's Pod rules are
// extended to ("none" for none).
const autogenAnnotation = "pod-policies.kyverno.io/autogen-controllers"

// kyvernoRules reads the verifyImages entries of a kyverno.io/v1
// ClusterPolicy or Policy: one Rule per entry.
func kyvernoRules(obj *unstructured.Unstructured, source string) ([]*Rule, error) {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	specAction, _, _ := unstructured.NestedString(spec, "validationFailureAction")
	rules, _, err := unstructured.NestedSlice(spec, "rules")
	if err != nil {
		return nil, fmt.Errorf("spec.rules: %w", err)
	}
	overrides, err := readOverrides(spec)
	if err != nil {
		return nil, err
	}
	autogen := podControllers
	if a, ok := obj.GetAnnotations()[autogenAnnotation]; ok {
		autogen = splitList(a)
	}
	if !kyvernoAutogen(spec) {
		autogen = nil
	}
	var out []*Rule
	for i, raw := range rules {
		rule, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.rules[%d] is not an object", i)
		}
		rs, err := kyvernoRule(obj, rule, policyAction{specAction, overrides}, autogen, source)
		if err != nil {
			return nil, fmt.Errorf("spec.rules[%d]: %w", i, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// policyAction is a policy's failure action: the spec's, and its
// per-namespace overrides.
type policyAction struct {
	action    string
	overrides []actionOverride
}

// kyvernoRule reads one rule's verifyImages entries.
func kyvernoRule(obj *unstructured.Unstructured, rule map[string]any, pa policyAction, autogen []string, source string) ([]*Rule, error) {
	vis, _, err := unstructured.NestedSlice(rule, "verifyImages")
	if err != nil || len(vis) == 0 {
		return nil, err
	}
	name, _, _ := unstructured.NestedString(rule, "name")
	match, err := readFilter(rule, "match")
	if err != nil {
		return nil, err
	}
	exclude, err := readFilter(rule, "exclude")
	if err != nil {
		return nil, err
	}
	action, explicit := ruleAction(rule, vis)
	var overrides []actionOverride
	if !explicit {
		action, overrides = pa.action, pa.overrides
	}
	var out []*Rule
	for j, raw := range vis {
		vi, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("verifyImages[%d] is not an object", j)
		}
		r := &Rule{Engine: Kyverno, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Rule: name,
			Source: source, Enforce: strings.EqualFold(action, "enforce"), overrides: overrides,
			match: match, exclude: exclude, autogen: autogen, digestRequired: kyvernoDigestRequired(vi)}
		r.Images = stringsAt(vi, "imageReferences")
		if img, _, _ := unstructured.NestedString(vi, "image"); img != "" { // the older single-image form
			r.Images = append(r.Images, img)
		}
		r.Skip = stringsAt(vi, "skipImageReferences")
		if n := kyvernoNeeds(vi); n.Signature || len(n.Predicates) > 0 {
			r.Alternatives = []Needs{n}
			out = append(out, r)
		}
	}
	return out, nil
}

// ruleAction is a rule's own failure action, as Kyverno 1.19 resolves it
// (EngineResponse.ruleAction): Enforce when any of its verifyImages
// entries enforces, else the first entry's that sets one; a validate
// block's failureAction otherwise. explicit is false when the rule sets
// none: the spec's overrides and action then apply.
func ruleAction(rule map[string]any, vis []any) (action string, explicit bool) {
	for _, raw := range vis {
		vi, _ := raw.(map[string]any)
		a, _, _ := unstructured.NestedString(vi, "failureAction")
		switch {
		case strings.EqualFold(a, "enforce"):
			return a, true
		case a != "" && action == "":
			action = a
		}
	}
	if action == "" {
		action, _, _ = unstructured.NestedString(rule, "validate", "failureAction")
	}
	return action, action != ""
}

// actionOverride is one of a ClusterPolicy's
// validationFailureActionOverrides: the action in the namespaces it names
// (wildcards) and selects by label; with neither, everywhere.
type actionOverride struct {
	enforce bool
	// namespaces, when listed (an empty list included), are the only
	// namespaces the override applies in: Kyverno's matchOverride tells
	// namespaces: [] (none) from no namespaces field (every one).
	namespaces []string
	listed     bool
	selector   labels.Selector // nil when none
}

// readOverrides reads spec.validationFailureActionOverrides, in order;
// an entry whose action is neither Audit nor Enforce is passed over, as
// Kyverno does.
func readOverrides(spec map[string]any) ([]actionOverride, error) {
	list, _, _ := unstructured.NestedSlice(spec, "validationFailureActionOverrides")
	var out []actionOverride
	for i, raw := range list {
		m, _ := raw.(map[string]any)
		a, _, _ := unstructured.NestedString(m, "action")
		if !strings.EqualFold(a, "enforce") && !strings.EqualFold(a, "audit") {
			continue
		}
		listed := m["namespaces"] != nil
		o := actionOverride{enforce: strings.EqualFold(a, "enforce"), namespaces: stringsAt(m, "namespaces"), listed: listed}
		if sel, ok, _ := unstructured.NestedMap(m, "namespaceSelector"); ok {
			s, err := selectorOf(sel)
			if err != nil {
				return nil, fmt.Errorf("spec.validationFailureActionOverrides[%d]: %w", i, err)
			}
			o.selector = s
		}
		out = append(out, o)
	}
	return out, nil
}

// kyvernoNeeds is what one verifyImages entry requires: a signature when
// it has attestors (or the older key/keyless fields), an attestation per
// attestations entry. Notary entries verify no cosign artifact and are
// not read.
func kyvernoNeeds(vi map[string]any) Needs {
	typ, _, _ := unstructured.NestedString(vi, "type")
	var n Needs
	switch {
	case typ == "" || strings.EqualFold(typ, "Cosign"):
		n.Format = Legacy
	case strings.EqualFold(typ, "SigstoreBundle"):
		n.Format = Bundle
	default:
		return n
	}
	atts, _, _ := unstructured.NestedSlice(vi, "attestors")
	_, hasKey := vi["key"]
	_, hasRoots := vi["roots"]
	as, _, _ := unstructured.NestedSlice(vi, "attestations")
	// ImageVerification.Convert hands the deprecated key to the
	// attestations where there are any, then puts the attestations back
	// as written: the key then requires nothing (api/kyverno/v1
	// image_verification_types.go, Convert: copy.Attestations =
	// iv.Attestations).
	n.Signature = len(atts) > 0 || (hasKey || hasRoots) && len(as) == 0
	n.Repository, _, _ = unstructured.NestedString(vi, "repository")
	ann, _, _ := unstructured.NestedStringMap(vi, "annotations")
	sets := withAnnotations(kyvernoAttestors(vi), ann)
	n.Attestations = kyvernoAttestations(vi, n.Repository)
	if n.Format == Bundle {
		// SigstoreBundle reads the bundles among the image's own
		// referrers, whatever repository the rule or an attestor names
		// (pkg/image/verifiers/cpol/cosign/sigstore.go, fetchBundles:
		// ref.Context()).
		n.Repository, sets = "", ownRepository(sets)
		for i := range n.Attestations {
			n.Attestations[i].Sets = ownRepository(n.Attestations[i].Sets)
		}
	}
	for i := range n.Attestations {
		n.Attestations[i].Sets = withAnnotations(n.Attestations[i].Sets, ann)
	}
	if n.Signature {
		n.Sets = sets
		n.entryRepositories()
	}
	for _, raw := range as {
		a, _ := raw.(map[string]any)
		t, _, _ := unstructured.NestedString(a, "type")
		if t == "" {
			t, _, _ = unstructured.NestedString(a, "predicateType")
		}
		if t != "" {
			n.Predicates = append(n.Predicates, t)
		}
	}
	return n
}

// filter is a rule's match or exclude: any of Any, and all of All.
type filter struct {
	Any, All []resourceFilter
}

// resourceFilter is one resources block: every field given must match.
type resourceFilter struct {
	Kinds      []string
	Namespaces []string
	Names      []string
	Selector   labels.Selector // namespaceSelector; nil when none
	// ByObject: the block also selects by the object's own labels or
	// annotations (selector, annotations), which a use does not carry:
	// whether it matches is unsure.
	ByObject bool
}

// readFilter reads rule[key]: any/all lists of resource filters, or the
// older single resources block. A use is matched on kind, namespace and
// name; a block that also selects by the object's labels or annotations
// matches unsure. Filters on users and roles are not read (a restart's
// pod is created by a controller's ServiceAccount).
func readFilter(rule map[string]any, key string) (*filter, error) {
	m, ok, _ := unstructured.NestedMap(rule, key)
	if !ok {
		return nil, nil
	}
	f := &filter{}
	for _, part := range []struct {
		key string
		out *[]resourceFilter
	}{{"any", &f.Any}, {"all", &f.All}} {
		list, _, _ := unstructured.NestedSlice(m, part.key)
		for i, raw := range list {
			rf, err := readResources(raw)
			if err != nil {
				return nil, fmt.Errorf("%s.%s[%d]: %w", key, part.key, i, err)
			}
			*part.out = append(*part.out, rf)
		}
	}
	if _, ok := m["resources"]; ok {
		rf, err := readResources(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		f.Any = append(f.Any, rf)
	}
	return f, nil
}

// readResources reads the resources block of one filter.
func readResources(raw any) (resourceFilter, error) {
	m, _ := raw.(map[string]any)
	res, _, _ := unstructured.NestedMap(m, "resources")
	rf := resourceFilter{Kinds: stringsAt(res, "kinds"), Namespaces: stringsAt(res, "namespaces"), Names: stringsAt(res, "names")}
	_, bySelector := res["selector"]
	_, byAnnotations := res["annotations"]
	rf.ByObject = bySelector || byAnnotations
	if n, _, _ := unstructured.NestedString(res, "name"); n != "" {
		rf.Names = append(rf.Names, n)
	}
	if sel, ok, _ := unstructured.NestedMap(res, "namespaceSelector"); ok {
		s, err := selectorOf(sel)
		if err != nil {
			return rf, err
		}
		rf.Selector = s
	}
	return rf, nil
}

// selectorOf reads a namespaceSelector.
func selectorOf(sel map[string]any) (labels.Selector, error) {
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, &ls); err != nil {
		return nil, fmt.Errorf("namespaceSelector: %w", err)
	}
	s, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil, fmt.Errorf("namespaceSelector: %w", err)
	}
	return s, nil
}

// stringsAt is m[key] as a list of strings; entries of other types are
// left out.
func stringsAt(m map[string]any, key string) []string {
	list, _, _ := unstructured.NestedSlice(m, key)
	var out []string
	for _, v := range list {
		switch s := v.(type) {
		case string:
			out = append(out, s)
		case int64:
			out = append(out, strconv.FormatInt(s, 10))
		}
	}
	return out
}

// splitList splits a comma-separated annotation value; "none" is none.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "none" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ownRepository is sets with every entry reading in the image's own
// repository.
func ownRepository(sets []AttestorSet) []AttestorSet {
	out := slices.Clone(sets)
	for i := range out {
		out[i].Entries = slices.Clone(out[i].Entries)
		for j := range out[i].Entries {
			out[i].Entries[j].Repository = ""
		}
	}
	return out
}
