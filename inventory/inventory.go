package inventory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Owner kinds as they appear in Container.OwnerKind. A pod with no controller
// is its own owner (OwnerKind "Pod"); a controller kind regcheck does not know
// (an operator's custom resource, a ReplicationController, a Node for static
// pods) appears as written in the pod's ownerReference.
const (
	KindPod         = "Pod"
	KindDeployment  = "Deployment"
	KindReplicaSet  = "ReplicaSet"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindJob         = "Job"
	KindCronJob     = "CronJob"
)

// Container fields as they appear in Container.Field.
const (
	FieldContainers          = "containers"
	FieldInitContainers      = "initContainers"
	FieldEphemeralContainers = "ephemeralContainers"
)

// Container is one container of one workload: a pod's, or a pod template's
// when no pod of its owner runs that template's image for it (see List).
type Container struct {
	// Top-level owner: Pod → ReplicaSet → Deployment; Pod → Job → CronJob;
	// StatefulSet; DaemonSet; a bare Pod is its own owner (OwnerKind "Pod").
	Namespace, OwnerKind, OwnerName string
	Pod                             string // empty for a template entry (no pod of the owner runs this image for this container)
	Container                       string
	Field                           string // containers | initContainers | ephemeralContainers

	Image    string   // the spec's image string, as written
	ImageRef ImageRef // Image parsed: normalized repo, tag, pinned digest

	ImageID string // raw status imageID; empty for templates and pods not yet started
	// ImageIDKind says what ImageID holds: ImageIDRepoDigest for
	// "repo@sha256:…" (with or without a "docker-pullable://" prefix), the
	// only kind that sets RunningRepo and RunningDigest; ImageIDConfig for a
	// local image ID, "docker://sha256:…" or a bare "sha256:…", which no
	// registry serves (nothing can be pulled or verified by it); ImageIDNone
	// when ImageID is empty (templates, containers not started);
	// ImageIDUnknown for anything else.
	ImageIDKind   ImageIDKind
	RunningRepo   string // normalized repository from ImageID; empty unless ImageIDKind is ImageIDRepoDigest
	RunningDigest string // "sha256:…" from ImageID; empty unless ImageIDKind is ImageIDRepoDigest

	Node string // spec.nodeName; empty for templates and unscheduled pods
	// PullPolicy is the effective policy: the spec's, or Kubernetes' default
	// for the image (see DefaultPullPolicy) when the spec has none.
	PullPolicy   string
	State        string // running | waiting | terminated | "" (no status)
	Reason       string // waiting/terminated reason, e.g. ImagePullBackOff, CrashLoopBackOff
	StartedAt    time.Time
	RestartCount int32

	ImagePullSecrets []string // pod spec's imagePullSecrets names
	ServiceAccount   string   // pod spec's serviceAccountName ("default" when unset)
}

// Template reports whether c comes from a pod template rather than a pod.
func (c Container) Template() bool { return c.Pod == "" }

// Inventory is what List found.
type Inventory struct {
	// Containers are sorted by namespace, owner kind, owner name, pod, field, container.
	Containers []Container
	// NodeImages maps a "sha256:…" repo digest to the sorted names of the
	// nodes that hold it, from nodes[].status.images[].names.
	NodeImages map[string][]string
	// Warnings say what List could not read without failing: the nodes,
	// when listing them is forbidden.
	Warnings []string
}

// pageSize is the Limit of every list call; List follows continue tokens.
const pageSize = 500

