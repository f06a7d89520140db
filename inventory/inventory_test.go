package inventory_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/inventory"
)

func TestListScenario(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	s := kubeapi.Scenario{Namespace: "shop"}
	if err := s.Apply(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "shop"} {
		t.Run("namespace="+ns, func(t *testing.T) {
			got, err := inventory.List(ctx, c, ns)
			if err != nil {
				t.Fatal(err)
			}
			kubeapi.AssertInventory(t, s.Want(), got)
		})
	}
	t.Run("other namespace", func(t *testing.T) {
		got, err := inventory.List(ctx, c, "elsewhere")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Containers) != 0 {
			t.Errorf("got %d containers in an empty namespace", len(got.Containers))
		}
		if len(got.NodeImages) == 0 {
			t.Errorf("NodeImages are cluster-wide and must not depend on the namespace")
		}
	})
}

func ctrl(kind, name string) []metav1.OwnerReference {
	t := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &t}}
}

func ptr[T any](v T) *T { return &v }

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
}

func TestListOwnerRules(t *testing.T) {
	t.Parallel()
	type entry struct{ kind, name, pod string }
	om := func(name string, owner []metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: owner}
	}
	pod := func(name string, owner []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: om(name, owner), Spec: podTemplate("x:1").Spec}
	}
	finished := batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}
	tests := []struct {
		name    string
		objects []runtime.Object
		want    []entry
	}{
		{
			name:    "deployment scaled to zero gets a template entry, its old replicaset none",
			objects: []runtime.Object{&appsv1.Deployment{ObjectMeta: om("d", nil), Spec: appsv1.DeploymentSpec{Template: podTemplate("x:1")}}, &appsv1.ReplicaSet{ObjectMeta: om("d-1", ctrl("Deployment", "d")), Spec: appsv1.ReplicaSetSpec{Template: podTemplate("x:0")}}},
			want:    []entry{{"Deployment", "d", ""}},
		},
		{
			name: "deployment with pods gets no template entry",
			objects: []runtime.Object{
				&appsv1.Deployment{ObjectMeta: om("d", nil), Spec: appsv1.DeploymentSpec{Template: podTemplate("x:1")}},
				&appsv1.ReplicaSet{ObjectMeta: om("d-1", ctrl("Deployment", "d"))},
				pod("d-1-a", ctrl("ReplicaSet", "d-1")), pod("d-1-b", ctrl("ReplicaSet", "d-1")),
			},
			want: []entry{{"Deployment", "d", "d-1-a"}, {"Deployment", "d", "d-1-b"}},
		},
		{
			name:    "pod of a replicaset that is not listed stays with the replicaset",
			objects: []runtime.Object{pod("rs-a", ctrl("ReplicaSet", "gone"))},
			want:    []entry{{"ReplicaSet", "gone", "rs-a"}},
		},
		{
			name:    "bare replicaset without pods gets a template entry",
			objects: []runtime.Object{&appsv1.ReplicaSet{ObjectMeta: om("rs", nil), Spec: appsv1.ReplicaSetSpec{Template: podTemplate("x:1")}}},
			want:    []entry{{"ReplicaSet", "rs", ""}},
		},
		{
			name: "bare jobs: unfinished gets a template entry, finished none",
			objects: []runtime.Object{
				&batchv1.Job{ObjectMeta: om("running", nil), Spec: batchv1.JobSpec{Template: podTemplate("x:1")}},
				&batchv1.Job{ObjectMeta: om("done", nil), Spec: batchv1.JobSpec{Template: podTemplate("x:1")}, Status: finished},
			},
			want: []entry{{"Job", "running", ""}},
		},
		{
			name: "cronjob with a job but no pod gets a template entry, the job none",
			objects: []runtime.Object{
				&batchv1.CronJob{ObjectMeta: om("cj", nil), Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate("x:1")}}}},
				&batchv1.Job{ObjectMeta: om("cj-1", ctrl("CronJob", "cj")), Spec: batchv1.JobSpec{Template: podTemplate("x:1")}},
			},
			want: []entry{{"CronJob", "cj", ""}},
		},
		{
			name:    "unknown controller kind is kept as written",
			objects: []runtime.Object{pod("op-0", ctrl("Postgres", "main"))},
			want:    []entry{{"Postgres", "main", "op-0"}},
		},
		{
			name: "non-controller owner reference is used when no controller is marked",
			objects: []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "s"}}}, Spec: podTemplate("x:1").Spec},
				&appsv1.StatefulSet{ObjectMeta: om("s", nil), Spec: appsv1.StatefulSetSpec{Template: podTemplate("x:1")}}},
			want: []entry{{"StatefulSet", "s", "p"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv, err := inventory.List(context.Background(), fake.NewClientset(tt.objects...), "")
			if err != nil {
				t.Fatal(err)
			}
			var got []entry
			for _, c := range inv.Containers {
				got = append(got, entry{c.OwnerKind, c.OwnerName, c.Pod})
			}
			if !reflect.DeepEqual(tt.want, got) {
				t.Errorf("owners:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestListTemplateNotRun: an owner with pods also gets a template entry for
// each template container whose image none of its pods runs for that
// container, since the next pod it creates pulls that image.
func TestListTemplateNotRun(t *testing.T) {
	t.Parallel()
	type entry struct{ kind, name, pod, field, container, image string }
	om := func(name string, owner []metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: owner}
	}
	pod := func(name string, owner []metav1.OwnerReference, spec corev1.PodSpec) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: om(name, owner), Spec: spec}
	}
	spec := func(cs ...corev1.Container) corev1.PodSpec { return corev1.PodSpec{Containers: cs} }
	c := func(name, image string) corev1.Container { return corev1.Container{Name: name, Image: image} }
	cronJob := func(name, image string) *batchv1.CronJob {
		return &batchv1.CronJob{ObjectMeta: om(name, nil), Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate(image)}}}}
	}
	done := batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}
	fc, fi := inventory.FieldContainers, inventory.FieldInitContainers
	tests := []struct {
		name    string
		objects []runtime.Object
		want    []entry
	}{
		{
			name: "cronjob template changed, completed job pod kept",
			objects: []runtime.Object{
				cronJob("cj", "x:2"),
				&batchv1.Job{ObjectMeta: om("cj-1", ctrl("CronJob", "cj")), Spec: batchv1.JobSpec{Template: podTemplate("x:1")}, Status: done},
				pod("cj-1-a", ctrl("Job", "cj-1"), spec(c("c", "x:1"))),
			},
			want: []entry{{"CronJob", "cj", "", fc, "c", "x:2"}, {"CronJob", "cj", "cj-1-a", fc, "c", "x:1"}},
		},
		{
			name: "cronjob template unchanged, completed job pod kept",
			objects: []runtime.Object{
				cronJob("cj", "x:1"),
				&batchv1.Job{ObjectMeta: om("cj-1", ctrl("CronJob", "cj")), Spec: batchv1.JobSpec{Template: podTemplate("x:1")}, Status: done},
				pod("cj-1-a", ctrl("Job", "cj-1"), spec(c("c", "x:1"))),
			},
			want: []entry{{"CronJob", "cj", "cj-1-a", fc, "c", "x:1"}},
		},
		{
			name: "daemonset OnDelete, pods on the old image",
			objects: []runtime.Object{
				&appsv1.DaemonSet{ObjectMeta: om("ds", nil), Spec: appsv1.DaemonSetSpec{Template: podTemplate("x:2"),
					UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}}},
				pod("ds-a", ctrl("DaemonSet", "ds"), spec(c("c", "x:1"))),
				pod("ds-b", ctrl("DaemonSet", "ds"), spec(c("c", "x:1"))),
			},
			want: []entry{{"DaemonSet", "ds", "", fc, "c", "x:2"}, {"DaemonSet", "ds", "ds-a", fc, "c", "x:1"}, {"DaemonSet", "ds", "ds-b", fc, "c", "x:1"}},
		},
		{
			name: "statefulset partition, no pod updated yet",
			objects: []runtime.Object{
				&appsv1.StatefulSet{ObjectMeta: om("s", nil), Spec: appsv1.StatefulSetSpec{Template: podTemplate("x:2"),
					UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
						RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr[int32](2)}}}},
				pod("s-0", ctrl("StatefulSet", "s"), spec(c("c", "x:1"))),
				pod("s-1", ctrl("StatefulSet", "s"), spec(c("c", "x:1"))),
			},
			want: []entry{{"StatefulSet", "s", "", fc, "c", "x:2"}, {"StatefulSet", "s", "s-0", fc, "c", "x:1"}, {"StatefulSet", "s", "s-1", fc, "c", "x:1"}},
		},
		{
			name: "statefulset partition, one pod already on the template image",
			objects: []runtime.Object{
				&appsv1.StatefulSet{ObjectMeta: om("s", nil), Spec: appsv1.StatefulSetSpec{Template: podTemplate("x:2")}},
				pod("s-0", ctrl("StatefulSet", "s"), spec(c("c", "x:1"))),
				pod("s-1", ctrl("StatefulSet", "s"), spec(c("c", "x:2"))),
			},
			want: []entry{{"StatefulSet", "s", "s-0", fc, "c", "x:1"}, {"StatefulSet", "s", "s-1", fc, "c", "x:2"}},
		},
		{
			name: "paused deployment rollout, pods of the old replicaset",
			objects: []runtime.Object{
				&appsv1.Deployment{ObjectMeta: om("d", nil), Spec: appsv1.DeploymentSpec{Paused: true, Template: podTemplate("x:2")}},
				&appsv1.ReplicaSet{ObjectMeta: om("d-1", ctrl("Deployment", "d")), Spec: appsv1.ReplicaSetSpec{Template: podTemplate("x:1")}},
				pod("d-1-a", ctrl("ReplicaSet", "d-1"), spec(c("c", "x:1"))),
			},
			want: []entry{{"Deployment", "d", "", fc, "c", "x:2"}, {"Deployment", "d", "d-1-a", fc, "c", "x:1"}},
		},
		{
			name: "template adds a sidecar the pods lack; the unchanged container gets no entry",
			objects: []runtime.Object{
				&appsv1.Deployment{ObjectMeta: om("d", nil), Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: spec(c("c", "x:1"), c("proxy", "p:1"))}}},
				&appsv1.ReplicaSet{ObjectMeta: om("d-1", ctrl("Deployment", "d"))},
				pod("d-1-a", ctrl("ReplicaSet", "d-1"), spec(c("c", "x:1"))),
			},
			want: []entry{{"Deployment", "d", "", fc, "proxy", "p:1"}, {"Deployment", "d", "d-1-a", fc, "c", "x:1"}},
		},
		{
			name: "images are compared per field: an init container is not a container of the same name",
			objects: []runtime.Object{
				&appsv1.DaemonSet{ObjectMeta: om("ds", nil), Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{c("c", "x:1")}, Containers: []corev1.Container{c("main", "m:1")}}}}},
				pod("ds-a", ctrl("DaemonSet", "ds"), corev1.PodSpec{InitContainers: []corev1.Container{c("c", "x:0")}, Containers: []corev1.Container{c("c", "x:1"), c("main", "m:1")}}),
			},
			want: []entry{{"DaemonSet", "ds", "", fi, "c", "x:1"}, {"DaemonSet", "ds", "ds-a", fi, "c", "x:0"}, {"DaemonSet", "ds", "ds-a", fc, "c", "x:1"}, {"DaemonSet", "ds", "ds-a", fc, "main", "m:1"}},
		},
		{
			name: "image strings are compared as written",
			objects: []runtime.Object{
				&appsv1.DaemonSet{ObjectMeta: om("ds", nil), Spec: appsv1.DaemonSetSpec{Template: podTemplate("nginx:1.27")}},
				pod("ds-a", ctrl("DaemonSet", "ds"), spec(c("c", "docker.io/library/nginx:1.27"))),
			},
			want: []entry{{"DaemonSet", "ds", "", fc, "c", "nginx:1.27"}, {"DaemonSet", "ds", "ds-a", fc, "c", "docker.io/library/nginx:1.27"}},
		},
		{
			name: "bare jobs: an unfinished one with pods is compared, a finished one never gets an entry",
			objects: []runtime.Object{
				&batchv1.Job{ObjectMeta: om("running", nil), Spec: batchv1.JobSpec{Template: podTemplate("x:2")}},
				pod("running-a", ctrl("Job", "running"), spec(c("c", "x:1"))),
				&batchv1.Job{ObjectMeta: om("done", nil), Spec: batchv1.JobSpec{Template: podTemplate("x:2")}, Status: done},
				pod("done-a", ctrl("Job", "done"), spec(c("c", "x:1"))),
			},
			want: []entry{{"Job", "done", "done-a", fc, "c", "x:1"}, {"Job", "running", "", fc, "c", "x:2"}, {"Job", "running", "running-a", fc, "c", "x:1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv, err := inventory.List(context.Background(), fake.NewClientset(tt.objects...), "")
			if err != nil {
				t.Fatal(err)
			}
			var got []entry
			for _, c := range inv.Containers {
				got = append(got, entry{c.OwnerKind, c.OwnerName, c.Pod, c.Field, c.Container, c.Image})
				if c.Template() && (c.ImageID != "" || c.State != "" || c.Node != "") {
					t.Errorf("template entry has pod data: %+v", c)
				}
			}
			if !reflect.DeepEqual(tt.want, got) {
				t.Errorf("containers:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestListImageIDKind: what List puts in ImageIDKind, RunningRepo and
// RunningDigest for each form of status imageID a runtime reports.
func TestListImageIDKind(t *testing.T) {
	t.Parallel()
	const (
		digest   = "sha256:abababababababababababababababababababababababababababababababab"
		configID = "sha256:cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
	)
	tests := []struct {
		name, imageID      string
		kind               inventory.ImageIDKind
		runRepo, runDigest string
	}{
		{"docker image id", "docker://" + configID, inventory.ImageIDConfig, "", ""},
		{"bare image id", configID, inventory.ImageIDConfig, "", ""},
		{"docker-pullable repo digest", "docker-pullable://nginx@" + digest, inventory.ImageIDRepoDigest, "docker.io/library/nginx", digest},
		{"containerd repo digest", "docker.io/library/nginx@" + digest, inventory.ImageIDRepoDigest, "docker.io/library/nginx", digest},
		{"not started", "", inventory.ImageIDNone, "", ""},
		{"garbage", "nginx:1.27", inventory.ImageIDUnknown, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
				Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", ImageID: tt.imageID}}},
			}
			inv, err := inventory.List(context.Background(), fake.NewClientset(p), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(inv.Containers) != 1 {
				t.Fatalf("got %d containers, want 1", len(inv.Containers))
			}
			c := inv.Containers[0]
			if c.ImageID != tt.imageID || c.ImageIDKind != tt.kind || c.RunningRepo != tt.runRepo || c.RunningDigest != tt.runDigest {
				t.Errorf("ImageID %q: got kind %q, repo %q, digest %q; want %q, %q, %q",
					tt.imageID, c.ImageIDKind, c.RunningRepo, c.RunningDigest, tt.kind, tt.runRepo, tt.runDigest)
			}
		})
	}
}

// TestListPaginates serves pods in pages of the requested Limit and checks
// that List follows every continue token.
func TestListPaginates(t *testing.T) {
	t.Parallel()
	const total = 1234
	c := fake.NewClientset()
	var calls []metav1.ListOptions
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).ListOptions
		calls = append(calls, opts)
		start := 0
		if opts.Continue != "" {
			fmt.Sscanf(opts.Continue, "from-%d", &start)
		}
		list := &corev1.PodList{}
		end := min(start+int(opts.Limit), total)
		for i := start; i < end; i++ {
			list.Items = append(list.Items, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p-%04d", i)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:1"}}},
			})
		}
		if end < total {
			list.Continue = fmt.Sprintf("from-%d", end)
		}
		return true, list, nil
	})
	inv, err := inventory.List(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Containers) != total {
		t.Errorf("got %d containers, want %d", len(inv.Containers), total)
	}
	if len(calls) != 3 {
		t.Errorf("got %d list calls, want 3", len(calls))
	}
	for _, o := range calls {
		if o.Limit != 500 {
			t.Errorf("list with Limit %d, want 500", o.Limit)
		}
	}
}

func TestListErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		verb, resource, group string
		namespace             string
		err                   func(gr schema.GroupResource) error
		want                  string
		is                    func(error) bool
	}{
		{"list", "daemonsets", "apps", "", func(gr schema.GroupResource) error {
			return apierrors.NewForbidden(gr, "", errors.New(`User "system:serviceaccount:regcheck:regcheck" cannot list resource "daemonsets" in API group "apps" at the cluster scope`))
		}, `listing daemonsets.apps in all namespaces: daemonsets.apps is forbidden: User "system:serviceaccount:regcheck:regcheck" cannot list resource "daemonsets"`, apierrors.IsForbidden},
		{"list", "cronjobs", "batch", "team", func(gr schema.GroupResource) error {
			return apierrors.NewForbidden(gr, "", errors.New(`cannot list resource "cronjobs"`))
		}, `listing cronjobs.batch in namespace "team": cronjobs.batch is forbidden`, apierrors.IsForbidden},
		{"list", "nodes", "", "team", func(gr schema.GroupResource) error {
			return apierrors.NewServiceUnavailable("etcd down")
		}, `listing nodes: etcd down`, apierrors.IsServiceUnavailable},
		{"list", "pods", "", "", func(gr schema.GroupResource) error {
			return apierrors.NewUnauthorized("token expired")
		}, `listing pods in all namespaces: token expired`, apierrors.IsUnauthorized},
		{"list", "replicasets", "apps", "", func(gr schema.GroupResource) error {
			return apierrors.NewServiceUnavailable("etcd down")
		}, `listing replicasets.apps in all namespaces: etcd down`, apierrors.IsServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientset()
			c.PrependReactor(tt.verb, tt.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err(schema.GroupResource{Group: tt.group, Resource: tt.resource})
			})
			_, err := inventory.List(context.Background(), c, tt.namespace)
			if err == nil {
				t.Fatal("List succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\ndoes not contain %q", err, tt.want)
			}
			if !tt.is(err) {
				t.Errorf("error %q lost its API status", err)
			}
		})
	}
}

