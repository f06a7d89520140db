package admission

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kyvernoAutogen is whether Kyverno extends a ClusterPolicy's Pod rules
// to the pod controllers at all, as its default autogen (v1) decides for
// the whole policy (kyverno/kyverno v1.19.1 pkg/autogen/v1/autogen.go,
// CanAutoGen and checkAutogenSupport): not when any rule generates, or
// mutates with a JSON 6902 patch, or when a resources block of any
// rule's match or exclude names a resource (name, names), selects by
// the object's labels or annotations, or lists Pod beside other kinds;
// and not when no block names Pod or a pod controller. The policy's
// autogen annotation cannot turn it back on.
func kyvernoAutogen(spec map[string]any) bool {
	rules, _, _ := unstructured.NestedSlice(spec, "rules")
	needed := false
	for _, raw := range rules {
		rule, _ := raw.(map[string]any)
		if rule["generate"] != nil || jsonPatched(rule) {
			return false
		}
		for _, res := range resourceBlocks(rule) {
			if !autogenSupports(res) {
				return false
			}
			kinds := stringsAt(res, "kinds")
			needed = needed || slices.ContainsFunc(kinds, func(k string) bool { return k == "Pod" || slices.Contains(podControllers, k) })
		}
	}
	return needed
}

// jsonPatched reports whether a rule mutates with patchesJson6902, its
// own or a foreach's.
func jsonPatched(rule map[string]any) bool {
	if p, _, _ := unstructured.NestedString(rule, "mutate", "patchesJson6902"); p != "" {
		return true
	}
	each, _, _ := unstructured.NestedSlice(rule, "mutate", "foreach")
	return slices.ContainsFunc(each, func(raw any) bool {
		m, _ := raw.(map[string]any)
		p, _, _ := unstructured.NestedString(m, "patchesJson6902")
		return p != ""
	})
}

// resourceBlocks are the resources blocks of a rule's match and exclude:
// the older single one and those of any and all.
func resourceBlocks(rule map[string]any) []map[string]any {
	var out []map[string]any
	for _, key := range []string{"match", "exclude"} {
		f, _, _ := unstructured.NestedMap(rule, key)
		if res, ok, _ := unstructured.NestedMap(f, "resources"); ok {
			out = append(out, res)
		}
		for _, part := range []string{"any", "all"} {
			list, _, _ := unstructured.NestedSlice(f, part)
			for _, raw := range list {
				m, _ := raw.(map[string]any)
				res, _, _ := unstructured.NestedMap(m, "resources")
				out = append(out, res)
			}
		}
	}
	return out
}

// autogenSupports is checkAutogenSupport on one resources block.
func autogenSupports(res map[string]any) bool {
	name, _, _ := unstructured.NestedString(res, "name")
	kinds := stringsAt(res, "kinds")
	return name == "" && len(stringsAt(res, "names")) == 0 && res["selector"] == nil && res["annotations"] == nil &&
		!(len(kinds) > 1 && slices.ContainsFunc(kinds, isPodKind))
}

// isPodKind reports whether a kinds entry (Kind, version/Kind or
// group/version/Kind) names Pod.
func isPodKind(k string) bool {
	return k == "Pod" || k == "v1/Pod" || k == "core/v1/Pod" || k == "/v1/Pod"
}