// List lists the containers of every pod, plus the pod template containers
// that no pod runs as written, in namespace ("" for all namespaces), and the
// images each node holds.
//
// Counting rule: a pod's containers are listed once per pod, attributed to
// the pod's top-level owner. Template entries (Pod empty) come from the pod
// templates of Deployments, StatefulSets, DaemonSets and CronJobs, of
// ReplicaSets without a Deployment and of unfinished Jobs without a CronJob:
//
//   - an owner with no pod at all gets one template entry per container of
//     its template (containers and initContainers);
//   - an owner with pods gets a template entry for each template container
//     whose image differs from every image its pods run for that container
//     (same field and name, spec image strings compared as written): the
//     image the next pod will pull while the pods still run an older one
//     (a CronJob whose jobTemplate changed while completed Job pods are kept,
//     an OnDelete or partitioned DaemonSet or StatefulSet, a paused or
//     unfinished Deployment rollout), or a container the pods do not have.
//
// ReplicaSets owned by a Deployment and Jobs owned by a CronJob never get
// their own template entry: their owner's template covers them. A finished
// Job (Complete or Failed) gets none, since it will not run again.
//
// List needs get/list on pods, nodes, deployments, statefulsets, daemonsets,
// replicasets, jobs and cronjobs. An API error is returned wrapped with what
// was being listed; apierrors.IsForbidden and friends still see it. Nodes
// are the exception: when listing them is forbidden, List goes on without
// node caches and says so in Inventory.Warnings.
func List(ctx context.Context, c kubernetes.Interface, namespace string) (*Inventory, error) {
	l := lister{ctx: ctx, ns: namespace}
	pods, err := listAll(l, "pods", func(o metav1.ListOptions) ([]corev1.Pod, string, error) {
		r, err := c.CoreV1().Pods(namespace).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	deps, err := listAll(l, "deployments.apps", func(o metav1.ListOptions) ([]appsv1.Deployment, string, error) {
		r, err := c.AppsV1().Deployments(namespace).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	rss, err := listAll(l, "replicasets.apps", func(o metav1.ListOptions) ([]appsv1.ReplicaSet, string, error) {
		r, err := c.AppsV1().ReplicaSets(namespace).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	sts, err := listAll(l, "statefulsets.apps", func(o metav1.ListOptions) ([]appsv1.StatefulSet, string, error) {
		r, err := c.AppsV1().StatefulSets(namespace).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	dss, err := listAll(l, "daemonsets.apps", func(o metav1.ListOptions) ([]appsv1.DaemonSet, string, error) {
		r, err := c.AppsV1().DaemonSets(namespace).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	jobs, err := listAll(l, "jobs.batch", func(o metav1.ListOptions) ([]batchv1.Job, string, error) {
		r, err := c.BatchV1().Jobs(namespace).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	cjs, err := listAll(l, "cronjobs.batch", func(o metav1.ListOptions) ([]batchv1.CronJob, string, error) {
		r, err := c.BatchV1().CronJobs(namespace).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	if err != nil {
		return nil, err
	}
	nodes, err := listAll(lister{ctx: ctx, clusterScoped: true}, "nodes", func(o metav1.ListOptions) ([]corev1.Node, string, error) {
		r, err := c.CoreV1().Nodes().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return r.Items, r.Continue, nil
	})
	var warnings []string
	if apierrors.IsForbidden(err) {
		// Node caches are a detail of the report; a user with namespace
		// rights only still gets everything else.
		warnings = append(warnings, fmt.Sprintf("node image caches unknown: %v", err))
		nodes, err = nil, nil
	}
	if err != nil {
		return nil, err
	}

	inv := &Inventory{NodeImages: nodeImages(nodes), Warnings: warnings}

	// Intermediate owners, by namespace/name, from the lists above.
	rsOwner := map[objKey]owner{}
	for _, rs := range rss {
		rsOwner[objKey{rs.Namespace, rs.Name}] = controllerOf(rs.OwnerReferences)
	}
	jobOwner := map[objKey]owner{}
	for _, j := range jobs {
		jobOwner[objKey{j.Namespace, j.Name}] = controllerOf(j.OwnerReferences)
	}
	resolve := func(ns string, o owner) owner {
		switch o.kind {
		case KindReplicaSet:
			if up, ok := rsOwner[objKey{ns, o.name}]; ok && up.kind == KindDeployment {
				return up
			}
		case KindJob:
			if up, ok := jobOwner[objKey{ns, o.name}]; ok && up.kind == KindCronJob {
				return up
			}
		}
		return o
	}

	// The spec images each owner's pods run, per container field and name.
	podImages := map[ownerKey]map[slotKey][]string{}
	for i := range pods {
		p := &pods[i]
		o := controllerOf(p.OwnerReferences)
		if o.kind == "" {
			o = owner{KindPod, p.Name}
		}
		o = resolve(p.Namespace, o)
		cs := podContainers(p, o)
		ok := ownerKey{p.Namespace, o.kind, o.name}
		imgs := podImages[ok]
		if imgs == nil {
			imgs = map[slotKey][]string{}
			podImages[ok] = imgs
		}
		for _, c := range cs {
			k := slotKey{c.Field, c.Container}
			if !slices.Contains(imgs[k], c.Image) {
				imgs[k] = append(imgs[k], c.Image)
			}
		}
		inv.Containers = append(inv.Containers, cs...)
	}

	// tmpl adds o's template containers that no pod of o runs as written:
	// all of them when o has no pod, else those whose image differs from
	// every image its pods run for that container.
	tmpl := func(ns string, o owner, t *corev1.PodTemplateSpec) {
		cs := templateContainers(ns, o, &t.Spec)
		if imgs, ok := podImages[ownerKey{ns, o.kind, o.name}]; ok {
			cs = slices.DeleteFunc(cs, func(c Container) bool {
				return slices.Contains(imgs[slotKey{c.Field, c.Container}], c.Image)
			})
		}
		inv.Containers = append(inv.Containers, cs...)
	}
	for i := range deps {
		d := &deps[i]
		tmpl(d.Namespace, owner{KindDeployment, d.Name}, &d.Spec.Template)
	}
	for i := range sts {
		s := &sts[i]
		tmpl(s.Namespace, owner{KindStatefulSet, s.Name}, &s.Spec.Template)
	}
	for i := range dss {
		d := &dss[i]
		tmpl(d.Namespace, owner{KindDaemonSet, d.Name}, &d.Spec.Template)
	}
	for i := range cjs {
		cj := &cjs[i]
		tmpl(cj.Namespace, owner{KindCronJob, cj.Name}, &cj.Spec.JobTemplate.Spec.Template)
	}
	for i := range rss {
		rs := &rss[i]
		if controllerOf(rs.OwnerReferences).kind == KindDeployment {
			continue
		}
		tmpl(rs.Namespace, owner{KindReplicaSet, rs.Name}, &rs.Spec.Template)
	}
	for i := range jobs {
		j := &jobs[i]
		if controllerOf(j.OwnerReferences).kind == KindCronJob || jobFinished(j) {
			continue
		}
		tmpl(j.Namespace, owner{KindJob, j.Name}, &j.Spec.Template)
	}

	slices.SortStableFunc(inv.Containers, compareContainers)
	return inv, nil
}

type objKey struct{ ns, name string }

type ownerKey struct{ ns, kind, name string }

// slotKey is one container of a pod spec: its field and name.
type slotKey struct{ field, name string }

type owner struct{ kind, name string }

// controllerOf returns the controller ownerReference, or the first one when
// none is marked controller.
func controllerOf(refs []metav1.OwnerReference) owner {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return owner{r.Kind, r.Name}
		}
	}
	if len(refs) > 0 {
		return owner{refs[0].Kind, refs[0].Name}
	}
	return owner{}
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func podContainers(p *corev1.Pod, o owner) []Container {
	statuses := func(ss []corev1.ContainerStatus) map[string]*corev1.ContainerStatus {
		m := make(map[string]*corev1.ContainerStatus, len(ss))
		for i := range ss {
			m[ss[i].Name] = &ss[i]
		}
		return m
	}
	base := Container{
		Namespace:        p.Namespace,
		OwnerKind:        o.kind,
		OwnerName:        o.name,
		Pod:              p.Name,
		Node:             p.Spec.NodeName,
		ImagePullSecrets: pullSecrets(&p.Spec),
		ServiceAccount:   serviceAccount(&p.Spec),
	}
	var out []Container
	add := func(field string, name, image string, policy corev1.PullPolicy, st *corev1.ContainerStatus) {
		c := base
		c.ImagePullSecrets = slices.Clone(base.ImagePullSecrets)
		c.Field, c.Container = field, name
		setImage(&c, image, policy)
		if st != nil {
			c.ImageID = st.ImageID
			c.RunningRepo, c.RunningDigest, c.ImageIDKind = parseImageID(st.ImageID)
			c.RestartCount = st.RestartCount
			switch s := st.State; {
			case s.Running != nil:
				c.State, c.StartedAt = "running", s.Running.StartedAt.UTC()
			case s.Terminated != nil:
				c.State, c.Reason, c.StartedAt = "terminated", s.Terminated.Reason, s.Terminated.StartedAt.UTC()
			case s.Waiting != nil:
				c.State, c.Reason = "waiting", s.Waiting.Reason
			}
		}
		out = append(out, c)
	}
	st := statuses(p.Status.InitContainerStatuses)
	for _, k := range p.Spec.InitContainers {
		add(FieldInitContainers, k.Name, k.Image, k.ImagePullPolicy, st[k.Name])
	}
	st = statuses(p.Status.ContainerStatuses)
	for _, k := range p.Spec.Containers {
		add(FieldContainers, k.Name, k.Image, k.ImagePullPolicy, st[k.Name])
	}
	st = statuses(p.Status.EphemeralContainerStatuses)
	for _, k := range p.Spec.EphemeralContainers {
		add(FieldEphemeralContainers, k.Name, k.Image, k.ImagePullPolicy, st[k.Name])
	}
	return out
}

func templateContainers(ns string, o owner, spec *corev1.PodSpec) []Container {
	base := Container{
		Namespace:        ns,
		OwnerKind:        o.kind,
		OwnerName:        o.name,
		ImagePullSecrets: pullSecrets(spec),
		ServiceAccount:   serviceAccount(spec),
	}
	var out []Container
	add := func(field string, k *corev1.Container) {
		c := base
		c.ImagePullSecrets = slices.Clone(base.ImagePullSecrets)
		c.Field, c.Container = field, k.Name
		setImage(&c, k.Image, k.ImagePullPolicy)
		out = append(out, c)
	}
	for i := range spec.InitContainers {
		add(FieldInitContainers, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		add(FieldContainers, &spec.Containers[i])
	}
	return out
}

func setImage(c *Container, image string, policy corev1.PullPolicy) {
	c.Image = image
	c.ImageRef = ParseImage(image)
	c.PullPolicy = string(policy)
	if c.PullPolicy == "" {
		c.PullPolicy = DefaultPullPolicy(image)
	}
}

func pullSecrets(spec *corev1.PodSpec) []string {
	var s []string
	for _, r := range spec.ImagePullSecrets {
		s = append(s, r.Name)
	}
	return s
}

func serviceAccount(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName
	}
	if spec.DeprecatedServiceAccount != "" {
		return spec.DeprecatedServiceAccount
	}
	return "default"
}

func nodeImages(nodes []corev1.Node) map[string][]string {
	m := map[string][]string{}
	for _, n := range nodes {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				_, d, kind := parseImageID(name)
				if kind != ImageIDRepoDigest {
					continue
				}
				if !slices.Contains(m[d], n.Name) {
					m[d] = append(m[d], n.Name)
				}
			}
		}
	}
	for _, v := range m {
		slices.Sort(v)
	}
	return m
}

var fieldOrder = map[string]int{FieldInitContainers: 0, FieldContainers: 1, FieldEphemeralContainers: 2}

func compareContainers(a, b Container) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.OwnerKind, b.OwnerKind); c != 0 {
		return c
	}
	if c := strings.Compare(a.OwnerName, b.OwnerName); c != 0 {
		return c
	}
	if c := strings.Compare(a.Pod, b.Pod); c != 0 {
		return c
	}
	if c := fieldOrder[a.Field] - fieldOrder[b.Field]; c != 0 {
		return c
	}
	return strings.Compare(a.Container, b.Container)
}

// lister carries what error messages need to say where a list ran.
type lister struct {
	ctx           context.Context
	ns            string
	clusterScoped bool
}

func (l lister) where() string {
	switch {
	case l.clusterScoped:
		return ""
	case l.ns == "":
		return " in all namespaces"
	default:
		return fmt.Sprintf(" in namespace %q", l.ns)
	}
}

// listAll follows continue tokens until the list is complete.
func listAll[T any](l lister, resource string, page func(metav1.ListOptions) ([]T, string, error)) ([]T, error) {
	var all []T
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		if err := l.ctx.Err(); err != nil {
			return nil, fmt.Errorf("listing %s%s: %w", resource, l.where(), err)
		}
		items, cont, err := page(opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s%s: %w", resource, l.where(), err)
		}
		all = append(all, items...)
		if cont == "" {
			return all, nil
		}
		opts.Continue = cont
	}
}
