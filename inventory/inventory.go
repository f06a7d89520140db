package inventory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/regcheck/regcheck/imageref"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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

// Container fields as they appear in Container.Field. FieldImageVolumes
// is a pod spec's image volumes (volumes[].image, KEP-4639), which the
// kubelet pulls as it pulls a container's image.
const (
	FieldContainers          = "containers"
	FieldInitContainers      = "initContainers"
	FieldEphemeralContainers = "ephemeralContainers"
	FieldImageVolumes        = "imageVolumes"
)

// Container is one container of one workload: a pod's, or a pod template's
// when no pod of its owner runs that template's image for it (see List).
// An image volume of one is a Container too (Field FieldImageVolumes): the
// kubelet pulls it as it pulls a container's image.
type Container struct {
	// Top-level owner: Pod → ReplicaSet → Deployment; Pod → Job → CronJob;
	// StatefulSet; DaemonSet; a bare Pod is its own owner (OwnerKind "Pod").
	Namespace, OwnerKind, OwnerName string
	Pod                             string // empty for a template entry (no pod of the owner runs this image for this container)
	Container                       string // the container's name; for an image volume, the volume's
	Field                           string // containers | initContainers | ephemeralContainers | imageVolumes

	Image    string   // the spec's image string (an image volume's reference), as written
	ImageRef ImageRef // Image parsed: normalized repo, tag, pinned digest; zero when Image does not parse

	// ImageID is the raw status imageID; empty for templates and pods not
	// yet started. For an image volume it is the imageRef the first
	// container status mounting it gives
	// (status.containerStatuses[].volumeMounts[].volumeStatus.image.imageRef),
	// which API servers keep only with the ImageVolumeWithDigest feature
	// gate (alpha, off by default in Kubernetes 1.37): most often empty.
	ImageID string
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
	// PullPolicy is the effective policy: the spec's (an image volume's
	// pullPolicy), or Kubernetes' default for the image (see
	// DefaultPullPolicy, the same for image volumes) when the spec has none.
	PullPolicy string
	// State, Reason, StartedAt and RestartCount are the container status's;
	// an image volume has none.
	State        string // running | waiting | terminated | "" (no status)
	Reason       string // waiting/terminated reason, e.g. ImagePullBackOff, CrashLoopBackOff
	StartedAt    time.Time
	RestartCount int32

	ImagePullSecrets []string // pod spec's imagePullSecrets names
	ServiceAccount   string   // pod spec's serviceAccountName ("default" when unset)

	// Placement is the spec's nodeSelector and required node affinity:
	// which nodes, and so which platforms, the pod may run on (see
	// Inventory.Eligible).
	Placement Placement
}

// Template reports whether c comes from a pod template rather than a pod.
func (c Container) Template() bool { return c.Pod == "" }

// ImageVolume reports whether c is an image volume rather than a container.
func (c Container) ImageVolume() bool { return c.Field == FieldImageVolumes }

// Inventory is what List found.
type Inventory struct {
	// Containers are sorted by namespace, owner kind, owner name, pod, field
	// (init containers, containers, ephemeral containers, image volumes),
	// container.
	Containers []Container
	// NodeImages maps a "sha256:…" repo digest to the sorted names of the
	// nodes that hold it, from nodes[].status.images[].names.
	NodeImages map[string][]string
	// Nodes are the cluster's nodes with their platforms, sorted by name;
	// empty when listing them is forbidden.
	Nodes []Node
	// Warnings say what List could not read without failing: the nodes,
	// when listing them is forbidden.
	Warnings []string
}

// List lists the containers of every pod, plus the pod template containers
// that no pod runs as written, in namespace ("" for all namespaces), and the
// images each node holds. A pod's or template's image volumes are listed as
// its containers are, by the same rules (a template entry for a volume whose
// reference no pod of the owner has for that volume).
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
	w, err := listWorkloads(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	nodes, warnings, err := listNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	containers, ran := w.podEntries()
	containers = append(containers, templateEntries(w.templates(), ran)...)
	slices.SortStableFunc(containers, compareContainers)
	return &Inventory{Containers: containers, NodeImages: nodeImages(nodes), Nodes: newNodes(nodes), Warnings: warnings}, nil
}

