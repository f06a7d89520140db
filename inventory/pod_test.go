package inventory_test

import (
	"context"
	"reflect"
	"testing"

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
