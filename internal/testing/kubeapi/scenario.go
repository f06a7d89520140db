package kubeapi

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/inventory"
)

// Digests used by the scenario.
const (
	DigestNginx   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	DigestAgent   = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	DigestBackup  = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	DigestBusybox = "sha256:4444444444444444444444444444444444444444444444444444444444444444"
	DigestAlpine  = "sha256:5555555555555555555555555555555555555555555555555555555555555555"
	DigestNginxV2 = "sha256:6666666666666666666666666666666666666666666666666666666666666666"
	// ConfigIDTurn is an image (config) ID, not a repo digest: what Docker
	// reports as "docker://sha256:…" for an image it cannot tie to a registry.
	ConfigIDTurn = "sha256:7777777777777777777777777777777777777777777777777777777777777777"
)

// Started is the container start time the scenario writes into statuses.
var Started = time.Date(2026, 11, 11, 11, 38, 4, 0, time.UTC)

// Scenario is a namespace of workloads covering every owner shape that
// inventory resolves: Deployment → ReplicaSet → Pods (plus an old, empty
// ReplicaSet), a Deployment on :latest whose runtime reports only an image ID,
// CronJob → Job → Pod whose jobTemplate has since moved to a new tag (the
// completed pod is kept), a suspended CronJob, a StatefulSet scaled to zero,
// an OnDelete DaemonSet whose pod still runs the image its template had
// before, and a bare Pod with init and ephemeral containers. Two nodes hold
// some of the images.
type Scenario struct {
	Namespace string
}

func ptr[T any](v T) *T { return &v }

func labels(app string) map[string]string { return map[string]string{"app": app} }

func template(app string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)}, Spec: spec}
}

func ctr(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image}
}

// Nodes are the scenario's nodes, with status.images set.
func (s Scenario) Nodes() []*corev1.Node {
	node := func(name string, images ...[]string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, names := range images {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: names, SizeBytes: 1 << 20})
		}
		return n
	}
	return []*corev1.Node{
		node("node-a",
			[]string{"docker.io/library/nginx@" + DigestNginx, "docker.io/library/nginx:1.27"},
			[]string{"ghcr.io/acme/agent@" + DigestAgent},
			[]string{"docker.io/library/busybox@" + DigestBusybox, "docker.io/library/busybox:1.37"},
			[]string{"docker.io/library/alpine@" + DigestAlpine, "docker.io/library/alpine:3.22"},
			[]string{ConfigIDTurn}, // an image ID only: not a repo digest
		),
		node("node-b",
			[]string{"docker.io/library/nginx@" + DigestNginx},
			[]string{"registry.example.com/ops/backup@" + DigestBackup, "registry.example.com/ops/backup:2"},
		),
	}
}

func ownerRef(kind, apiVersion, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("pending"), Controller: ptr(true)}}
}

