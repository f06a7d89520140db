package admission

import (
	"fmt"
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
	autogen := podControllers
	if a, ok := obj.GetAnnotations()[autogenAnnotation]; ok {
		autogen = splitList(a)
	}
	var out []*Rule
	for i, raw := range rules {
		rule, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.rules[%d] is not an object", i)
		}
		rs, err := kyvernoRule(obj, rule, specAction, autogen, source)
		if err != nil {
			return nil, fmt.Errorf("spec.rules[%d]: %w", i, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// kyvernoRule reads one rule's verifyImages entries.
func kyvernoRule(obj *unstructured.Unstructured, rule map[string]any, specAction string, autogen []string, source string) ([]*Rule, error) {
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
	var out []*Rule
	for j, raw := range vis {
		vi, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("verifyImages[%d] is not an object", j)
		}
		action, _, _ := unstructured.NestedString(vi, "failureAction")
		if action == "" {
			action, _, _ = unstructured.NestedString(rule, "validate", "failureAction")
		}
		if action == "" {
			action = specAction
		}
		r := &Rule{Engine: Kyverno, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Rule: name,
			Source: source, Enforce: strings.EqualFold(action, "enforce"),
			match: match, exclude: exclude, autogen: autogen}
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
	n.Signature = len(atts) > 0 || hasKey || hasRoots
	as, _, _ := unstructured.NestedSlice(vi, "attestations")
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
}

// readFilter reads rule[key]: any/all lists of resource filters, or the
// older single resources block. Filters on users, roles and object
// selectors are not read: a use is matched on kind, namespace and name.
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
	if n, _, _ := unstructured.NestedString(res, "name"); n != "" {
		rf.Names = append(rf.Names, n)
	}
	if sel, ok, _ := unstructured.NestedMap(res, "namespaceSelector"); ok {
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, &ls); err != nil {
			return rf, fmt.Errorf("namespaceSelector: %w", err)
		}
		s, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return rf, fmt.Errorf("namespaceSelector: %w", err)
		}
		rf.Selector = s
	}
	return rf, nil
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
