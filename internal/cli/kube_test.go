package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/inventory"
)

// A cluster where only Argo Rollouts are installed and the ServiceAccount
// may list none of the workload kinds: the kinds not served are said
// once, at info, and not listed; the forbidden Rollouts are one warning.
func TestInventoryWorkloadKinds(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "rollouts", Kind: "Rollout", Namespaced: true}}},
	}
	listKinds := map[schema.GroupVersionResource]string{}
	for _, w := range inventory.Workloads {
		listKinds[w.GroupVersionResource] = w.Kind + "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	var listed []string
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		listed = append(listed, a.GetResource().Resource)
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", fmt.Errorf("no RBAC"))
	})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	kt := &kubeTarget{client: client, dynamic: dyn, name: "test"}
	if _, err := kt.inventory(context.Background(), logger); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0] != "rollouts" {
		t.Errorf("listed %v, want only rollouts", listed)
	}
	var warns, notServed []string
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		switch {
		case strings.Contains(l, "level=WARN"):
			warns = append(warns, l)
		case strings.Contains(l, "workload kinds not served"):
			notServed = append(notServed, l)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "listing rollouts.argoproj.io is forbidden") {
		t.Errorf("warnings %q, want one: rollouts forbidden", warns)
	}
	if len(notServed) != 1 || !strings.Contains(notServed[0], "level=INFO") || !strings.Contains(notServed[0], "tasks.tekton.dev") {
		t.Errorf("not-served lines %q, want one at info naming tasks.tekton.dev", notServed)
	}
}

// A mirror set entry that names a URL is an input error naming the object,
// for the report; the other mirror sets are used (before: the rendered
// registries.conf did not load, and scan --cluster wrote no report).
func TestReadMirrorSetsURL(t *testing.T) {
	t.Parallel()
	client := fake.NewClientset()
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "config.openshift.io/v1", APIResources: []metav1.APIResource{{Name: "imagedigestmirrorsets", Kind: "ImageDigestMirrorSet"}}},
	}
	idms := schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "imagedigestmirrorsets"}
	obj := func(name, mirror string) runtime.Object {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"imageDigestMirrors": []any{map[string]any{"source": "src.example/" + name, "mirrors": []any{mirror}}}},
		}}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{idms: "ImageDigestMirrorSetList"},
		obj("good", "m.example/good"), obj("bad", "https://m.example/bad"))
	kt := &kubeTarget{client: client, dynamic: dyn, name: "test"}
	cfg, problems, err := kt.readMirrorSets(context.Background(), slog.New(slog.DiscardHandler))
	if err != nil || cfg == nil {
		t.Fatalf("readMirrorSets: %v, %v; want the good mirror set's configuration", cfg, err)
	}
	want := `ImageDigestMirrorSet bad: spec.imageDigestMirrors[0]: mirrors[0] "https://m.example/bad" has a scheme`
	if len(problems) != 1 || problems[0].Notice || !strings.HasPrefix(problems[0].Message, want) || problems[0].Source != "mirror sets of cluster test" {
		t.Fatalf("problems %+v; want one input error starting %q", problems, want)
	}
}
