package mirrorsets

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

func object(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

func fakeCluster(listed *[]string, objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	listKinds := map[schema.GroupVersionResource]string{imageConfig: "ImageList"}
	for _, r := range resources {
		listKinds[r.gvr] = r.kind + "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	dyn.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*listed = append(*listed, a.GetVerb()+" "+a.GetResource().Resource)
		return false, nil, nil
	})
	return dyn
}

// TestList: discovery first; a kind not served is not asked for and is
// said in NotServed; the served kinds' rules are read, ICSP without a
// policy, and the cluster's insecure registries with them.
func TestList(t *testing.T) {
	objs := []runtime.Object{
		object("config.openshift.io/v1", KindIDMS, "idms", map[string]any{"imageDigestMirrors": []any{
			map[string]any{"source": "src.example/ns", "mirrors": []any{"m.example/ns"}, "mirrorSourcePolicy": "NeverContactSource"},
		}}),
		object("config.openshift.io/v1", KindITMS, "itms", map[string]any{"imageTagMirrors": []any{
			map[string]any{"source": "src.example/ns", "mirrors": []any{"t.example/ns"}},
		}}),
		object("operator.openshift.io/v1alpha1", KindICSP, "icsp", map[string]any{"repositoryDigestMirrors": []any{
			map[string]any{"source": "old.example", "mirrors": []any{"m.example/old"}, "mirrorSourcePolicy": "NeverContactSource"},
		}}),
		object("config.openshift.io/v1", "Image", "cluster", map[string]any{"registrySources": map[string]any{"insecureRegistries": []any{"m.example"}}}),
	}
	config := &metav1.APIResourceList{GroupVersion: "config.openshift.io/v1", APIResources: []metav1.APIResource{
		{Name: "imagedigestmirrorsets"}, {Name: "imagetagmirrorsets"}, {Name: "images"},
	}}
	operator := &metav1.APIResourceList{GroupVersion: "operator.openshift.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "imagecontentsourcepolicies"}}}
	for _, tc := range []struct {
		name      string
		served    []*metav1.APIResourceList
		want      []string
		notServed []string
		insecure  []string
	}{
		{"not OpenShift", nil, nil, []string{"imagedigestmirrorsets.config.openshift.io", "imagetagmirrorsets.config.openshift.io", "imagecontentsourcepolicies.operator.openshift.io"}, nil},
		{"no ICSP", []*metav1.APIResourceList{config}, []string{
			"ImageDigestMirrorSet/idms [{src.example/ns [m.example/ns] true}]",
			"ImageTagMirrorSet/itms [{src.example/ns [t.example/ns] false}]",
		}, []string{"imagecontentsourcepolicies.operator.openshift.io"}, []string{"m.example"}},
		{"every kind", []*metav1.APIResourceList{config, operator}, []string{
			"ImageContentSourcePolicy/icsp [{old.example [m.example/old] false}]",
			"ImageDigestMirrorSet/idms [{src.example/ns [m.example/ns] true}]",
			"ImageTagMirrorSet/itms [{src.example/ns [t.example/ns] false}]",
		}, nil, []string{"m.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: tc.served}}
			res := List(context.Background(), fakeCluster(&asked, objs...), disc)
			var got []string
			for _, o := range res.Sets.Objects {
				got = append(got, fmt.Sprintf("%s/%s %v", o.Kind, o.Name, o.Rules))
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(res.NotServed, tc.notServed) || !slices.Equal(res.Sets.Insecure, tc.insecure) || len(res.Warnings) > 0 {
				t.Errorf("objects %q\nnot served %q\ninsecure %q\nwarnings %q\nwant %q, %q, %q", got, res.NotServed, res.Sets.Insecure, res.Warnings, tc.want, tc.notServed, tc.insecure)
			}
			if len(tc.served) == 0 && len(asked) > 0 {
				t.Errorf("asked %q of a cluster that serves none of the kinds", asked)
			}
		})
	}
}

// TestListURL: an entry whose source or mirror is a URL is a warning
// naming the object and the entry, and its mirrors are left out; the other
// objects are read (before: the rendered registries.conf failed to load
// and scan --cluster wrote no report).
func TestListURL(t *testing.T) {
	config := &metav1.APIResourceList{GroupVersion: "config.openshift.io/v1", APIResources: []metav1.APIResource{{Name: "imagedigestmirrorsets"}}}
	operator := &metav1.APIResourceList{GroupVersion: "operator.openshift.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "imagecontentsourcepolicies"}}}
	good := object("config.openshift.io/v1", KindIDMS, "good", map[string]any{"imageDigestMirrors": []any{
		map[string]any{"source": "src.example/ns", "mirrors": []any{"m.example/ns"}},
	}})
	for _, tc := range []struct {
		name string
		bad  *unstructured.Unstructured
		want string
	}{
		{"an https:// mirror", object("config.openshift.io/v1", KindIDMS, "bad", map[string]any{"imageDigestMirrors": []any{
			map[string]any{"source": "src.example/app", "mirrors": []any{"https://m.example/app"}},
		}}), `ImageDigestMirrorSet bad: spec.imageDigestMirrors[0]: mirrors[0] "https://m.example/app" has a scheme`},
		{"an http:// source", object("operator.openshift.io/v1alpha1", KindICSP, "bad", map[string]any{"repositoryDigestMirrors": []any{
			map[string]any{"source": "http://src.example/app", "mirrors": []any{"m.example/app"}},
		}}), `ImageContentSourcePolicy bad: spec.repositoryDigestMirrors[0]: source "http://src.example/app" has a scheme`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{config, operator}}}
			res := List(context.Background(), fakeCluster(&asked, good, tc.bad), disc)
			if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], tc.want) {
				t.Fatalf("warnings %q; want one starting %q", res.Warnings, tc.want)
			}
			if len(res.Sets.Objects) != 1 || res.Sets.Objects[0].Name != "good" {
				t.Fatalf("objects %+v; want good alone", res.Sets.Objects)
			}
			if _, err := Render(res.Sets); err != nil {
				t.Fatal(err)
			}
		})
	}
}
