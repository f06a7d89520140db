package watch

import (
	"time"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/regcheck/regcheck/inventory"
)

// caches are the informers of the kinds inventory reads, and their listers:
// everything the watcher knows of the cluster comes from them, never from
// a GET per pod.
type caches struct {
	factory      informers.SharedInformerFactory
	pods         corelisters.PodLister
	deployments  appslisters.DeploymentLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
	daemonSets   appslisters.DaemonSetLister
	jobs         batchlisters.JobLister
	cronJobs     batchlisters.CronJobLister
	informers    map[string]cache.SharedIndexInformer // by resource, for the events metric
	// nodes are cached apart (inventory.SlimNode): the watcher is ready
	// without them, and a walk without them knows no node's image cache,
	// as when listing nodes is forbidden.
	nodeFactory informers.SharedInformerFactory
	nodes       corelisters.NodeLister
	nodeSynced  cache.InformerSynced
}

// newCaches makes the informers over namespace ("" for all), each object
// stripped to what the inventory reads before it is cached (slim).
func newCaches(c kubernetes.Interface, namespace string, resync time.Duration) *caches {
	f := informers.NewSharedInformerFactoryWithOptions(c, resync,
		informers.WithNamespace(namespace), informers.WithTransform(slim))
	core, apps, batch := f.Core().V1(), f.Apps().V1(), f.Batch().V1()
	k := &caches{factory: f,
		pods: core.Pods().Lister(), deployments: apps.Deployments().Lister(), replicaSets: apps.ReplicaSets().Lister(),
		statefulSets: apps.StatefulSets().Lister(), daemonSets: apps.DaemonSets().Lister(),
		jobs: batch.Jobs().Lister(), cronJobs: batch.CronJobs().Lister()}
	k.informers = map[string]cache.SharedIndexInformer{
		"pods": core.Pods().Informer(), "deployments": apps.Deployments().Informer(), "replicasets": apps.ReplicaSets().Informer(),
		"statefulsets": apps.StatefulSets().Informer(), "daemonsets": apps.DaemonSets().Informer(),
		"jobs": batch.Jobs().Informer(), "cronjobs": batch.CronJobs().Informer(),
	}
	k.nodeFactory = informers.NewSharedInformerFactoryWithOptions(c, resync, informers.WithTransform(slimNode))
	nodes := k.nodeFactory.Core().V1().Nodes()
	k.nodes, k.nodeSynced = nodes.Lister(), nodes.Informer().HasSynced
	return k
}

// nodeInformer is the node informer, for its error handler.
func (k *caches) nodeInformer() cache.SharedIndexInformer {
	return k.nodeFactory.Core().V1().Nodes().Informer()
}

// nodeList is the nodes cached, as values; ok is false until the node
// informer has synced.
func (k *caches) nodeList() (nodes []corev1.Node, ok bool) {
	if !k.nodeSynced() {
		return nil, false
	}
	return copied(k.nodes.List(labels.Everything())), true
}

func slimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		inventory.SlimNode(n)
	}
	return obj, nil
}

// ownerRefs looks a ReplicaSet's or Job's ownerReferences up in the caches.
func (k *caches) ownerRefs(namespace, kind, name string) ([]metav1.OwnerReference, bool) {
	switch kind {
	case inventory.KindReplicaSet:
		if rs, err := k.replicaSets.ReplicaSets(namespace).Get(name); err == nil {
			return rs.OwnerReferences, true
		}
	case inventory.KindJob:
		if j, err := k.jobs.Jobs(namespace).Get(name); err == nil {
			return j.OwnerReferences, true
		}
	}
	return nil, false
}

// ownerKnown reports whether the caches hold p's controller when it is a
// ReplicaSet or a Job, the kinds whose own owner decides p's top-level
// owner. A pod can arrive before its ReplicaSet: its owner is not known yet.
func (k *caches) ownerKnown(p *corev1.Pod) bool {
	for _, r := range p.OwnerReferences {
		if r.Controller != nil && *r.Controller && (r.Kind == inventory.KindReplicaSet || r.Kind == inventory.KindJob) {
			_, ok := k.ownerRefs(p.Namespace, r.Kind, r.Name)
			return ok
		}
	}
	return true
}