// podEntries returns the containers of every pod, attributed to its
// top-level owner, and the spec images each owner's pods run.
func (w *workloads) podEntries() ([]Container, ranImages) {
	top := w.topOwners()
	ran := ranImages{}
	var out []Container
	for i := range w.pods {
		p := &w.pods[i]
		cs := podContainers(p, top(p))
		ran.add(cs)
		out = append(out, cs...)
	}
	return out, ran
}

// topOwners returns a func giving a pod's top-level owner by TopOwner's
// rule, from the ReplicaSets and Jobs already listed, never with a GET each.
func (w *workloads) topOwners() func(*corev1.Pod) owner {
	refs := map[ownerKey][]metav1.OwnerReference{}
	for _, rs := range w.replicaSets {
		refs[ownerKey{rs.Namespace, KindReplicaSet, rs.Name}] = rs.OwnerReferences
	}
	for _, j := range w.jobs {
		refs[ownerKey{j.Namespace, KindJob, j.Name}] = j.OwnerReferences
	}
	lookup := func(ns, kind, name string) ([]metav1.OwnerReference, bool) {
		r, ok := refs[ownerKey{ns, kind, name}]
		return r, ok
	}
	return func(p *corev1.Pod) owner { return topOwner(p, lookup) }
}

// ranImages holds the spec images each owner's pods run, per container
// field and name.
type ranImages map[ownerKey]map[slotKey][]string

func (r ranImages) add(cs []Container) {
	for _, c := range cs {
		key := ownerKey{c.Namespace, c.OwnerKind, c.OwnerName}
		imgs := r[key]
		if imgs == nil {
			imgs = map[slotKey][]string{}
			r[key] = imgs
		}
		k := slotKey{c.Field, c.Container}
		if !slices.Contains(imgs[k], c.Image) {
			imgs[k] = append(imgs[k], c.Image)
		}
	}
}

// template is the pod template of an owner that may get template entries.
type template struct {
	owner ownerKey
	spec  *corev1.PodSpec
}

// templates returns the pod templates of Deployments, StatefulSets,
// DaemonSets and CronJobs, of ReplicaSets without a Deployment and of
// unfinished Jobs without a CronJob.
func (w *workloads) templates() []template {
	var out []template
	add := func(m *metav1.ObjectMeta, kind string, t *corev1.PodTemplateSpec) {
		out = append(out, template{ownerKey{m.Namespace, kind, m.Name}, &t.Spec})
	}
	for i := range w.deployments {
		d := &w.deployments[i]
		add(&d.ObjectMeta, KindDeployment, &d.Spec.Template)
	}
	for i := range w.statefulSets {
		s := &w.statefulSets[i]
		add(&s.ObjectMeta, KindStatefulSet, &s.Spec.Template)
	}
	for i := range w.daemonSets {
		d := &w.daemonSets[i]
		add(&d.ObjectMeta, KindDaemonSet, &d.Spec.Template)
	}
	for i := range w.cronJobs {
		cj := &w.cronJobs[i]
		add(&cj.ObjectMeta, KindCronJob, &cj.Spec.JobTemplate.Spec.Template)
	}
	for i := range w.replicaSets {
		rs := &w.replicaSets[i]
		if !lifts(KindReplicaSet, controllerOf(rs.OwnerReferences).kind) {
			add(&rs.ObjectMeta, KindReplicaSet, &rs.Spec.Template)
		}
	}
	for i := range w.jobs {
		j := &w.jobs[i]
		if !lifts(KindJob, controllerOf(j.OwnerReferences).kind) && !jobFinished(j) {
			add(&j.ObjectMeta, KindJob, &j.Spec.Template)
		}
	}
	return out
}

// templateEntries returns each template's containers that no pod of its
// owner runs as written: all of them when the owner has no pod, else those
// whose image differs from every image its pods run for that container.
func templateEntries(ts []template, ran ranImages) []Container {
	var out []Container
	for _, t := range ts {
		cs := templateContainers(t.owner, t.spec)
		if imgs, ok := ran[t.owner]; ok {
			cs = slices.DeleteFunc(cs, func(c Container) bool {
				return slices.Contains(imgs[slotKey{c.Field, c.Container}], c.Image)
			})
		}
		out = append(out, cs...)
	}
	return out
}

// ownerKey is one owner in one namespace.
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

