package inventory_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/inventory"
)

func node(name, arch string, labels map[string]string, fromInfo bool) *corev1.Node {
	l := map[string]string{"kubernetes.io/hostname": name}
	for k, v := range labels {
		l[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	if fromInfo {
		n.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: arch}
	} else {
		l[inventory.LabelOS], l[inventory.LabelArch] = "linux", arch
	}
	return n
}

func podOn(name, nodeName string, selector map[string]string, affinity *corev1.NodeSelector) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: corev1.PodSpec{NodeName: nodeName, NodeSelector: selector, Containers: []corev1.Container{{Name: "app", Image: "reg.example/app:v1"}}}}
	if affinity != nil {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: affinity}}
	}
	return p
}

// TestEligible checks which nodes, and so which platforms, a pod may run
// on, as the scheduler's own required node affinity match says.
func TestEligible(t *testing.T) {
	ctx := context.Background()
	notObservability := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "role", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"observability"}}}}}}
	c := fake.NewClientset(
		node("a1", "amd64", nil, false),
		node("a2", "amd64", map[string]string{"role": "observability"}, true), // platform from status.nodeInfo
		node("r1", "arm64", nil, false),
		podOn("anywhere", "", nil, nil),
		podOn("amd64-only", "", map[string]string{inventory.LabelArch: "amd64"}, nil),
		podOn("not-observability", "", nil, notObservability),
		podOn("running-on-r1", "r1", map[string]string{inventory.LabelArch: "amd64"}, nil), // its node at least
		podOn("no-node-matches", "", map[string]string{"pool": "gpu"}, nil),
	)
	inv, err := inventory.List(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := platformsOf(inv.Nodes); got != "a1=linux/amd64 a2=linux/amd64 r1=linux/arm64" {
		t.Fatalf("nodes %s", got)
	}
	for _, tc := range []struct {
		pod, nodes string
		platforms  map[string][]string
		why        string
	}{
		{"anywhere", "a1 a2 r1", map[string][]string{"linux/amd64": {"a1", "a2"}, "linux/arm64": {"r1"}}, "every node (3)"},
		// a2 has no kubernetes.io/arch label: the scheduler's match (and so
		// this one) does not place the pod there, whatever its nodeInfo says.
		{"amd64-only", "a1", map[string][]string{"linux/amd64": {"a1"}}, "1 of 3 nodes, by its nodeSelector"},
		{"not-observability", "a1 r1", map[string][]string{"linux/amd64": {"a1"}, "linux/arm64": {"r1"}}, "2 of 3 nodes"},
		{"running-on-r1", "a1 r1", map[string][]string{"linux/amd64": {"a1"}, "linux/arm64": {"r1"}}, "2 of 3 nodes"},
		{"no-node-matches", "a1 a2 r1", map[string][]string{"linux/amd64": {"a1", "a2"}, "linux/arm64": {"r1"}}, "no node matches"},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			ct := containerOf(t, inv, tc.pod)
			e := inv.Eligible(ct)
			if got := nodeNames(e.Nodes); got != tc.nodes {
				t.Errorf("nodes %q, want %q", got, tc.nodes)
			}
			if !reflect.DeepEqual(e.Platforms(), tc.platforms) {
				t.Errorf("platforms %v, want %v", e.Platforms(), tc.platforms)
			}
			if !strings.Contains(e.Why, tc.why) {
				t.Errorf("why %q does not say %q", e.Why, tc.why)
			}
		})
	}
}

func containerOf(t *testing.T, inv *inventory.Inventory, pod string) inventory.Container {
	t.Helper()
	for _, c := range inv.Containers {
		if c.Pod == pod {
			return c
		}
	}
	t.Fatalf("no container of pod %s", pod)
	return inventory.Container{}
}

func platformsOf(ns []inventory.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name+"="+n.Platform)
	}
	return strings.Join(s, " ")
}

func nodeNames(ns []inventory.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, " ")
}

// TestEligibleTaints: a pod does not run on a node whose NoSchedule or
// NoExecute taint it does not tolerate, as the scheduler's own helper says.
func TestEligibleTaints(t *testing.T) {
	ctx := context.Background()
	tainted := node("r1", "arm64", nil, false)
	tainted.Spec.Taints = []corev1.Taint{{Key: "kubernetes.io/arch", Value: "arm64", Effect: corev1.TaintEffectNoSchedule}}
	preferNo := node("r2", "arm64", nil, false)
	preferNo.Spec.Taints = []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
	tolerating := podOn("tolerates-arm", "", nil, nil)
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "kubernetes.io/arch", Operator: corev1.TolerationOpEqual, Value: "arm64", Effect: corev1.TaintEffectNoSchedule}}
	c := fake.NewClientset(node("a1", "amd64", nil, false), tainted, preferNo, podOn("plain", "", nil, nil), tolerating, podOn("running-on-r1", "r1", nil, nil))
	inv, err := inventory.List(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ pod, nodes string }{
		{"plain", "a1 r2"},            // r1's NoSchedule taint keeps it off; PreferNoSchedule does not
		{"tolerates-arm", "a1 r1 r2"}, // the toleration lets it on
		{"running-on-r1", "a1 r1 r2"}, // its own node, whatever the taint
	} {
		if got := nodeNames(inv.Eligible(containerOf(t, inv, tc.pod)).Nodes); got != tc.nodes {
			t.Errorf("%s: nodes %q, want %q", tc.pod, got, tc.nodes)
		}
	}
}