// templateImage returns the image the owner's pod template now gives the
// container (or image volume) of k; "" when the caches hold no template
// for it.
func (k *caches) templateImage(s slot) string {
	spec := k.templateSpec(s.ns, s.kind, s.name)
	if spec == nil {
		return ""
	}
	for _, c := range inventory.TemplateContainers(s.ns, s.kind, s.name, spec) {
		if slotOf(c) == s {
			return c.Image
		}
	}
	return ""
}

func (k *caches) templateSpec(ns, kind, name string) *corev1.PodSpec {
	var err error
	switch kind {
	case inventory.KindDeployment:
		var d *appsv1.Deployment
		if d, err = k.deployments.Deployments(ns).Get(name); err == nil {
			return &d.Spec.Template.Spec
		}
	case inventory.KindStatefulSet:
		var s *appsv1.StatefulSet
		if s, err = k.statefulSets.StatefulSets(ns).Get(name); err == nil {
			return &s.Spec.Template.Spec
		}
	case inventory.KindDaemonSet:
		var d *appsv1.DaemonSet
		if d, err = k.daemonSets.DaemonSets(ns).Get(name); err == nil {
			return &d.Spec.Template.Spec
		}
	case inventory.KindCronJob:
		var c *batchv1.CronJob
		if c, err = k.cronJobs.CronJobs(ns).Get(name); err == nil {
			return &c.Spec.JobTemplate.Spec.Template.Spec
		}
	case inventory.KindReplicaSet:
		var r *appsv1.ReplicaSet
		if r, err = k.replicaSets.ReplicaSets(ns).Get(name); err == nil {
			return &r.Spec.Template.Spec
		}
	case inventory.KindJob:
		var j *batchv1.Job
		if j, err = k.jobs.Jobs(ns).Get(name); err == nil {
			return &j.Spec.Template.Spec
		}
	}
	return nil
}

// objects is what the caches hold, for an inventory of it all: the pods
// as cached (read only), the few workloads copied.
func (k *caches) objects() inventory.Objects {
	all := labels.Everything()
	var o inventory.Objects
	o.Pods, _ = k.pods.List(all)
	o.Deployments = copied(k.deployments.List(all))
	o.ReplicaSets = copied(k.replicaSets.List(all))
	o.StatefulSets = copied(k.statefulSets.List(all))
	o.DaemonSets = copied(k.daemonSets.List(all))
	o.Jobs = copied(k.jobs.List(all))
	o.CronJobs = copied(k.cronJobs.List(all))
	return o
}

// copied is a lister's objects as values (a cache lister never fails).
func copied[T any](items []*T, _ error) []T {
	out := make([]T, 0, len(items))
	for _, it := range items {
		out = append(out, *it)
	}
	return out
}

// slim strips an object to what the inventory reads before the informer
// caches it: no managed fields, annotations or labels, no template for a
// ReplicaSet or Job whose controller's template covers it, and of each pod
// spec only the containers' names, images and pull policies, the image
// volumes and what placement and pull secrets need. It keeps the watcher's
// memory to a few hundred bytes a pod.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		slimMeta(&o.ObjectMeta)
		slimSpec(&o.Spec)
		slimStatus(&o.Status)
	case *appsv1.Deployment:
		slimMeta(&o.ObjectMeta)
		slimTemplate(&o.Spec.Template)
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.ReplicaSet:
		slimMeta(&o.ObjectMeta)
		slimOwnedTemplate(inventory.KindReplicaSet, o.OwnerReferences, &o.Spec.Template)
		o.Status = appsv1.ReplicaSetStatus{}
	case *appsv1.StatefulSet:
		slimMeta(&o.ObjectMeta)
		slimTemplate(&o.Spec.Template)
		o.Spec.VolumeClaimTemplates = nil
		o.Status = appsv1.StatefulSetStatus{}
	case *appsv1.DaemonSet:
		slimMeta(&o.ObjectMeta)
		slimTemplate(&o.Spec.Template)
		o.Status = appsv1.DaemonSetStatus{}
	case *batchv1.Job:
		slimMeta(&o.ObjectMeta)
		slimOwnedTemplate(inventory.KindJob, o.OwnerReferences, &o.Spec.Template)
		o.Status = batchv1.JobStatus{Conditions: o.Status.Conditions} // a finished Job gets no template entry
		for i := range o.Status.Conditions {
			o.Status.Conditions[i].Message = ""
		}
	case *batchv1.CronJob:
		slimMeta(&o.ObjectMeta)
		slimTemplate(&o.Spec.JobTemplate.Spec.Template)
		o.Status = batchv1.CronJobStatus{}
	}
	return obj, nil
}

func slimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields, m.Annotations, m.Labels, m.Finalizers = nil, nil, nil, nil
	m.Namespace, m.GenerateName = intern(m.Namespace), intern(m.GenerateName)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
	}
}

// intern is s's canonical copy: the strings every pod of a workload
// repeats (namespace, owner, node, container names, images and imageIDs)
// are held once however many pods and status updates the cache has seen.
func intern(s string) string { return unique.Make(s).Value() }

// slimOwnedTemplate drops the whole template of a ReplicaSet or Job its
// controller's template covers (a Deployment's or Rollout's ReplicaSet, a
// CronJob's Job): neither the inventory nor the watcher reads it. Others
// are slimmed.
func slimOwnedTemplate(kind string, refs []metav1.OwnerReference, t *corev1.PodTemplateSpec) {
	if inventory.Lifted(kind, refs) {
		*t = corev1.PodTemplateSpec{}
		return
	}
	slimTemplate(t)
}

func slimTemplate(t *corev1.PodTemplateSpec) {
	t.ObjectMeta = metav1.ObjectMeta{}
	slimSpec(&t.Spec)
}

// slimSpec keeps of a pod spec what inventory reads: names, images and
// pull policies of the containers, the image volumes, the node, the pull
// secrets and service account, the nodeSelector, tolerations and the
// required node affinity.
func slimSpec(s *corev1.PodSpec) {
	s.Containers, s.InitContainers = shareContainers(s.Containers), shareContainers(s.InitContainers)
	for i, c := range s.EphemeralContainers {
		s.EphemeralContainers[i] = corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: c.Name, Image: c.Image, ImagePullPolicy: c.ImagePullPolicy}}
	}
	var vols []corev1.Volume
	for _, v := range s.Volumes {
		if v.Image != nil {
			vols = append(vols, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Image: v.Image}})
		}
	}
	s.Volumes = vols
	var aff *corev1.Affinity
	if s.Affinity != nil && s.Affinity.NodeAffinity != nil {
		aff = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
	}
	*s = corev1.PodSpec{Containers: s.Containers, InitContainers: s.InitContainers, EphemeralContainers: s.EphemeralContainers,
		Volumes: s.Volumes, NodeName: intern(s.NodeName), ImagePullSecrets: s.ImagePullSecrets,
		ServiceAccountName: intern(s.ServiceAccountName), DeprecatedServiceAccount: intern(s.DeprecatedServiceAccount),
		NodeSelector: s.NodeSelector, Affinity: aff, Tolerations: shareTolerations(s.Tolerations)}
}

// slimStatus keeps the container statuses, less what inventory and the
// watcher do not read.
func slimStatus(st *corev1.PodStatus) {
	slimStatuses := func(ss []corev1.ContainerStatus) {
		for i := range ss {
			c := &ss[i]
			c.Resources, c.AllocatedResources, c.User, c.AllocatedResourcesStatus = nil, nil, nil, nil
			c.Name, c.Image, c.ImageID = intern(c.Name), intern(c.Image), intern(c.ImageID)
			if t := c.LastTerminationState.Terminated; t != nil {
				t.Message = ""
			}
			if t := c.State.Terminated; t != nil {
				t.Message = ""
			}
			if w := c.State.Waiting; w != nil {
				w.Message = ""
			}
			var mounts []corev1.VolumeMountStatus
			for _, m := range c.VolumeMounts {
				if m.VolumeStatus != nil && m.VolumeStatus.Image != nil {
					mounts = append(mounts, m)
				}
			}
			c.VolumeMounts = mounts
		}
	}
	slimStatuses(st.ContainerStatuses)
	slimStatuses(st.InitContainerStatuses)
	slimStatuses(st.EphemeralContainerStatuses)
	*st = corev1.PodStatus{Phase: st.Phase, ContainerStatuses: st.ContainerStatuses,
		InitContainerStatuses: st.InitContainerStatuses, EphemeralContainerStatuses: st.EphemeralContainerStatuses}
}
