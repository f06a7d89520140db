package inventory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	sigsyaml "sigs.k8s.io/yaml"
)

func obj(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     spec,
	}}
}

func podTemplate(image string) map[string]any {
	return map[string]any{"spec": map[string]any{
		"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		"containers":       []any{map[string]any{"name": "app", "image": image}},
	}}
}

func showEntry(c Container) string {
	return fmt.Sprintf("%s %s/%s %s %s %s %s secrets=%v", c.OwnerKind, c.Namespace, c.OwnerName, c.Field, c.Container, c.Image, c.PullPolicy, c.ImagePullSecrets)
}

func TestCustom(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	listKinds := map[schema.GroupVersionResource]string{}
	for _, w := range Workloads {
		listKinds[w.GroupVersionResource] = w.Kind + "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, listKinds,
		obj("argoproj.io/v1alpha1", "Rollout", "shop", "web", map[string]any{"replicas": int64(0), "template": podTemplate("registry.example.com/web:3")}),
		obj("tekton.dev/v1", "Task", "ci", "build", map[string]any{
			"steps": []any{map[string]any{"name": "compile", "image": "registry.example.com/go:1.23", "imagePullPolicy": "IfNotPresent"}},
		}),
		obj("postgresql.cnpg.io/v1", "Cluster", "db", "pg", map[string]any{"imageName": "ghcr.io/cloudnative-pg/postgresql:16.4"}),
	)
	res := Custom(context.Background(), dyn, nil, "")
	var got []string
	for _, c := range res.Templates {
		got = append(got, showEntry(c))
	}
	want := []string{
		"Rollout shop/web containers app registry.example.com/web:3 IfNotPresent secrets=[regcred]",
		"Task ci/build steps compile registry.example.com/go:1.23 IfNotPresent secrets=[]",
		"Cluster db/pg imageName  ghcr.io/cloudnative-pg/postgresql:16.4 IfNotPresent secrets=[]",
	}
	if !slices.Equal(got, want) || len(res.Warnings) != 0 {
		t.Errorf("templates:\n%s\nwant:\n%s\nwarnings: %v", strings.Join(got, "\n"), strings.Join(want, "\n"), res.Warnings)
	}
}

// forbiddenDynamic is a dynamic client whose every list is forbidden, as
// for a ServiceAccount without RBAC on any workload CRD; it records the
// resources listed.
func forbiddenDynamic(listed *[]string) *dynamicfake.FakeDynamicClient {
	listKinds := map[schema.GroupVersionResource]string{}
	for _, w := range Workloads {
		listKinds[w.GroupVersionResource] = w.Kind + "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.GetResource()
		*listed = append(*listed, r.Resource+"."+r.Group)
		return true, nil, apierrors.NewForbidden(r.GroupResource(), "", fmt.Errorf("no RBAC"))
	})
	return dyn
}

