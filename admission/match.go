package admission

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// Applied is a rule that applies to one use of an image.
type Applied struct {
	Rule *Rule
	// Unsure: whether the rule applies, or enforces, turns on namespace
	// labels that are not known (policies read from files without the
	// Namespace object): it is said as a warning, never as broken.
	Unsure bool
	// Enforce: the rule refuses the use's pod (Rule.Enforce, unless a
	// Kyverno validationFailureActionOverrides entry says otherwise for
	// the use's namespace).
	Enforce bool
	// WorkloadOnly: the rule selects the use's workload (a Deployment,
	// a CronJob) and not the Pod a restart creates: a restarted pod is
	// admitted, the next change of the workload's image is refused.
	WorkloadOnly bool
}

// Applying returns the rules that apply to the use u of the image ref, in
// the order they were read.
func (ps *Policies) Applying(u types.Use, ref imageref.Ref) []Applied {
	if ps == nil {
		return nil
	}
	var out []Applied
	for _, r := range ps.Rules {
		if ok, unsure, workload := ps.applies(r, u, ref); ok {
			enforce, eu := ps.enforces(r, namespaceOf(u))
			out = append(out, Applied{Rule: r, Unsure: unsure || eu, Enforce: enforce, WorkloadOnly: workload})
		}
	}
	return out
}

// applies says whether r covers u's image and resource, whether that
// rests on labels not known, and whether it covers the workload only
// (a Kyverno rule).
func (ps *Policies) applies(r *Rule, u types.Use, ref imageref.Ref) (ok, unsure, workload bool) {
	ns := namespaceOf(u)
	switch {
	case r.ivp != nil:
		return ps.ivpApplies(r, u, ref)
	case r.Engine == Kyverno:
		names := kyvernoNames(u, ref)
		if !kyvernoMatches(r.Images, names) || len(r.Skip) > 0 && kyvernoMatches(r.Skip, names) {
			return false, false, false
		}
		if r.Kind == "Policy" && r.Namespace != ns {
			return false, false, false
		}
		return ps.kyvernoSelects(r, u)
	case r.Engine == PolicyController:
		ok, unsure = ps.policyControllerApplies(r, u, ref)
		return ok, unsure, false
	}
	return false, false, false
}

// policyControllerApplies says whether a ClusterImagePolicy covers u's
// image and resource, in an opted-in namespace.
func (ps *Policies) policyControllerApplies(r *Rule, u types.Use, ref imageref.Ref) (ok, unsure bool) {
	if !globMatches(r.Images, ref) {
		return false, false
	}
	ok, unsure = r.matchesResources(resourcesOf(u))
	if !ok {
		return false, false
	}
	lbl, known := ps.labels(namespaceOf(u))
	if !known {
		return true, true
	}
	return lbl[includeLabel] == "true", unsure
}

// enforces says whether r refuses a pod in namespace ns: the first of its
// overrides that names ns (a wildcard) and whose namespaceSelector, if
// any, selects it decides, as in Kyverno's matchOverride; else
// r.Enforce. unsure: an override's selector turns on labels not known.
func (ps *Policies) enforces(r *Rule, ns string) (enforce, unsure bool) {
	for _, o := range r.overrides {
		if o.listed && !anyWildcard(o.namespaces, ns) {
			continue
		}
		if o.selector == nil {
			return o.enforce, false
		}
		lbl, known := ps.labels(ns)
		if !known {
			return o.enforce || r.Enforce, true
		}
		if o.selector.Matches(labels.Set(lbl)) {
			return o.enforce, false
		}
	}
	return r.Enforce, false
}

// kyvernoSelects applies a Kyverno rule's match and exclude to u, as the
// Pod its restart creates and as the workload itself (the autogen'd rule);
// workload: it selects the workload and not the Pod.
func (ps *Policies) kyvernoSelects(r *Rule, u types.Use) (ok, unsure, workload bool) {
	for i, res := range resourcesOf(u) {
		m, mu := ps.filterMatches(r.match, r, res, true)
		if !m {
			continue
		}
		x, xu := ps.filterMatches(r.exclude, r, res, false)
		if x && !xu {
			continue
		}
		return true, mu || xu, i > 0
	}
	return false, false, false
}

// resource is what a Kyverno filter is matched against.
type resource struct{ kind, namespace, name string }

// resourcesOf are the resources admission sees for u: the Pod a restart
// creates, and the workload when it is not a bare Pod.
func resourcesOf(u types.Use) []resource {
	ns := namespaceOf(u)
	pod := resource{kind: "Pod", namespace: ns, name: u.Pod}
	if u.Kind == "" || u.Kind == "Pod" {
		pod.name = u.Name
		return []resource{pod}
	}
	return []resource{pod, {kind: u.Kind, namespace: ns, name: u.Name}}
}

// namespaceOf is u's namespace; a file's resource with none is applied
// to the default namespace.
func namespaceOf(u types.Use) string {
	if u.Namespace == "" {
		return "default"
	}
	return u.Namespace
}

// filterMatches reports whether f selects res (a nil f selects
// everything when it is the match, nothing when it is the exclude), and
// whether the answer rests on unknown labels.
func (ps *Policies) filterMatches(f *filter, r *Rule, res resource, isMatch bool) (ok, unsure bool) {
	if f == nil || len(f.Any) == 0 && len(f.All) == 0 {
		return isMatch, false
	}
	if len(f.Any) > 0 {
		any := false
		for _, rf := range f.Any {
			if m, u := ps.resourceMatches(rf, r, res); m {
				any, unsure = true, unsure || u
				if !u {
					break
				}
			}
		}
		if !any {
			return false, false
		}
	}
	for _, rf := range f.All {
		m, u := ps.resourceMatches(rf, r, res)
		if !m {
			return false, false
		}
		unsure = unsure || u
	}
	return true, unsure
}

// resourceMatches applies one resources block: every field it gives must
// match. A namespaceSelector over a namespace whose labels are not known
// matches, unsure; so does a block that selects by the object's labels or
// annotations.
func (ps *Policies) resourceMatches(rf resourceFilter, r *Rule, res resource) (ok, unsure bool) {
	if len(rf.Kinds) > 0 && !kindMatches(rf.Kinds, res.kind, r.autogen) {
		return false, false
	}
	if len(rf.Namespaces) > 0 && !anyWildcard(rf.Namespaces, res.namespace) {
		return false, false
	}
	if len(rf.Names) > 0 && !anyWildcard(rf.Names, res.name) {
		return false, false
	}
	if rf.Selector != nil {
		lbl, known := ps.labels(res.namespace)
		if !known {
			return true, true
		}
		if !rf.Selector.Matches(labels.Set(lbl)) {
			return false, false
		}
	}
	return true, rf.ByObject
}

// kindMatches reports whether kinds (each Kind, version/Kind or
// group/version/Kind, wildcards allowed) name kind, directly or, for a
// pod controller, through a Pod entry autogen extends to it.
func kindMatches(kinds []string, kind string, autogen []string) bool {
	for _, k := range kinds {
		k = k[strings.LastIndex(k, "/")+1:]
		if wildcard(k, kind) || k == "Pod" && slices.Contains(autogen, kind) {
			return true
		}
	}
	return false
}

// anyWildcard reports whether any of patterns matches s.
func anyWildcard(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return wildcard(p, s) })
}

// labels are a namespace's labels, and whether they are known.
func (ps *Policies) labels(ns string) (map[string]string, bool) {
	if l, ok := ps.Labels[ns]; ok {
		return l, true
	}
	return nil, ps.LabelsKnown
}