// podContainers returns one Container per container of pod p (init,
// regular, ephemeral) and per image volume, owned by o, with its status.
func podContainers(p *corev1.Pod, o owner) []Container {
	key := ownerKey{p.Namespace, o.kind, o.name}
	cs := templateContainers(key, &p.Spec)
	for i := range p.Spec.EphemeralContainers {
		k := &p.Spec.EphemeralContainers[i]
		cs = append(cs, specContainer(key, &p.Spec, FieldEphemeralContainers, k.Name, k.Image, k.ImagePullPolicy))
	}
	statuses := map[slotKey]*corev1.ContainerStatus{}
	for field, ss := range map[string][]corev1.ContainerStatus{
		FieldInitContainers:      p.Status.InitContainerStatuses,
		FieldContainers:          p.Status.ContainerStatuses,
		FieldEphemeralContainers: p.Status.EphemeralContainerStatuses,
	} {
		for i := range ss {
			statuses[slotKey{field, ss[i].Name}] = &ss[i]
		}
	}
	volumeIDs := volumeImageIDs(&p.Status)
	for i := range cs {
		c := &cs[i]
		c.Pod, c.Node = p.Name, p.Spec.NodeName
		if c.ImageVolume() {
			c.ImageID = volumeIDs[c.Container]
			c.RunningRepo, c.RunningDigest, c.ImageIDKind = parseImageID(c.ImageID)
		} else if st := statuses[slotKey{c.Field, c.Container}]; st != nil {
			setStatus(c, st)
		}
	}
	return cs
}

// volumeImageIDs returns, by volume name, the imageRef the pod's container
// statuses give for each image volume they mount (the first non-empty one,
// init containers first): the digest of the image the kubelet mounted.
func volumeImageIDs(st *corev1.PodStatus) map[string]string {
	ids := map[string]string{}
	for _, ss := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range ss {
			for _, m := range ss[i].VolumeMounts {
				if v := m.VolumeStatus; v != nil && v.Image != nil && v.Image.ImageRef != "" && ids[m.Name] == "" {
					ids[m.Name] = v.Image.ImageRef
				}
			}
		}
	}
	return ids
}

// templateContainers returns one Container per container of a pod
// template of owner o: init containers, then containers (a template has no
// ephemeral containers), then image volumes.
func templateContainers(o ownerKey, spec *corev1.PodSpec) []Container {
	var out []Container
	for i := range spec.InitContainers {
		k := &spec.InitContainers[i]
		out = append(out, specContainer(o, spec, FieldInitContainers, k.Name, k.Image, k.ImagePullPolicy))
	}
	for i := range spec.Containers {
		k := &spec.Containers[i]
		out = append(out, specContainer(o, spec, FieldContainers, k.Name, k.Image, k.ImagePullPolicy))
	}
	for i := range spec.Volumes {
		if v := &spec.Volumes[i]; v.Image != nil {
			out = append(out, specContainer(o, spec, FieldImageVolumes, v.Name, v.Image.Reference, v.Image.PullPolicy))
		}
	}
	return out
}

// specContainer is one container (or image volume) of spec as the spec
// says it, with the effective pull policy: Kubernetes defaults an image
// volume's pullPolicy by the rule it has for a container's imagePullPolicy
// (SetDefaults_Volume and SetDefaults_Container both read the tag with
// parsers.ParseImageName, which makes no tag and no digest "latest").
func specContainer(o ownerKey, spec *corev1.PodSpec, field, name, image string, policy corev1.PullPolicy) Container {
	ref, _ := imageref.Parse(image) // the zero ImageRef when it does not parse
	c := Container{
		Namespace: o.ns, OwnerKind: o.kind, OwnerName: o.name,
		Container: name, Field: field,
		Image: image, ImageRef: ref, PullPolicy: string(policy),
		ImagePullSecrets: pullSecrets(spec), ServiceAccount: serviceAccount(spec),
		Placement: placementOf(spec),
	}
	if c.PullPolicy == "" {
		c.PullPolicy = defaultPullPolicy(ref)
	}
	return c
}

// setStatus sets what a container status says: the image ID the runtime
// reports, and the state.
func setStatus(c *Container, st *corev1.ContainerStatus) {
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

var fieldOrder = map[string]int{FieldInitContainers: 0, FieldContainers: 1, FieldEphemeralContainers: 2, FieldImageVolumes: 3}

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
