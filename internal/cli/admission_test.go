package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestClusterPoliciesProblems: through client-go's dynamic fake (no
// discovery: the lists' answers say), a kind that is not served is a
// notice logged once per engine and no input error; a forbidden list is
// a warning and an input error, so the run is incomplete.
func TestClusterPoliciesProblems(t *testing.T) {
	gvrs := map[schema.GroupVersionResource]string{
		{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}:                                  "ClusterPolicyList",
		{Group: "kyverno.io", Version: "v1", Resource: "policies"}:                                         "PolicyList",
		{Group: "policy.sigstore.dev", Version: "v1beta1", Resource: "clusterimagepolicies"}:               "ClusterImagePolicyList",
		{Group: "policy.sigstore.dev", Version: "v1alpha1", Resource: "clusterimagepolicies"}:              "ClusterImagePolicyList",
		{Group: "policies.kyverno.io", Version: "v1", Resource: "imagevalidatingpolicies"}:                 "ImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1beta1", Resource: "imagevalidatingpolicies"}:            "ImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1alpha1", Resource: "imagevalidatingpolicies"}:           "ImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1", Resource: "namespacedimagevalidatingpolicies"}:       "NamespacedImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1beta1", Resource: "namespacedimagevalidatingpolicies"}:  "NamespacedImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1alpha1", Resource: "namespacedimagevalidatingpolicies"}: "NamespacedImageValidatingPolicyList",
		{Version: "v1", Resource: "namespaces"}:                                                            "NamespaceList",
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs)
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gr := a.GetResource().GroupResource()
		if gr.Resource == "clusterpolicies" {
			return true, nil, apierrors.NewForbidden(gr, "", errors.New("RBAC: no list"))
		}
		return true, nil, apierrors.NewNotFound(gr, "")
	})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ps, inputErrs, err := clusterPolicies(context.Background(), &kubeTarget{dynamic: dyn}, logger)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Rules) != 0 {
		t.Errorf("rules %v, want none", ps.Rules)
	}
	if len(inputErrs) != 1 || !strings.Contains(inputErrs[0].Message, "image policies: listing clusterpolicies.kyverno.io") || inputErrs[0].Notice {
		t.Errorf("input errors %+v, want one, for the forbidden ClusterPolicy list", inputErrs)
	}
	out := logs.String()
	if n := strings.Count(out, "no policy-controller policies"); n != 1 {
		t.Errorf("policy-controller's absence said %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "level=WARN") || strings.Count(out, "no kyverno policies") != 1 {
		t.Errorf("want a warning for the forbidden list and one notice for Kyverno's Policies:\n%s", out)
	}
}
