package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

var (
	clusterPolicies = schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
	kyvernoPolicies = schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "policies"}
	cipBeta         = schema.GroupVersionResource{Group: "policy.sigstore.dev", Version: "v1beta1", Resource: "clusterimagepolicies"}
	cipAlpha        = schema.GroupVersionResource{Group: "policy.sigstore.dev", Version: "v1alpha1", Resource: "clusterimagepolicies"}
	ivpV1           = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "imagevalidatingpolicies"}
	ivpBeta         = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1beta1", Resource: "imagevalidatingpolicies"}
	ivpAlpha        = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1alpha1", Resource: "imagevalidatingpolicies"}
	nivpV1          = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1", Resource: "namespacedimagevalidatingpolicies"}
	nivpBeta        = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1beta1", Resource: "namespacedimagevalidatingpolicies"}
	nivpAlpha       = schema.GroupVersionResource{Group: "policies.kyverno.io", Version: "v1alpha1", Resource: "namespacedimagevalidatingpolicies"}
)

// ivpSpecMap is an ImageValidatingPolicy spec in Deny that requires a
// signature by one key attestor on images under reg.example.
var ivpSpecMap = map[string]any{"validationActions": []any{"Deny"},
	"matchImageReferences": []any{map[string]any{"glob": "reg.example/*"}},
	"attestors":            []any{map[string]any{"name": "k", "cosign": map[string]any{"key": map[string]any{"data": "k"}}}},
	"validations":          []any{map[string]any{"expression": "images.containers.map(image, verifyImageSignatures(image, [attestors.k])).all(e, e > 0)"}}}

// served is a discovery answer serving gvrs.
func served(gvrs ...schema.GroupVersionResource) []*metav1.APIResourceList {
	by := map[string]*metav1.APIResourceList{}
	var out []*metav1.APIResourceList
	for _, g := range gvrs {
		l := by[g.GroupVersion().String()]
		if l == nil {
			l = &metav1.APIResourceList{GroupVersion: g.GroupVersion().String()}
			by[g.GroupVersion().String()] = l
			out = append(out, l)
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: g.Resource})
	}
	return out
}

// object is a policy object as the apiserver lists it.
func object(apiVersion, kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetName(name)
	u.SetNamespace(namespace)
	return u
}

// verifySpec is a Kyverno spec with one Enforce verifyImages entry.
func verifySpec(image string) map[string]any {
	return map[string]any{"rules": []any{map[string]any{"name": "verify",
		"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Pod"}}}}},
		"verifyImages": []any{map[string]any{"imageReferences": []any{image}, "failureAction": "Enforce",
			"attestors": []any{map[string]any{"entries": []any{map[string]any{"keys": map[string]any{"publicKeys": "k"}}}}}}}}}}
}

var cipSpec = map[string]any{"images": []any{map[string]any{"glob": "reg.example/**"}},
	"authorities": []any{map[string]any{"key": map[string]any{"data": "k"}}}}

