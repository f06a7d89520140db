package inventory

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OwnerRefs gives the ownerReferences of a ReplicaSet or a Job (kind
// KindReplicaSet or KindJob) in namespace, from what a caller already holds
// (an informer's cache), and false when it holds no such object.
type OwnerRefs func(namespace, kind, name string) ([]metav1.OwnerReference, bool)

// liftedBy names, for each kind of controller a workload makes to run its
// pods, the workload kinds such a controller's pods are attributed to: a
// Deployment's or an Argo Rollout's ReplicaSet, a CronJob's or a KEDA
// ScaledJob's Job. It is the one owner rule of every path (List, the
// watcher, record, scan, pin): a pod's history and findings are its
// workload's, not a revision's.
var liftedBy = map[string][]string{
	KindReplicaSet: {KindDeployment, KindRollout},
	KindJob:        {KindCronJob, KindScaledJob},
}

// lifts reports whether a controller of kind mid owned by a controller of
// kind up hands its pods to up.
func lifts(mid, up string) bool { return slices.Contains(liftedBy[mid], up) }

// TopOwner returns the top-level owner of p as List attributes it: its
// controller (p itself, kind KindPod, when it has none), and that
// controller's own controller when it is a ReplicaSet or Job that refs
// knows and a workload of liftedBy controls (Deployment or Rollout,
// CronJob or ScaledJob).
func TopOwner(p *corev1.Pod, refs OwnerRefs) (kind, name string) {
	o := topOwner(p, refs)
	return o.kind, o.name
}

func topOwner(p *corev1.Pod, refs OwnerRefs) owner {
	o := controllerOf(p.OwnerReferences)
	if o.kind == "" {
		return owner{KindPod, p.Name}
	}
	if _, ok := liftedBy[o.kind]; !ok {
		return o
	}
	if up, ok := refs(p.Namespace, o.kind, o.name); ok {
		if u := controllerOf(up); lifts(o.kind, u.kind) {
			return u
		}
	}
	return o
}

// PodContainers returns one Container per container of p (init, regular,
// ephemeral) and per image volume, with its status, attributed to the owner
// given (TopOwner's), exactly as List lists a pod's, in List's order.
func PodContainers(p *corev1.Pod, ownerKind, ownerName string) []Container {
	cs := podContainers(p, owner{ownerKind, ownerName})
	slices.SortStableFunc(cs, compareContainers)
	return cs
}

// TemplateContainers returns the containers of a pod template (init
// containers, containers, image volumes) of the owner given, as List's
// template entries are made: no pod, no status.
func TemplateContainers(namespace, ownerKind, ownerName string, spec *corev1.PodSpec) []Container {
	return templateContainers(ownerKey{namespace, ownerKind, ownerName}, spec)
}

// Objects are what List reads, already in hand (from informer caches).
// Pods are pointers: an informer's cached objects, read, never copied or
// changed.
type Objects struct {
	Pods         []*corev1.Pod
	Deployments  []appsv1.Deployment
	ReplicaSets  []appsv1.ReplicaSet
	StatefulSets []appsv1.StatefulSet
	DaemonSets   []appsv1.DaemonSet
	Jobs         []batchv1.Job
	CronJobs     []batchv1.CronJob
	Nodes        []corev1.Node
}

// FromObjects makes the inventory List would make from these objects: the
// pods' containers, the template entries no pod runs as written, and the
// nodes with their image caches.
func FromObjects(o Objects) *Inventory {
	w := &workloads{deployments: o.Deployments, replicaSets: o.ReplicaSets,
		statefulSets: o.StatefulSets, daemonSets: o.DaemonSets, jobs: o.Jobs, cronJobs: o.CronJobs}
	top := w.topOwners()
	ran := ranImages{}
	n := 0
	for _, p := range o.Pods {
		n += len(p.Spec.InitContainers) + len(p.Spec.Containers) + len(p.Spec.EphemeralContainers)
	}
	// One allocation of about the right size: a watcher makes this
	// inventory of every pod at each walk.
	containers := make([]Container, 0, n)
	for _, p := range o.Pods {
		cs := podContainers(p, top(p))
		ran.add(cs)
		containers = append(containers, cs...)
	}
	containers = append(containers, templateEntries(w.templates(), ran)...)
	slices.SortStableFunc(containers, compareContainers)
	return &Inventory{Containers: containers, NodeImages: nodeImages(o.Nodes), Nodes: newNodes(o.Nodes)}
}

// Lifted reports whether a kind (ReplicaSet, Job) controlled as refs say
// is lifted to its controller, whose own template then covers it: a
// ReplicaSet of a Deployment or Rollout, a Job of a CronJob or ScaledJob.
// Its pod template is read by no one (the watcher drops it).
func Lifted(kind string, refs []metav1.OwnerReference) bool {
	return lifts(kind, controllerOf(refs).kind)
}