// Workloads are the scenario's controllers, owners before what they own.
func (s Scenario) Workloads() []metav1.Object {
	ns := s.Namespace
	om := func(name string, owner []metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owner}
	}
	sel := func(app string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: labels(app)} }
	web := template("web", corev1.PodSpec{Containers: []corev1.Container{ctr("nginx", "nginx:1.27")}})
	turn := template("turn", corev1.PodSpec{Containers: []corev1.Container{{Name: "coturn", Image: "coturn/coturn:latest", ImagePullPolicy: corev1.PullAlways}}})
	backup := template("backup", corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{ctr("backup", "registry.example.com/ops/backup:2")}})
	// The CronJob's jobTemplate moved to :3 after its last Job (on :2) ran.
	backupNext := template("backup", corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{ctr("backup", "registry.example.com/ops/backup:3")}})
	report := template("report", corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}, Containers: []corev1.Container{ctr("report", "registry.example.com/ops/report")}})
	db := template("db", corev1.PodSpec{
		InitContainers: []corev1.Container{ctr("migrate", "registry.example.com/shop/migrate:5")},
		Containers:     []corev1.Container{ctr("postgres", "postgres:17")},
	})
	// OnDelete: the template moved to 1.1, the running pod keeps the old pinned image.
	agent := template("agent", corev1.PodSpec{Containers: []corev1.Container{ctr("agent", "ghcr.io/acme/agent:1.1")}})
	return []metav1.Object{
		&appsv1.Deployment{ObjectMeta: om("web", nil), Spec: appsv1.DeploymentSpec{Replicas: ptr[int32](2), Selector: sel("web"), Template: web}},
		&appsv1.ReplicaSet{ObjectMeta: om("web-7d9f", ownerRef("Deployment", "apps/v1", "web")), Spec: appsv1.ReplicaSetSpec{Replicas: ptr[int32](2), Selector: sel("web"), Template: web}},
		&appsv1.ReplicaSet{ObjectMeta: om("web-5c4b", ownerRef("Deployment", "apps/v1", "web")), Spec: appsv1.ReplicaSetSpec{Replicas: ptr[int32](0), Selector: sel("web"), Template: web}},
		&appsv1.Deployment{ObjectMeta: om("turn", nil), Spec: appsv1.DeploymentSpec{Replicas: ptr[int32](1), Selector: sel("turn"), Template: turn}},
		&appsv1.ReplicaSet{ObjectMeta: om("turn-5498", ownerRef("Deployment", "apps/v1", "turn")), Spec: appsv1.ReplicaSetSpec{Replicas: ptr[int32](1), Selector: sel("turn"), Template: turn}},
		&batchv1.CronJob{ObjectMeta: om("backup", nil), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: backupNext}}}},
		&batchv1.Job{ObjectMeta: om("backup-29000000", ownerRef("CronJob", "batch/v1", "backup")), Spec: batchv1.JobSpec{Template: backup}},
		&batchv1.CronJob{ObjectMeta: om("report", nil), Spec: batchv1.CronJobSpec{Schedule: "0 6 * * 1", Suspend: ptr(true), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: report}}}},
		&appsv1.StatefulSet{ObjectMeta: om("db", nil), Spec: appsv1.StatefulSetSpec{Replicas: ptr[int32](0), Selector: sel("db"), ServiceName: "db", Template: db}},
		&appsv1.DaemonSet{ObjectMeta: om("agent", nil), Spec: appsv1.DaemonSetSpec{Selector: sel("agent"), Template: agent,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}}},
	}
}

func running(name, image, imageID string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Image: image, ImageID: imageID, RestartCount: restarts, Ready: true, Started: ptr(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(Started)}},
	}
}

func terminated(name, image, imageID string) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Image: image, ImageID: imageID,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: metav1.NewTime(Started), FinishedAt: metav1.NewTime(Started.Add(time.Second)),
		}},
	}
}

// Pods are the scenario's pods with the status a kubelet would have written.
// Ephemeral containers are in the spec; a real API server only accepts them
// through the pods/ephemeralcontainers subresource, which Apply uses.
func (s Scenario) Pods() []*corev1.Pod {
	ns := s.Namespace
	pod := func(name, app, node string, owner []metav1.OwnerReference, spec corev1.PodSpec, phase corev1.PodPhase, st ...corev1.ContainerStatus) *corev1.Pod {
		spec.NodeName = node
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels(app), OwnerReferences: owner},
			Spec:       spec,
			Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: st},
		}
	}
	webSpec := corev1.PodSpec{Containers: []corev1.Container{ctr("nginx", "nginx:1.27")}}
	debug := pod("debug", "debug", "node-a", nil, corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
		InitContainers:   []corev1.Container{ctr("setup", "busybox:1.37")},
		Containers:       []corev1.Container{ctr("main", "alpine:3.22")},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "dbg", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}}},
	}, corev1.PodRunning, running("main", "docker.io/library/alpine:3.22", "docker.io/library/alpine@"+DigestAlpine, 0))
	debug.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("setup", "docker.io/library/busybox:1.37", "docker-pullable://busybox@"+DigestBusybox)}
	debug.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{running("dbg", "docker.io/library/busybox:latest", "docker.io/library/busybox@"+DigestBusybox, 0)}
	return []*corev1.Pod{
		pod("web-7d9f-aaaaa", "web", "node-a", ownerRef("ReplicaSet", "apps/v1", "web-7d9f"), webSpec, corev1.PodRunning,
			running("nginx", "docker.io/library/nginx:1.27", "docker.io/library/nginx@"+DigestNginx, 0)),
		pod("web-7d9f-bbbbb", "web", "node-b", ownerRef("ReplicaSet", "apps/v1", "web-7d9f"), webSpec, corev1.PodRunning,
			running("nginx", "docker.io/library/nginx:1.27", "docker-pullable://nginx@"+DigestNginx, 2)),
		pod("turn-5498-ccccc", "turn", "node-a", ownerRef("ReplicaSet", "apps/v1", "turn-5498"),
			corev1.PodSpec{Containers: []corev1.Container{{Name: "coturn", Image: "coturn/coturn:latest", ImagePullPolicy: corev1.PullAlways}}}, corev1.PodRunning,
			running("coturn", "coturn/coturn:latest", "docker://"+ConfigIDTurn, 794)),
		pod("backup-29000000-ddddd", "backup", "node-b", ownerRef("Job", "batch/v1", "backup-29000000"),
			corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{ctr("backup", "registry.example.com/ops/backup:2")}}, corev1.PodSucceeded,
			terminated("backup", "registry.example.com/ops/backup:2", "registry.example.com/ops/backup@"+DigestBackup)),
		pod("agent-eeeee", "agent", "node-a", ownerRef("DaemonSet", "apps/v1", "agent"),
			corev1.PodSpec{Containers: []corev1.Container{ctr("agent", "ghcr.io/acme/agent@"+DigestAgent)}}, corev1.PodRunning,
			running("agent", "ghcr.io/acme/agent@"+DigestAgent, "ghcr.io/acme/agent@"+DigestAgent, 0)),
		debug,
	}
}

