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
		podOn("no-gpu-arm64", "", map[string]string{"pool": "gpu", inventory.LabelArch: "arm64"}, nil),
		podOn("no-gpu-arm64-affinity", "", nil, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}},
			{Key: inventory.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}}}}),
		podOn("no-s390x", "", map[string]string{inventory.LabelArch: "s390x"}, nil),
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
		// No node matches: never every node. The nodes of the platform the
		// selector or affinity names, else none (every platform counts).
		{"no-node-matches", "", map[string][]string{}, "which name no platform: the nodes that would run it are not in the cluster"},
		{"no-gpu-arm64", "r1", map[string][]string{"linux/arm64": {"r1"}}, "no node matches its nodeSelector and required node affinity: the 1 of 3 nodes of the platform they name: r1"},
		{"no-gpu-arm64-affinity", "r1", map[string][]string{"linux/arm64": {"r1"}}, "the 1 of 3 nodes of the platform they name: r1"},
		{"no-s390x", "", map[string][]string{}, "nor the platform they name"},
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
// NoExecute taint it does not tolerate, as the scheduler's own helper
// says, unless the taint is a condition of the moment the node lifecycle
// controller manages; when taints leave no node, the nodes its
// nodeSelector allows are eligible, never every node.
func TestEligibleTaints(t *testing.T) {
	ctx := context.Background()
	taint := func(key, value string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Value: value, Effect: effect}
	}
	gpu := taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	tolerateGPU := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	arm64 := map[string]string{inventory.LabelArch: "arm64"}
	type tc struct {
		name        string
		a1, r1      []corev1.Taint // the amd64 and the arm64 node's taints
		selector    map[string]string
		tolerations []corev1.Toleration
		nodeName    string
		nodes, why  string
	}
	var cases []tc
	// Each condition taint, on both nodes: not counted, so a pod pinned to
	// arm64 runs on r1 alone (before: no node passed the taint filter, and
	// every node was taken, the amd64 one included).
	for _, ct := range []corev1.Taint{
		taint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoSchedule),
		taint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoExecute),
		taint("node.kubernetes.io/unreachable", "", corev1.TaintEffectNoSchedule),
		taint("node.kubernetes.io/unreachable", "", corev1.TaintEffectNoExecute),
		taint("node.kubernetes.io/unschedulable", "", corev1.TaintEffectNoSchedule), // cordon, drain
		taint("node.kubernetes.io/disk-pressure", "", corev1.TaintEffectNoSchedule),
		taint("node.kubernetes.io/memory-pressure", "", corev1.TaintEffectNoSchedule),
		taint("node.kubernetes.io/pid-pressure", "", corev1.TaintEffectNoSchedule),
		taint("node.kubernetes.io/network-unavailable", "", corev1.TaintEffectNoSchedule),
		taint("node.kubernetes.io/out-of-service", "nodeshutdown", corev1.TaintEffectNoExecute),
		taint("node.cloudprovider.kubernetes.io/uninitialized", "true", corev1.TaintEffectNoSchedule),
		taint("node.cloudprovider.kubernetes.io/shutdown", "", corev1.TaintEffectNoSchedule),
	} {
		on := []corev1.Taint{ct}
		cases = append(cases,
			tc{name: "arm64 pin, " + ct.ToString(), a1: on, r1: on, selector: arm64, nodes: "r1", why: "1 of 2 nodes, by its nodeSelector, required node affinity and tolerations: r1; condition taints not counted: " + ct.Key},
			tc{name: "anywhere, " + ct.ToString(), a1: on, r1: on, nodes: "a1 r1", why: "every node (2): no nodeSelector or required node affinity; condition taints not counted: " + ct.Key})
	}
	cases = append(cases,
		tc{name: "no taint", nodes: "a1 r1", why: "every node (2)"},
		tc{name: "user taint not tolerated", r1: []corev1.Taint{gpu}, nodes: "a1", why: "1 of 2 nodes"},
		tc{name: "user taint tolerated", r1: []corev1.Taint{gpu}, tolerations: tolerateGPU, nodes: "a1 r1", why: "every node (2)"},
		tc{name: "user taint and cordon, tolerated", r1: []corev1.Taint{gpu, taint("node.kubernetes.io/unschedulable", "", corev1.TaintEffectNoSchedule)}, tolerations: tolerateGPU, nodes: "a1 r1", why: "condition taints not counted: node.kubernetes.io/unschedulable"},
		tc{name: "user NoExecute not tolerated", r1: []corev1.Taint{taint("maintenance", "true", corev1.TaintEffectNoExecute)}, nodes: "a1", why: "1 of 2 nodes"},
		tc{name: "user NoExecute tolerated", r1: []corev1.Taint{taint("maintenance", "true", corev1.TaintEffectNoExecute)},
			tolerations: []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}, nodes: "a1 r1", why: "every node (2)"},
		tc{name: "PreferNoSchedule does not place", r1: []corev1.Taint{taint("spot", "", corev1.TaintEffectPreferNoSchedule)}, nodes: "a1 r1", why: "every node (2)"},
		// Taints leave no node: the nodes the selector allows, said so.
		tc{name: "arm64 pin, user taint not tolerated", r1: []corev1.Taint{gpu}, selector: arm64, nodes: "r1",
			why: "no node it may run on tolerates its taints (dedicated=gpu:NoSchedule): the 1 of 2 nodes its nodeSelector and node affinity allow: r1"},
		tc{name: "arm64 pin, user taint tolerated", r1: []corev1.Taint{gpu}, selector: arm64, tolerations: tolerateGPU, nodes: "r1", why: "1 of 2 nodes"},
		tc{name: "every node user-tainted", a1: []corev1.Taint{gpu}, r1: []corev1.Taint{taint("maintenance", "", corev1.TaintEffectNoExecute)}, nodes: "a1 r1",
			why: "no node it may run on tolerates its taints (dedicated=gpu:NoSchedule, maintenance:NoExecute): the 2 of 2 nodes"},
		tc{name: "its own node, whatever the taint", r1: []corev1.Taint{gpu}, nodeName: "r1", nodes: "a1 r1", why: "every node (2)"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a1, r1 := node("a1", "amd64", nil, false), node("r1", "arm64", nil, false)
			a1.Spec.Taints, r1.Spec.Taints = tc.a1, tc.r1
			pod := podOn("p", tc.nodeName, tc.selector, nil)
			pod.Spec.Tolerations = tc.tolerations
			inv, err := inventory.List(ctx, fake.NewClientset(a1, r1, pod), "")
			if err != nil {
				t.Fatal(err)
			}
			e := inv.Eligible(containerOf(t, inv, "p"))
			if got := nodeNames(e.Nodes); got != tc.nodes {
				t.Errorf("nodes %q, want %q (%s)", got, tc.nodes, e.Why)
			}
			if !strings.Contains(e.Why, tc.why) {
				t.Errorf("why %q does not say %q", e.Why, tc.why)
			}
		})
	}
}

