package mirrorsets

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/regcheck/regcheck/internal/kubelist"
)

// resource is one kind the MCO renders from, and where its rules are.
type resource struct {
	kind  string
	gvr   schema.GroupVersionResource
	field string // the spec list of rules
}

// resources are the mirror set kinds the MCO reads.
var resources = []resource{
	{KindIDMS, schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "imagedigestmirrorsets"}, "imageDigestMirrors"},
	{KindITMS, schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "imagetagmirrorsets"}, "imageTagMirrors"},
	{KindICSP, schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1alpha1", Resource: "imagecontentsourcepolicies"}, "repositoryDigestMirrors"},
}

// imageConfig is images.config.openshift.io, whose object "cluster" holds
// the insecure registries the MCO marks.
var imageConfig = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "images"}

// Result is what List read.
type Result struct {
	Sets Sets
	// NotServed are the resources the API server does not serve: no
	// mirrors from them.
	NotServed []string
	// Warnings say what could not be read: the walk goes on without it.
	Warnings []string
}

// List reads the cluster's mirror sets. Discovery first: a kind the server
// does not serve (not OpenShift, or an older one without IDMS) is not
// listed, so a ServiceAccount without RBAC on it gets no 403; it is in
// NotServed. A list that fails is a warning.
func List(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface) *Result {
	res := &Result{}
	served := kubelist.Served(disc)
	for _, r := range resources {
		if !served(r.gvr) {
			res.NotServed = append(res.NotServed, r.gvr.Resource+"."+r.gvr.Group)
			continue
		}
		objs, err := kubelist.All(ctx, dyn.Resource(r.gvr))
		if err != nil {
			res.warn(r.gvr, err)
			continue
		}
		for i := range objs {
			o, err := objectOf(r, &objs[i])
			if err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s %s: %v: its mirrors are not used", r.kind, objs[i].GetName(), err))
				continue
			}
			res.Sets.Objects = append(res.Sets.Objects, o)
		}
	}
	if served(imageConfig) {
		res.Sets.Insecure = res.insecure(ctx, dyn)
	}
	sort.SliceStable(res.Sets.Objects, func(i, j int) bool { return res.Sets.Objects[i].Name < res.Sets.Objects[j].Name })
	return res
}

func (res *Result) warn(gvr schema.GroupVersionResource, err error) {
	switch {
	case apierrors.IsNotFound(err):
		res.NotServed = append(res.NotServed, gvr.Resource+"."+gvr.Group)
	case apierrors.IsForbidden(err):
		res.Warnings = append(res.Warnings, fmt.Sprintf("listing %s.%s is forbidden: the nodes' mirrors from it are not used", gvr.Resource, gvr.Group))
	default:
		res.Warnings = append(res.Warnings, fmt.Sprintf("listing %s.%s: %v: the nodes' mirrors from it are not used", gvr.Resource, gvr.Group, err))
	}
}

// insecure reads images.config.openshift.io/cluster's insecure registries;
// no such object is none.
func (res *Result) insecure(ctx context.Context, dyn dynamic.Interface) []string {
	u, err := dyn.Resource(imageConfig).Get(ctx, "cluster", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		res.warn(imageConfig, err)
		return nil
	}
	scopes, _, err := unstructured.NestedStringSlice(u.Object, "spec", "registrySources", "insecureRegistries")
	if err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("images.config.openshift.io cluster: %v: its insecure registries are not used", err))
	}
	return scopes
}

// check refuses a source or mirror that is a URL, not a host and path:
// the MCO would write it as a registries.conf location CRI-O refuses, and
// the nodes would pull through none of the mirror sets.
func (r Rule) check() error {
	if strings.Contains(r.Source, "://") {
		return fmt.Errorf("source %q has a scheme: a mirror set names a host and a path, never a URL", r.Source)
	}
	for i, m := range r.Mirrors {
		if strings.Contains(m, "://") {
			return fmt.Errorf("mirrors[%d] %q has a scheme: a mirror set names a host and a path, never a URL", i, m)
		}
	}
	return nil
}

// objectOf reads one object's rules.
func objectOf(r resource, u *unstructured.Unstructured) (Object, error) {
	o := Object{Kind: r.kind, Name: u.GetName()}
	items, _, err := unstructured.NestedSlice(u.Object, "spec", r.field)
	if err != nil {
		return o, err
	}
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return o, fmt.Errorf("spec.%s[%d] is not an object", r.field, i)
		}
		var rule Rule
		rule.Source, _, err = unstructured.NestedString(m, "source")
		if err != nil {
			return o, fmt.Errorf("spec.%s[%d]: %w", r.field, i, err)
		}
		if rule.Mirrors, _, err = unstructured.NestedStringSlice(m, "mirrors"); err != nil {
			return o, fmt.Errorf("spec.%s[%d]: %w", r.field, i, err)
		}
		if err := rule.check(); err != nil {
			return o, fmt.Errorf("spec.%s[%d]: %w", r.field, i, err)
		}
		policy, _, _ := unstructured.NestedString(m, "mirrorSourcePolicy")
		rule.NeverContactSource = r.kind != KindICSP && policy == "NeverContactSource"
		o.Rules = append(o.Rules, rule)
	}
	return o, nil
}