// Want is what inventory.List must return for the scenario's namespace.
// Every parsed value (normalized repository, tag, digest, image ID kind,
// effective pull policy) is written out, never computed by the code under
// test.
func (s Scenario) Want() *inventory.Inventory {
	ns := s.Namespace
	// pod fills in what every pod entry of the scenario shares.
	pod := func(k inventory.Container) inventory.Container {
		k.Namespace, k.ServiceAccount = ns, "default"
		k.State, k.StartedAt = "running", Started
		return k
	}
	tmpl := func(k inventory.Container) inventory.Container {
		k.Namespace, k.ServiceAccount = ns, "default"
		return k
	}
	done := func(k inventory.Container) inventory.Container {
		k.State, k.Reason = "terminated", "Completed"
		return k
	}
	const (
		fc, fi, fe = inventory.FieldContainers, inventory.FieldInitContainers, inventory.FieldEphemeralContainers
		repoDigest = inventory.ImageIDRepoDigest
	)
	regcred := []string{"regcred"}
	return &inventory.Inventory{
		Containers: []inventory.Container{
			// Template first (Pod ""): the next backup Job pulls :3, which no pod ran.
			tmpl(inventory.Container{OwnerKind: "CronJob", OwnerName: "backup", Field: fc, Container: "backup",
				Image: "registry.example.com/ops/backup:3", ImageRef: inventory.ImageRef{Repo: "registry.example.com/ops/backup", Tag: "3"},
				PullPolicy: "IfNotPresent"}),
			done(pod(inventory.Container{OwnerKind: "CronJob", OwnerName: "backup", Pod: "backup-29000000-ddddd", Field: fc, Container: "backup",
				Image: "registry.example.com/ops/backup:2", ImageRef: inventory.ImageRef{Repo: "registry.example.com/ops/backup", Tag: "2"},
				ImageID: "registry.example.com/ops/backup@" + DigestBackup, ImageIDKind: repoDigest,
				RunningRepo: "registry.example.com/ops/backup", RunningDigest: DigestBackup,
				Node: "node-b", PullPolicy: "IfNotPresent"})),
			tmpl(inventory.Container{OwnerKind: "CronJob", OwnerName: "report", Field: fc, Container: "report",
				Image: "registry.example.com/ops/report", ImageRef: inventory.ImageRef{Repo: "registry.example.com/ops/report"},
				PullPolicy: "Always", ImagePullSecrets: regcred}),
			tmpl(inventory.Container{OwnerKind: "DaemonSet", OwnerName: "agent", Field: fc, Container: "agent",
				Image: "ghcr.io/acme/agent:1.1", ImageRef: inventory.ImageRef{Repo: "ghcr.io/acme/agent", Tag: "1.1"},
				PullPolicy: "IfNotPresent"}),
			pod(inventory.Container{OwnerKind: "DaemonSet", OwnerName: "agent", Pod: "agent-eeeee", Field: fc, Container: "agent",
				Image: "ghcr.io/acme/agent@" + DigestAgent, ImageRef: inventory.ImageRef{Repo: "ghcr.io/acme/agent", Digest: DigestAgent},
				ImageID: "ghcr.io/acme/agent@" + DigestAgent, ImageIDKind: repoDigest,
				RunningRepo: "ghcr.io/acme/agent", RunningDigest: DigestAgent,
				Node: "node-a", PullPolicy: "IfNotPresent"}),
			// docker://sha256:… is an image ID, not a repo digest: no running digest.
			pod(inventory.Container{OwnerKind: "Deployment", OwnerName: "turn", Pod: "turn-5498-ccccc", Field: fc, Container: "coturn",
				Image: "coturn/coturn:latest", ImageRef: inventory.ImageRef{Repo: "docker.io/coturn/coturn", Tag: "latest"},
				ImageID: "docker://" + ConfigIDTurn, ImageIDKind: inventory.ImageIDConfig,
				Node: "node-a", PullPolicy: "Always", RestartCount: 794}),
			pod(inventory.Container{OwnerKind: "Deployment", OwnerName: "web", Pod: "web-7d9f-aaaaa", Field: fc, Container: "nginx",
				Image: "nginx:1.27", ImageRef: inventory.ImageRef{Repo: "docker.io/library/nginx", Tag: "1.27"},
				ImageID: "docker.io/library/nginx@" + DigestNginx, ImageIDKind: repoDigest,
				RunningRepo: "docker.io/library/nginx", RunningDigest: DigestNginx,
				Node: "node-a", PullPolicy: "IfNotPresent"}),
			pod(inventory.Container{OwnerKind: "Deployment", OwnerName: "web", Pod: "web-7d9f-bbbbb", Field: fc, Container: "nginx",
				Image: "nginx:1.27", ImageRef: inventory.ImageRef{Repo: "docker.io/library/nginx", Tag: "1.27"},
				ImageID: "docker-pullable://nginx@" + DigestNginx, ImageIDKind: repoDigest,
				RunningRepo: "docker.io/library/nginx", RunningDigest: DigestNginx,
				Node: "node-b", PullPolicy: "IfNotPresent", RestartCount: 2}),
			done(pod(inventory.Container{OwnerKind: "Pod", OwnerName: "debug", Pod: "debug", Field: fi, Container: "setup",
				Image: "busybox:1.37", ImageRef: inventory.ImageRef{Repo: "docker.io/library/busybox", Tag: "1.37"},
				ImageID: "docker-pullable://busybox@" + DigestBusybox, ImageIDKind: repoDigest,
				RunningRepo: "docker.io/library/busybox", RunningDigest: DigestBusybox,
				Node: "node-a", PullPolicy: "IfNotPresent", ImagePullSecrets: regcred})),
			pod(inventory.Container{OwnerKind: "Pod", OwnerName: "debug", Pod: "debug", Field: fc, Container: "main",
				Image: "alpine:3.22", ImageRef: inventory.ImageRef{Repo: "docker.io/library/alpine", Tag: "3.22"},
				ImageID: "docker.io/library/alpine@" + DigestAlpine, ImageIDKind: repoDigest,
				RunningRepo: "docker.io/library/alpine", RunningDigest: DigestAlpine,
				Node: "node-a", PullPolicy: "IfNotPresent", ImagePullSecrets: regcred}),
			// The spec says IfNotPresent; left unset, "busybox" would default to Always.
			pod(inventory.Container{OwnerKind: "Pod", OwnerName: "debug", Pod: "debug", Field: fe, Container: "dbg",
				Image: "busybox", ImageRef: inventory.ImageRef{Repo: "docker.io/library/busybox"},
				ImageID: "docker.io/library/busybox@" + DigestBusybox, ImageIDKind: repoDigest,
				RunningRepo: "docker.io/library/busybox", RunningDigest: DigestBusybox,
				Node: "node-a", PullPolicy: "IfNotPresent", ImagePullSecrets: regcred}),
			tmpl(inventory.Container{OwnerKind: "StatefulSet", OwnerName: "db", Field: fi, Container: "migrate",
				Image: "registry.example.com/shop/migrate:5", ImageRef: inventory.ImageRef{Repo: "registry.example.com/shop/migrate", Tag: "5"},
				PullPolicy: "IfNotPresent"}),
			tmpl(inventory.Container{OwnerKind: "StatefulSet", OwnerName: "db", Field: fc, Container: "postgres",
				Image: "postgres:17", ImageRef: inventory.ImageRef{Repo: "docker.io/library/postgres", Tag: "17"},
				PullPolicy: "IfNotPresent"}),
		},
		NodeImages: map[string][]string{
			DigestNginx:   {"node-a", "node-b"},
			DigestAgent:   {"node-a"},
			DigestBusybox: {"node-a"},
			DigestAlpine:  {"node-a"},
			DigestBackup:  {"node-b"},
		},
	}
}