// A node stripped by SlimNode gives the inventory what the whole node
// gives: its platform, labels, taints and the digests of its image cache.
func TestSlimNodeKeepsWhatInventoryReads(t *testing.T) {
	const d = "sha256:0123456789012345678901234567890123456789012345678901234567890123"
	for _, tc := range []struct {
		name     string
		fromInfo bool
	}{{"platform from labels", false}, {"platform from nodeInfo", true}} {
		t.Run(tc.name, func(t *testing.T) {
			n := node("n1", "arm64", map[string]string{"pool": "gpu"}, tc.fromInfo)
			n.Annotations = map[string]string{"big": strings.Repeat("x", 1000)}
			n.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			n.Status.Images = []corev1.ContainerImage{
				{Names: []string{"registry.example/app@" + d, "registry.example/app:v1"}, SizeBytes: 1 << 20},
				{Names: []string{"registry.example/tagonly:v1"}},
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			slim := n.DeepCopy()
			inventory.SlimNode(slim)
			whole := inventory.FromObjects(inventory.Objects{Nodes: []corev1.Node{*n}})
			got := inventory.FromObjects(inventory.Objects{Nodes: []corev1.Node{*slim}})
			if !reflect.DeepEqual(got.NodeImages, whole.NodeImages) || len(got.NodeImages) != 1 {
				t.Errorf("node images %v, want %v", got.NodeImages, whole.NodeImages)
			}
			if len(got.Nodes) != 1 || got.Nodes[0].Platform != "linux/arm64" || !reflect.DeepEqual(got.Nodes[0].Labels, whole.Nodes[0].Labels) {
				t.Errorf("nodes %+v, want %+v", got.Nodes, whole.Nodes)
			}
			c := inventory.Container{Container: "app", Node: "other"}
			if a, b := got.Eligible(c), whole.Eligible(c); a.Why != b.Why || len(a.Nodes) != len(b.Nodes) {
				t.Errorf("eligible %+v, want %+v", a, b)
			}
			if slim.Annotations != nil || slim.Status.Conditions != nil || len(slim.Status.Images) != 1 || len(slim.Status.Images[0].Names) != 1 {
				t.Errorf("not stripped: %+v", slim)
			}
		})
	}
}
