package inventory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/internal/kubelist"
	"github.com/regcheck/regcheck/yamlfile"
)

// KindRollout is an Argo Rollout: its ReplicaSets' pods are attributed
// to it as a Deployment's are.
const KindRollout = "Rollout"

// KindScaledJob is a KEDA ScaledJob: its Jobs' pods are attributed to it
// as a CronJob's are.
const KindScaledJob = "ScaledJob"

// Workload is a custom resource kind whose objects say which images a
// node will pull.
type Workload struct {
	schema.GroupVersionResource
	Kind string
	// PodSpec is where an object keeps its pod spec (read as a
	// corev1.PodSpec, with its pull secrets and placement); nil when its
	// images are in fields of its own (Tekton steps), read as package
	// yamlfile reads them in a file.
	PodSpec []string
}

// Workloads are the custom resource kinds Custom reads.
var Workloads = []Workload{
	{gvr("argoproj.io", "v1alpha1", "rollouts"), KindRollout, []string{"spec", "template", "spec"}},
	{gvr("serving.knative.dev", "v1", "services"), "Service", []string{"spec", "template", "spec"}},
	{gvr("keda.sh", "v1alpha1", "scaledjobs"), KindScaledJob, []string{"spec", "jobTargetRef", "template", "spec"}},
	{gvr("apps.kruise.io", "v1alpha1", "clonesets"), "CloneSet", []string{"spec", "template", "spec"}},
	{gvr("tekton.dev", "v1", "tasks"), "Task", nil},
	{gvr("tekton.dev", "v1", "pipelines"), "Pipeline", nil},
	{gvr("argoproj.io", "v1alpha1", "workflowtemplates"), "WorkflowTemplate", nil},
	{gvr("argoproj.io", "v1alpha1", "cronworkflows"), "CronWorkflow", nil},
	{gvr("postgresql.cnpg.io", "v1", "clusters"), "Cluster", nil},
	{gvr("monitoring.coreos.com", "v1", "prometheuses"), "Prometheus", nil},
	{gvr("monitoring.coreos.com", "v1", "alertmanagers"), "Alertmanager", nil},
}

func gvr(g, v, r string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
}

// CustomResult is what Custom read.
type CustomResult struct {
	// Templates are one template entry per image of every object (Pod
	// empty, OwnerKind the object's kind).
	Templates []Container
	// NotServed are the resources the API server does not serve (their
	// CRD is not installed): skipped.
	NotServed []string
	// Warnings say what could not be read (forbidden, or another error):
	// the run goes on without it.
	Warnings []string
}

// Custom lists the objects of each kind in Workloads that discovery says
// the server serves, in namespace ("" for all), through the dynamic
// client. A kind not served is skipped without a request (its CRD is not
// installed: a ServiceAccount without RBAC on it would only get 403s), one
// that cannot be listed is a warning; neither stops the others. With disc
// nil every kind is listed and a 404 tells which are not served.
func Custom(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface, namespace string) *CustomResult {
	res := &CustomResult{}
	served := kubelist.Served(disc)
	for _, w := range Workloads {
		if !served(w.GroupVersionResource) {
			res.NotServed = append(res.NotServed, w.Resource+"."+w.Group)
			continue
		}
		items, err := kubelist.All(ctx, dyn.Resource(w.GroupVersionResource).Namespace(namespace))
		switch {
		case apierrors.IsNotFound(err):
			res.NotServed = append(res.NotServed, w.Resource+"."+w.Group)
			continue
		case apierrors.IsForbidden(err):
			res.Warnings = append(res.Warnings, fmt.Sprintf("listing %s.%s is forbidden: its images are not covered", w.Resource, w.Group))
			continue
		case err != nil:
			res.Warnings = append(res.Warnings, fmt.Sprintf("listing %s.%s: %v: its images are not covered", w.Resource, w.Group, err))
			continue
		}
		for i := range items {
			cs, err := w.containers(&items[i])
			if err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s %s/%s: %v", w.Kind, items[i].GetNamespace(), items[i].GetName(), err))
			}
			res.Templates = append(res.Templates, cs...)
		}
	}
	return res
}

// containers are the template entries of one object.
func (w Workload) containers(u *unstructured.Unstructured) ([]Container, error) {
	key := ownerKey{u.GetNamespace(), w.Kind, u.GetName()}
	if w.PodSpec != nil {
		m, found, err := unstructured.NestedMap(u.Object, w.PodSpec...)
		if err != nil || !found {
			return nil, err
		}
		var spec corev1.PodSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
			return nil, fmt.Errorf("reading its pod spec: %w", err)
		}
		return templateContainers(key, &spec), nil
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	imgs, err := yamlfile.Parse(w.Kind, data)
	if err != nil {
		return nil, err
	}
	var out []Container
	for _, img := range imgs {
		ref, _ := imageref.Parse(img.Ref)
		c := Container{
			Namespace: key.ns, OwnerKind: key.kind, OwnerName: key.name,
			Container: img.Container, Field: img.Field,
			Image: img.Ref, ImageRef: ref, PullPolicy: img.PullPolicy, ServiceAccount: "default",
		}
		if c.PullPolicy == "" {
			c.PullPolicy = defaultPullPolicy(ref)
		}
		out = append(out, c)
	}
	return out, nil
}

// AddTemplates adds template entries (Custom's) to inv, leaving out those
// whose image its owner's pods already run for that container, as List
// does for a Deployment's, and keeps inv.Containers in List's order.
func (inv *Inventory) AddTemplates(ts []Container) {
	ran := ranImages{}
	var pods []Container
	for _, c := range inv.Containers {
		if !c.Template() {
			pods = append(pods, c)
		}
	}
	ran.add(pods)
	for _, t := range ts {
		imgs := ran[ownerKey{t.Namespace, t.OwnerKind, t.OwnerName}]
		if !slices.Contains(imgs[slotKey{t.Field, t.Container}], t.Image) {
			inv.Containers = append(inv.Containers, t)
		}
	}
	slices.SortStableFunc(inv.Containers, compareContainers)
}
