package inventory_test

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/inventory"
)

// TestFromObjectsMatchesList: the watcher's inventory, made from objects
// in hand, and its per-pod conversion are List's, container for container.
func TestFromObjectsMatchesList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	if err := (kubeapi.Scenario{Namespace: "shop"}).Apply(ctx, c); err != nil {
		t.Fatal(err)
	}
	want, err := inventory.List(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	var o inventory.Objects
	pods, _ := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	for i := range pods.Items {
		o.Pods = append(o.Pods, &pods.Items[i])
	}
	ds, _ := c.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	o.Deployments = ds.Items
	rs, _ := c.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
	o.ReplicaSets = rs.Items
	ss, _ := c.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	o.StatefulSets = ss.Items
	dss, _ := c.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	o.DaemonSets = dss.Items
	js, _ := c.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	o.Jobs = js.Items
	cjs, _ := c.BatchV1().CronJobs("").List(ctx, metav1.ListOptions{})
	o.CronJobs = cjs.Items
	ns, _ := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	o.Nodes = ns.Items
	got := inventory.FromObjects(o)
	if !reflect.DeepEqual(got.Containers, want.Containers) || !reflect.DeepEqual(got.NodeImages, want.NodeImages) {
		t.Fatalf("FromObjects differs from List:\n got %+v\nwant %+v", got.Containers, want.Containers)
	}

	refs := func(namespace, kind, name string) ([]metav1.OwnerReference, bool) {
		for _, r := range o.ReplicaSets {
			if kind == inventory.KindReplicaSet && r.Namespace == namespace && r.Name == name {
				return r.OwnerReferences, true
			}
		}
		for _, j := range o.Jobs {
			if kind == inventory.KindJob && j.Namespace == namespace && j.Name == name {
				return j.OwnerReferences, true
			}
		}
		return nil, false
	}
	var perPod []inventory.Container
	for _, p := range o.Pods {
		kind, name := inventory.TopOwner(p, refs)
		perPod = append(perPod, inventory.PodContainers(p, kind, name)...)
	}
	var fromList []inventory.Container
	for _, c := range want.Containers {
		if !c.Template() {
			fromList = append(fromList, c)
		}
	}
	if len(perPod) == 0 || len(perPod) != len(fromList) {
		t.Fatalf("PodContainers gave %d containers, List %d", len(perPod), len(fromList))
	}
	idx := map[string]inventory.Container{}
	for _, c := range fromList {
		idx[c.Namespace+"/"+c.Pod+"/"+c.Field+"/"+c.Container] = c
	}
	for _, c := range perPod {
		if w := idx[c.Namespace+"/"+c.Pod+"/"+c.Field+"/"+c.Container]; !reflect.DeepEqual(c, w) {
			t.Errorf("PodContainers %+v\nList         %+v", c, w)
		}
	}
}

// TestTopOwner: one owner rule for every path. TopOwner (the watcher's,
// over its caches) and FromObjects (List's, record's and scan's, over
// lists) lift a pod to the same owner: a Deployment's or a Rollout's
// ReplicaSet and a CronJob's or a ScaledJob's Job hand their pods up;
// other controllers, and one not known yet, keep them.
func TestTopOwner(t *testing.T) {
	t.Parallel()
	ctl := func(kind, name string) []metav1.OwnerReference {
		yes := true
		return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}
	}
	for _, tc := range []struct {
		name      string
		pod       []metav1.OwnerReference
		rs, job   []metav1.OwnerReference // the ReplicaSet's or Job's own references; nil: not known
		kind, own string
	}{
		{"bare pod", nil, nil, nil, inventory.KindPod, "p"},
		{"Deployment", ctl("ReplicaSet", "mid"), ctl("Deployment", "web"), nil, inventory.KindDeployment, "web"},
		{"Argo Rollout", ctl("ReplicaSet", "mid"), ctl("Rollout", "ro"), nil, inventory.KindRollout, "ro"},
		{"ReplicaSet alone", ctl("ReplicaSet", "mid"), []metav1.OwnerReference{}, nil, inventory.KindReplicaSet, "mid"},
		{"ReplicaSet of an unknown kind", ctl("ReplicaSet", "mid"), ctl("Widget", "w"), nil, inventory.KindReplicaSet, "mid"},
		{"ReplicaSet not cached", ctl("ReplicaSet", "mid"), nil, nil, inventory.KindReplicaSet, "mid"},
		{"CronJob", ctl("Job", "mid"), nil, ctl("CronJob", "nightly"), inventory.KindCronJob, "nightly"},
		{"KEDA ScaledJob", ctl("Job", "mid"), nil, ctl("ScaledJob", "drain"), inventory.KindScaledJob, "drain"},
		{"Job alone", ctl("Job", "mid"), nil, []metav1.OwnerReference{}, inventory.KindJob, "mid"},
		{"StatefulSet", ctl("StatefulSet", "db"), nil, nil, inventory.KindStatefulSet, "db"},
		{"Deployment named on a Job is not lifted", ctl("Job", "mid"), nil, ctl("Deployment", "web"), inventory.KindJob, "mid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: tc.pod},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "reg.example/a:1"}}}}
			var o inventory.Objects
			o.Pods = []*corev1.Pod{p}
			if tc.rs != nil {
				o.ReplicaSets = []appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mid", OwnerReferences: tc.rs}}}
			}
			if tc.job != nil {
				o.Jobs = []batchv1.Job{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mid", OwnerReferences: tc.job},
					Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}}
			}
			refs := func(ns, kind, name string) ([]metav1.OwnerReference, bool) {
				switch {
				case kind == inventory.KindReplicaSet && tc.rs != nil && name == "mid":
					return tc.rs, true
				case kind == inventory.KindJob && tc.job != nil && name == "mid":
					return tc.job, true
				}
				return nil, false
			}
			if kind, name := inventory.TopOwner(p, refs); kind != tc.kind || name != tc.own {
				t.Errorf("TopOwner = %s/%s, want %s/%s", kind, name, tc.kind, tc.own)
			}
			var owners []string
			for _, c := range inventory.FromObjects(o).Containers {
				owners = append(owners, c.OwnerKind+"/"+c.OwnerName)
			}
			if want := []string{tc.kind + "/" + tc.own}; !reflect.DeepEqual(owners, want) {
				t.Errorf("FromObjects owners %v, want %v", owners, want)
			}
		})
	}
}