// Apply creates the scenario through c: the namespace and its default
// ServiceAccount (no controller-manager makes it), nodes with their images,
// workloads (owner references pointing at the real UIDs), pods, their
// ephemeral containers and their status through the pods/status subresource,
// as a kubelet would. Objects that already exist are an error.
func (s Scenario) Apply(ctx context.Context, c kubernetes.Interface) error {
	ns := s.Namespace
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating serviceaccount %s/default: %w", ns, err)
	}
	for _, n := range s.Nodes() {
		images := n.Status.Images
		got, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		got.Status.Images = images
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating node %s status: %w", n.Name, err)
		}
	}
	uids := map[string]types.UID{}
	fix := func(o metav1.Object) {
		refs := o.GetOwnerReferences()
		for i := range refs {
			if uid, ok := uids[refs[i].Kind+"/"+refs[i].Name]; ok {
				refs[i].UID = uid
			}
		}
		o.SetOwnerReferences(refs)
	}
	for _, o := range s.Workloads() {
		fix(o)
		var (
			kind string
			got  metav1.Object
			err  error
		)
		switch w := o.(type) {
		case *appsv1.Deployment:
			kind = "Deployment"
			got, err = c.AppsV1().Deployments(ns).Create(ctx, w, metav1.CreateOptions{})
		case *appsv1.ReplicaSet:
			kind = "ReplicaSet"
			got, err = c.AppsV1().ReplicaSets(ns).Create(ctx, w, metav1.CreateOptions{})
		case *appsv1.StatefulSet:
			kind = "StatefulSet"
			got, err = c.AppsV1().StatefulSets(ns).Create(ctx, w, metav1.CreateOptions{})
		case *appsv1.DaemonSet:
			kind = "DaemonSet"
			got, err = c.AppsV1().DaemonSets(ns).Create(ctx, w, metav1.CreateOptions{})
		case *batchv1.Job:
			kind = "Job"
			got, err = c.BatchV1().Jobs(ns).Create(ctx, w, metav1.CreateOptions{})
		case *batchv1.CronJob:
			kind = "CronJob"
			got, err = c.BatchV1().CronJobs(ns).Create(ctx, w, metav1.CreateOptions{})
		default:
			return fmt.Errorf("scenario: unexpected %T", o)
		}
		if err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", kind, ns, o.GetName(), err)
		}
		uids[kind+"/"+o.GetName()] = got.GetUID()
	}
	for _, p := range s.Pods() {
		fix(p)
		status, eph := p.Status, p.Spec.EphemeralContainers
		p.Spec.EphemeralContainers = nil
		got, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
		}
		if len(eph) > 0 {
			got.Spec.EphemeralContainers = eph
			if got, err = c.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, p.Name, got, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("adding ephemeral containers to pod %s/%s: %w", ns, p.Name, err)
			}
		}
		got.Status = status
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating pod %s/%s status: %w", ns, p.Name, err)
		}
	}
	return nil
}