// TestRead reads policies through client-go's dynamic and discovery
// fakes: a kind discovery says is not installed is no policy, said once
// per engine as a notice, and no list is sent for it; a forbidden list
// is a warning, and the rest is still read; a ClusterImagePolicy is read
// as v1alpha1 where v1beta1 is not served or fails.
func TestRead(t *testing.T) {
	forbidden := apierrors.NewForbidden(clusterPolicies.GroupResource(), "", errors.New("RBAC"))
	unavailable := apierrors.NewServiceUnavailable("conversion webhook down")
	for _, tt := range []struct {
		name      string
		served    []*metav1.APIResourceList
		noDisc    bool
		objects   []runtime.Object
		fail      map[schema.GroupVersionResource]error // list errors
		rules     []string                              // Rule.String()
		notices   []string                              // substrings, one problem each
		warnings  []string
		notListed []schema.GroupVersionResource
	}{
		{name: "nothing installed", notices: []string{"no kyverno policies", "no kyverno ImageValidatingPolicies", "no policy-controller policies"},
			notListed: []schema.GroupVersionResource{clusterPolicies, kyvernoPolicies, ivpV1, nivpV1, cipBeta, cipAlpha, namespacesGVR}},
		{name: "kyverno only", served: served(clusterPolicies, kyvernoPolicies),
			objects: []runtime.Object{object("kyverno.io/v1", "ClusterPolicy", "", "signed", verifySpec("*")),
				object("kyverno.io/v1", "Policy", "shop", "shop-signed", verifySpec("reg.example/shop/*"))},
			rules:     []string{"kyverno ClusterPolicy signed, rule verify (Enforce)", "kyverno Policy shop/shop-signed, rule verify (Enforce)"},
			notices:   []string{"no kyverno ImageValidatingPolicies", "no policy-controller policies"},
			notListed: []schema.GroupVersionResource{cipBeta, cipAlpha, ivpV1, nivpV1}},
		{name: "ImageValidatingPolicies only, v1beta1", served: served(ivpBeta, nivpBeta),
			objects: []runtime.Object{object("policies.kyverno.io/v1beta1", "ImageValidatingPolicy", "", "ivp", ivpSpecMap),
				object("policies.kyverno.io/v1beta1", "NamespacedImageValidatingPolicy", "shop", "nivp", ivpSpecMap)},
			rules:     []string{"kyverno ImageValidatingPolicy ivp (Deny)", "kyverno NamespacedImageValidatingPolicy shop/nivp (Deny)"},
			notices:   []string{"no kyverno policies", "no policy-controller policies"},
			notListed: []schema.GroupVersionResource{clusterPolicies, kyvernoPolicies, ivpV1, nivpV1, ivpAlpha}},
		{name: "ClusterPolicies forbidden", served: served(clusterPolicies, kyvernoPolicies, cipAlpha),
			objects: []runtime.Object{object("kyverno.io/v1", "ClusterPolicy", "", "signed", verifySpec("*")),
				object("kyverno.io/v1", "Policy", "shop", "shop-signed", verifySpec("reg.example/shop/*")),
				object("policy.sigstore.dev/v1alpha1", "ClusterImagePolicy", "", "cip", cipSpec)},
			fail:     map[schema.GroupVersionResource]error{clusterPolicies: forbidden},
			rules:    []string{"kyverno Policy shop/shop-signed, rule verify (Enforce)", "policy-controller ClusterImagePolicy cip (enforce)"},
			notices:  []string{"no kyverno ImageValidatingPolicies"},
			warnings: []string{"listing clusterpolicies.kyverno.io"}},
		{name: "v1beta1 fails, v1alpha1 answers", served: served(cipBeta, cipAlpha),
			objects:   []runtime.Object{object("policy.sigstore.dev/v1alpha1", "ClusterImagePolicy", "", "cip", cipSpec)},
			fail:      map[schema.GroupVersionResource]error{cipBeta: unavailable},
			rules:     []string{"policy-controller ClusterImagePolicy cip (enforce)"},
			notices:   []string{"no kyverno policies", "no kyverno ImageValidatingPolicies"},
			notListed: []schema.GroupVersionResource{clusterPolicies, kyvernoPolicies}},
		{name: "no discovery: the lists' 404s say", noDisc: true,
			fail: map[schema.GroupVersionResource]error{
				clusterPolicies: apierrors.NewNotFound(clusterPolicies.GroupResource(), ""),
				kyvernoPolicies: apierrors.NewNotFound(kyvernoPolicies.GroupResource(), ""),
				cipBeta:         apierrors.NewNotFound(cipBeta.GroupResource(), ""),
				cipAlpha:        apierrors.NewNotFound(cipAlpha.GroupResource(), ""),
				ivpV1:           apierrors.NewNotFound(ivpV1.GroupResource(), ""),
				ivpBeta:         apierrors.NewNotFound(ivpV1.GroupResource(), ""),
				ivpAlpha:        apierrors.NewNotFound(ivpV1.GroupResource(), ""),
				nivpV1:          apierrors.NewNotFound(nivpV1.GroupResource(), ""),
				nivpBeta:        apierrors.NewNotFound(nivpV1.GroupResource(), ""),
				nivpAlpha:       apierrors.NewNotFound(nivpV1.GroupResource(), "")},
			notices: []string{"no kyverno policies", "no kyverno ImageValidatingPolicies", "no policy-controller policies"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]runtime.Object{}, tt.objects...)
			ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
			ns.SetName("shop")
			ns.SetLabels(map[string]string{"policy.sigstore.dev/include": "true"})
			objs = append(objs, ns)
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				clusterPolicies: "ClusterPolicyList", kyvernoPolicies: "PolicyList", cipBeta: "ClusterImagePolicyList",
				cipAlpha: "ClusterImagePolicyList", namespacesGVR: "NamespaceList", trustRootsGVR: "TrustRootList",
				ivpV1: "ImageValidatingPolicyList", ivpBeta: "ImageValidatingPolicyList", ivpAlpha: "ImageValidatingPolicyList",
				nivpV1: "NamespacedImageValidatingPolicyList", nivpBeta: "NamespacedImageValidatingPolicyList", nivpAlpha: "NamespacedImageValidatingPolicyList"}, objs...)
			for gvr, err := range tt.fail {
				dyn.PrependReactor("list", gvr.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetResource() != gvr {
						return false, nil, nil
					}
					return true, nil, err
				})
			}
			var disc *discoveryfake.FakeDiscovery
			if !tt.noDisc {
				disc = &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{Resources: tt.served}}
			}
			var ps *Policies
			var problems []Problem
			var err error
			if disc == nil {
				ps, problems, err = Read(context.Background(), dyn, nil, "")
			} else {
				ps, problems, err = Read(context.Background(), dyn, disc, "")
			}
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, r := range ps.Rules {
				rules = append(rules, r.String())
			}
			if strings.Join(rules, "\n") != strings.Join(tt.rules, "\n") {
				t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(rules, "\n"), strings.Join(tt.rules, "\n"))
			}
			var notices, warnings []Problem
			for _, p := range problems {
				if p.Warning {
					warnings = append(warnings, p)
				} else {
					notices = append(notices, p)
				}
			}
			holdProblems(t, "notices", notices, tt.notices)
			holdProblems(t, "warnings", warnings, tt.warnings)
			for _, a := range dyn.Actions() {
				for _, g := range tt.notListed {
					if a.GetVerb() == "list" && a.GetResource() == g {
						t.Errorf("listed %s, which is not served (or there is no rule to label)", g)
					}
				}
			}
			if len(ps.Rules) > 0 && (!ps.LabelsKnown || ps.Labels["shop"]["policy.sigstore.dev/include"] != "true") {
				t.Errorf("namespace labels %v (known %v), want shop's", ps.Labels, ps.LabelsKnown)
			}
		})
	}
}

// holdProblems checks that got has one problem per want, each saying it.
func holdProblems(t *testing.T, what string, got []Problem, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s %+v, want %d: %q", what, got, len(want), want)
		return
	}
	for i, w := range want {
		if !strings.Contains(got[i].Message, w) {
			t.Errorf("%s[%d] = %q, want it to say %q", what, i, got[i].Message, w)
		}
	}
}