// Nodes are a detail: a user who may read a namespace but not the nodes
// still gets the inventory, without node caches, and is told so.
func TestListNodesForbidden(t *testing.T) {
	t.Parallel()
	c := fake.NewClientset(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
	})
	c.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New(`cannot list resource "nodes"`))
	})
	inv, err := inventory.List(context.Background(), c, "team")
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Containers) != 1 || len(inv.NodeImages) != 0 {
		t.Errorf("containers %d, node images %v; want 1, none", len(inv.Containers), inv.NodeImages)
	}
	if len(inv.Warnings) != 1 || !strings.Contains(inv.Warnings[0], "nodes is forbidden") {
		t.Errorf("warnings %q, want one saying nodes are forbidden", inv.Warnings)
	}
}

func TestListCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := inventory.List(ctx, fake.NewClientset(), "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestListImageVolumes: a pod's or template's image volumes are listed as
// its containers are, with the effective pullPolicy and, where a container
// status mounting one gives it, the digest the kubelet mounted.
func TestListImageVolumes(t *testing.T) {
	t.Parallel()
	const (
		d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	)
	type entry struct{ kind, name, pod, field, container, image, policy, imageID, digest string }
	om := func(name string, owner []metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: owner}
	}
	vol := func(name, ref string, policy corev1.PullPolicy) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: ref, PullPolicy: policy}}}
	}
	spec := func(vs ...corev1.Volume) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:1", ImagePullPolicy: corev1.PullIfNotPresent}}, Volumes: vs}
	}
	mount := func(name, imageRef string) corev1.VolumeMountStatus {
		m := corev1.VolumeMountStatus{Name: name, MountPath: "/" + name}
		if imageRef != "" {
			m.VolumeStatus = &corev1.VolumeStatus{Image: &corev1.ImageVolumeStatus{ImageRef: imageRef}}
		}
		return m
	}
	status := func(ms ...corev1.VolumeMountStatus) corev1.PodStatus {
		return corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", VolumeMounts: ms}}}
	}
	fc, fv := inventory.FieldContainers, inventory.FieldImageVolumes
	tests := []struct {
		name    string
		objects []runtime.Object
		want    []entry
	}{
		{
			name: "bare pod: each image volume after the containers, other volumes left out, defaults as for a container",
			objects: []runtime.Object{&corev1.Pod{ObjectMeta: om("p", nil), Spec: spec(
				vol("models", "reg.example/models:v3", ""),
				corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				vol("latest", "reg.example/data:latest", ""),
				vol("untagged", "reg.example/data", ""),
				vol("pinned", "reg.example/data@"+d1, ""),
				vol("never", "reg.example/data:latest", corev1.PullNever),
			)}},
			want: []entry{
				{"Pod", "p", "p", fc, "c", "x:1", "IfNotPresent", "", ""},
				{"Pod", "p", "p", fv, "latest", "reg.example/data:latest", "Always", "", ""},
				{"Pod", "p", "p", fv, "models", "reg.example/models:v3", "IfNotPresent", "", ""},
				{"Pod", "p", "p", fv, "never", "reg.example/data:latest", "Never", "", ""},
				{"Pod", "p", "p", fv, "pinned", "reg.example/data@" + d1, "IfNotPresent", "", ""},
				{"Pod", "p", "p", fv, "untagged", "reg.example/data", "Always", "", ""},
			},
		},
		{
			name: "running digest from the volume mount status; the first container mounting it that gives one",
			objects: []runtime.Object{&corev1.Pod{ObjectMeta: om("p", nil),
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "a", Image: "x:1"}, {Name: "b", Image: "x:1"}},
					Volumes:    []corev1.Volume{vol("models", "reg.example/models:v3", ""), vol("cfg", "reg.example/cfg:v1", "")},
				},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
					{Name: "a", VolumeMounts: []corev1.VolumeMountStatus{mount("models", ""), mount("cfg", "docker.io/library/other@"+d2)}},
					{Name: "b", VolumeMounts: []corev1.VolumeMountStatus{mount("models", "reg.example/models@"+d1)}},
				}},
			}},
			want: []entry{
				{"Pod", "p", "p", fc, "a", "x:1", "IfNotPresent", "", ""},
				{"Pod", "p", "p", fc, "b", "x:1", "IfNotPresent", "", ""},
				{"Pod", "p", "p", fv, "cfg", "reg.example/cfg:v1", "IfNotPresent", "docker.io/library/other@" + d2, d2},
				{"Pod", "p", "p", fv, "models", "reg.example/models:v3", "IfNotPresent", "reg.example/models@" + d1, d1},
			},
		},
		{
			name: "a volume named as a container is its own entry and takes no container status",
			objects: []runtime.Object{&corev1.Pod{ObjectMeta: om("p", nil),
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:1"}}, Volumes: []corev1.Volume{vol("c", "reg.example/c:v1", "")}},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", ImageID: "docker.io/library/x@" + d1,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			}},
			want: []entry{
				{"Pod", "p", "p", fc, "c", "x:1", "IfNotPresent", "docker.io/library/x@" + d1, d1},
				{"Pod", "p", "p", fv, "c", "reg.example/c:v1", "IfNotPresent", "", ""},
			},
		},
		{
			name: "deployment scaled to zero: a template entry per image volume",
			objects: []runtime.Object{&appsv1.Deployment{ObjectMeta: om("d", nil), Spec: appsv1.DeploymentSpec{
				Template: corev1.PodTemplateSpec{Spec: spec(vol("models", "reg.example/models:v3", corev1.PullAlways))}}}},
			want: []entry{
				{"Deployment", "d", "", fc, "c", "x:1", "IfNotPresent", "", ""},
				{"Deployment", "d", "", fv, "models", "reg.example/models:v3", "Always", "", ""},
			},
		},
		{
			name: "rollout under way: the template's new reference gets an entry, the unchanged container none",
			objects: []runtime.Object{
				&appsv1.Deployment{ObjectMeta: om("d", nil), Spec: appsv1.DeploymentSpec{
					Template: corev1.PodTemplateSpec{Spec: spec(vol("models", "reg.example/models:v4", ""))}}},
				&appsv1.ReplicaSet{ObjectMeta: om("d-1", ctrl("Deployment", "d"))},
				&corev1.Pod{ObjectMeta: om("d-1-a", ctrl("ReplicaSet", "d-1")), Spec: spec(vol("models", "reg.example/models:v3", "")),
					Status: status(mount("models", "reg.example/models@"+d1))},
			},
			want: []entry{
				{"Deployment", "d", "", fv, "models", "reg.example/models:v4", "IfNotPresent", "", ""},
				{"Deployment", "d", "d-1-a", fc, "c", "x:1", "IfNotPresent", "", ""},
				{"Deployment", "d", "d-1-a", fv, "models", "reg.example/models:v3", "IfNotPresent", "reg.example/models@" + d1, d1},
			},
		},
		{
			name: "cronjob without pods: its job template's image volumes",
			objects: []runtime.Object{&batchv1.CronJob{ObjectMeta: om("cj", nil), Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec(vol("data", "reg.example/data:v1", ""))}}}}}},
			want: []entry{
				{"CronJob", "cj", "", fc, "c", "x:1", "IfNotPresent", "", ""},
				{"CronJob", "cj", "", fv, "data", "reg.example/data:v1", "IfNotPresent", "", ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv, err := inventory.List(context.Background(), fake.NewClientset(tt.objects...), "")
			if err != nil {
				t.Fatal(err)
			}
			var got []entry
			for _, c := range inv.Containers {
				got = append(got, entry{c.OwnerKind, c.OwnerName, c.Pod, c.Field, c.Container, c.Image, c.PullPolicy, c.ImageID, c.RunningDigest})
				if c.ImageVolume() != (c.Field == fv) {
					t.Errorf("%s %s: ImageVolume() %v", c.Field, c.Container, c.ImageVolume())
				}
				if c.ImageVolume() && (c.State != "" || c.RestartCount != 0) {
					t.Errorf("image volume %s has a container state: %+v", c.Container, c)
				}
			}
			if !reflect.DeepEqual(tt.want, got) {
				t.Errorf("entries:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