// SetImageID rewrites one container's status imageID through pods/status, as
// a kubelet does after a restart pulled a different image.
func SetImageID(ctx context.Context, c kubernetes.Interface, ns, pod, container, imageID string) error {
	p, err := c.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting pod %s/%s: %w", ns, pod, err)
	}
	for _, ss := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for i := range ss {
			if ss[i].Name == container {
				ss[i].ImageID = imageID
				ss[i].RestartCount++
				if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("updating pod %s/%s status: %w", ns, pod, err)
				}
				return nil
			}
		}
	}
	return fmt.Errorf("pod %s/%s has no container %q", ns, pod, container)
}

// untolerated is c without its tolerations: a real API server adds its
// defaults (DefaultTolerationSeconds), a fake clientset none.
func untolerated(c inventory.Container) inventory.Container {
	c.Placement.Tolerations = nil
	return c
}

// AssertInventory compares an inventory with the one wanted container by
// container, so that a failure names the container and field.
func AssertInventory(t testing.TB, want, got *inventory.Inventory) {
	t.Helper()
	for i := range max(len(want.Containers), len(got.Containers)) {
		switch {
		case i >= len(got.Containers):
			t.Errorf("missing container %d: %+v", i, want.Containers[i])
		case i >= len(want.Containers):
			t.Errorf("extra container %d: %+v", i, got.Containers[i])
		case !reflect.DeepEqual(untolerated(want.Containers[i]), untolerated(got.Containers[i])):
			t.Errorf("container %d:\n got %+v\nwant %+v", i, got.Containers[i], want.Containers[i])
		}
	}
	if !reflect.DeepEqual(want.NodeImages, got.NodeImages) {
		t.Errorf("NodeImages:\n got %v\nwant %v", got.NodeImages, want.NodeImages)
	}
}
