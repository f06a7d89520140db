package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// resources are the policy kinds read from a cluster, each engine's in
// the order tried: a ClusterImagePolicy is read as v1beta1, or v1alpha1
// where only that is served.
var resources = []struct {
	what       string // the policies, as a notice names them when not served (once each)
	gvrs       []schema.GroupVersionResource
	namespaced bool
}{
	{"kyverno policies", []schema.GroupVersionResource{{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}}, false},
	{"kyverno policies", []schema.GroupVersionResource{{Group: "kyverno.io", Version: "v1", Resource: "policies"}}, true},
	{"kyverno ImageValidatingPolicies", ivpGVRs("imagevalidatingpolicies"), false},
	{"kyverno ImageValidatingPolicies", ivpGVRs("namespacedimagevalidatingpolicies"), true},
	{"policy-controller policies", []schema.GroupVersionResource{
		{Group: "policy.sigstore.dev", Version: "v1beta1", Resource: "clusterimagepolicies"},
		{Group: "policy.sigstore.dev", Version: "v1alpha1", Resource: "clusterimagepolicies"}}, false},
}

// ivpGVRs are an ImageValidatingPolicy resource in the versions Kyverno
// 1.19 serves (its CRD: v1, v1beta1 stored, v1alpha1), in the order tried.
func ivpGVRs(resource string) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		out = append(out, schema.GroupVersionResource{Group: "policies.kyverno.io", Version: v, Resource: resource})
	}
	return out
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Read lists the image policies of a cluster through the dynamic client,
// and the namespaces' labels; namespace limits the namespaced Policies
// read ("" for all). A kind whose CRD is not installed (not served, as
// discovery says, or a 404 on the list) means no policy of that engine,
// said once as a notice; any other error (forbidden, say) is a warning,
// and the rest is read. disc may be nil: the lists' 404s then say what
// is not served (but RBAC answers 403 before the apiserver can say 404,
// for a kind it does not serve). Read fails only when ctx ends.
func Read(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, namespace string) (*Policies, []Problem, error) {
	ps := &Policies{Labels: map[string]map[string]string{}}
	var problems []Problem
	missing := map[string]bool{}
	for _, res := range resources {
		gvrs := servedOf(disc, res.gvrs)
		if len(gvrs) == 0 {
			if !missing[res.what] {
				problems = append(problems, Problem{Source: "cluster", Message: fmt.Sprintf("no %s: %s is not served (its CRDs are not installed)", res.what, res.gvrs[0].GroupResource())})
			}
			missing[res.what] = true
			continue
		}
		list, gvr, err := listFirstServed(ctx, dyn, gvrs, res.namespaced, namespace)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		switch {
		case apierrors.IsNotFound(err):
			if !missing[res.what] {
				problems = append(problems, Problem{Source: "cluster", Message: fmt.Sprintf("no %s: %s is not served (its CRDs are not installed)", res.what, gvr.GroupResource())})
			}
			missing[res.what] = true
			continue
		case err != nil:
			problems = append(problems, Problem{Warning: true, Source: "cluster", Message: fmt.Sprintf("listing %s: %v; its policies are not applied", gvr.GroupResource(), err)})
			continue
		}
		for i := range list.Items {
			rules, err := rulesOf(&list.Items[i], "cluster")
			if err != nil {
				problems = append(problems, Problem{Warning: true, Source: "cluster", Message: fmt.Sprintf("%s %s: %v", list.Items[i].GetKind(), objName(&list.Items[i]), err)})
			}
			ps.Rules = append(ps.Rules, rules...)
		}
	}
	if !missing["policy-controller policies"] {
		problems = append(problems, ps.readTrustRoots(ctx, dyn, disc)...)
	}
	problems = append(problems, ps.readLabels(ctx, dyn)...)
	return ps, problems, ctx.Err()
}

// servedOf are those of gvrs discovery says are served, in order; all of
// them when disc is nil or discovery fails otherwise than not found (the
// lists then tell).
func servedOf(disc discovery.DiscoveryInterface, gvrs []schema.GroupVersionResource) []schema.GroupVersionResource {
	if disc == nil {
		return gvrs
	}
	var out []schema.GroupVersionResource
	for _, gvr := range gvrs {
		list, err := disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			out = append(out, gvr)
			continue
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				out = append(out, gvr)
				break
			}
		}
	}
	return out
}

// listFirstServed lists the first of gvrs that answers. A version that
// fails otherwise than not served gives way to the next too: a
// ClusterImagePolicy is stored as v1alpha1, and listing it as v1beta1
// goes through policy-controller's conversion webhook, which may be down.
// When none answers, the error is the first that is not a 404.
func listFirstServed(ctx context.Context, dyn dynamic.Interface, gvrs []schema.GroupVersionResource, namespaced bool, ns string) (*unstructured.UnstructuredList, schema.GroupVersionResource, error) {
	var firstErr error
	firstGVR := gvrs[0]
	for _, gvr := range gvrs {
		var list *unstructured.UnstructuredList
		var err error
		if namespaced {
			list, err = dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		} else {
			list, err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		}
		if err == nil {
			return list, gvr, nil
		}
		if firstErr == nil || apierrors.IsNotFound(firstErr) && !apierrors.IsNotFound(err) {
			firstErr, firstGVR = err, gvr
		}
	}
	return nil, firstGVR, firstErr
}

// readLabels lists the namespaces' labels, for namespaceSelectors and
// policy-controller's opt-in label; without them those rules are unsure.
func (ps *Policies) readLabels(ctx context.Context, dyn dynamic.Interface) []Problem {
	if len(ps.Rules) == 0 {
		return nil
	}
	list, err := dyn.Resource(namespacesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []Problem{{Warning: true, Source: "cluster", Message: fmt.Sprintf("listing namespaces: %v; policies that select namespaces by label are said as warnings only", err)}}
	}
	for _, n := range list.Items {
		ps.Labels[n.GetName()] = n.GetLabels()
	}
	ps.LabelsKnown = true
	return nil
}

// rulesOf reads one policy object; other objects give none.
func rulesOf(obj *unstructured.Unstructured, source string) ([]*Rule, error) {
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	switch {
	case gv.Group == "kyverno.io" && (obj.GetKind() == "ClusterPolicy" || obj.GetKind() == "Policy"):
		return kyvernoRules(obj, source)
	case isIVP(obj.GetAPIVersion(), obj.GetKind()):
		r, err := ivpRule(obj, source)
		if r == nil || err != nil {
			return nil, err
		}
		return []*Rule{r}, nil
	case gv.Group == "policy.sigstore.dev" && obj.GetKind() == "ClusterImagePolicy":
		r, err := sigstoreRule(obj, source)
		if r == nil || err != nil {
			return nil, err
		}
		return []*Rule{r}, nil
	}
	return nil, nil
}

// reads reports whether an object of apiVersion and kind is one the
// policy reader takes in: a Namespace (its labels), or a kind rulesOf reads.
func reads(apiVersion, kind string) bool {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	switch {
	case apiVersion == "v1" && kind == "Namespace":
		return true
	case gv.Group == "kyverno.io" && (kind == "ClusterPolicy" || kind == "Policy"):
		return true
	case gv.Group == "policy.sigstore.dev" && kind == "ClusterImagePolicy":
		return true
	case isIVP(apiVersion, kind), isTrustRoot(apiVersion, kind):
		return true
	}
	return false
}

// objName is namespace/name, or name.
func objName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() != "" {
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	return obj.GetName()
}