// TestCustomDiscovery asks discovery first: a kind not served is not
// listed and is said in NotServed (no warning); a served kind whose list
// is forbidden stays a warning; a group version whose discovery fails
// otherwise than 404 is listed (its list tells).
func TestCustomDiscovery(t *testing.T) {
	t.Parallel()
	rollouts := metav1.APIResourceList{GroupVersion: "argoproj.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "rollouts", Kind: "Rollout", Namespaced: true}}}
	tekton := metav1.APIResourceList{GroupVersion: "tekton.dev/v1", APIResources: []metav1.APIResource{{Name: "tasks", Kind: "Task", Namespaced: true}}}
	for _, tc := range []struct {
		name      string
		resources []*metav1.APIResourceList
		failGV    string // a group version whose discovery fails with a 503
		listed    []string
	}{
		{"nothing served", nil, "", nil},
		{"rollouts and tekton tasks served", []*metav1.APIResourceList{&rollouts, &tekton}, "", []string{"rollouts.argoproj.io", "tasks.tekton.dev"}},
		{"cnpg discovery fails", nil, "postgresql.cnpg.io/v1", []string{"clusters.postgresql.cnpg.io"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: tc.resources}}
			var d discoveryFunc = func(gv string) (*metav1.APIResourceList, error) {
				if gv == tc.failGV {
					return nil, apierrors.NewServiceUnavailable("discovery down")
				}
				return disc.ServerResourcesForGroupVersion(gv)
			}
			var listed []string
			res := Custom(context.Background(), forbiddenDynamic(&listed), discoveryWith{disc, d}, "")
			if !slices.Equal(listed, tc.listed) {
				t.Errorf("listed %v, want %v", listed, tc.listed)
			}
			if len(res.Warnings) != len(tc.listed) {
				t.Errorf("warnings %q, want one per listed resource %v", res.Warnings, tc.listed)
			}
			for i, w := range res.Warnings {
				if i < len(tc.listed) && !strings.Contains(w, "listing "+tc.listed[i]+" is forbidden") {
					t.Errorf("warning %q does not say %s is forbidden", w, tc.listed[i])
				}
			}
			if len(res.NotServed)+len(tc.listed) != len(Workloads) {
				t.Errorf("not served %v: want every resource but %v", res.NotServed, tc.listed)
			}
			for _, r := range res.NotServed {
				if slices.Contains(tc.listed, r) {
					t.Errorf("%s both listed and not served", r)
				}
			}
		})
	}
}

// discoveryFunc answers ServerResourcesForGroupVersion.
type discoveryFunc func(gv string) (*metav1.APIResourceList, error)

// discoveryWith is a fake discovery whose per-group-version answer is f.
type discoveryWith struct {
	*fakediscovery.FakeDiscovery
	f discoveryFunc
}

func (d discoveryWith) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.f(gv)
}

// TestRolloutPods attributes the pods of a Rollout's ReplicaSet to the
// Rollout, so its template entry is left out while they run its image.
func TestRolloutPods(t *testing.T) {
	t.Parallel()
	yes := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-abc",
		OwnerReferences: []metav1.OwnerReference{{Kind: KindRollout, Name: "web", Controller: &yes}}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-abc-1",
			OwnerReferences: []metav1.OwnerReference{{Kind: KindReplicaSet, Name: "web-abc", Controller: &yes}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/web:3"}}},
	}
	inv, err := List(context.Background(), fake.NewClientset(rs, pod), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		image string
		want  int // entries for the Rollout
	}{{"registry.example.com/web:3", 1}, {"registry.example.com/web:4", 2}} {
		inv := &Inventory{Containers: slices.Clone(inv.Containers)}
		inv.AddTemplates([]Container{{Namespace: "shop", OwnerKind: KindRollout, OwnerName: "web", Field: FieldContainers, Container: "app", Image: tc.image}})
		n := 0
		for _, c := range inv.Containers {
			if c.OwnerKind == KindRollout {
				n++
			} else {
				t.Errorf("entry not attributed to the Rollout: %s", showEntry(c))
			}
		}
		if n != tc.want {
			t.Errorf("template %s: %d Rollout entries, want %d", tc.image, n, tc.want)
		}
	}
}

// TestWorkloadsRBAC checks that deploy/rbac.yaml's regcheck-inventory
// ClusterRole grants get and list on every resource Custom lists.
func TestWorkloadsRBAC(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var r rbacv1.ClusterRole
		if sigsyaml.Unmarshal([]byte(doc), &r) == nil && r.Kind == "ClusterRole" && r.Name == "regcheck-inventory" {
			role = &r
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole regcheck-inventory in deploy/rbac.yaml")
	}
	for _, w := range Workloads {
		for _, verb := range []string{"get", "list"} {
			if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.APIGroups, w.Group) && slices.Contains(r.Resources, w.Resource) && slices.Contains(r.Verbs, verb)
			}) {
				t.Errorf("regcheck-inventory does not grant %s on %s.%s", verb, w.Resource, w.Group)
			}
		}
	}
}
