package cluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/types"
)

func TestNarrowToNodes(t *testing.T) {
	amd := types.NodePlatform{Platform: "linux/amd64", Nodes: []string{"a1", "a2"}}
	arm := types.NodePlatform{Platform: "linux/arm64", Nodes: []string{"r1"}}
	lost := func(code types.Code, platform string) types.Finding {
		return types.NewFinding(code, "sha256:"+strings.Repeat("1", 64), platform, "the %s manifest is gone", platform)
	}
	use := func(ps ...types.NodePlatform) types.Use { return types.Use{Source: "cluster", Platforms: ps} }
	for _, tc := range []struct {
		name     string
		uses     []types.Use
		findings []types.Finding
		want     []types.Code
		verdict  types.Verdict
		says     string // in the first finding's message
	}{
		{"arm64 child lost, amd64 nodes only", []types.Use{use(amd)}, []types.Finding{lost(types.ChildMissing, "linux/arm64/v8")},
			[]types.Code{types.LostForOtherPlatform}, types.OK, "no node the workloads may run on is linux/arm64/v8 (they run linux/amd64)"},
		{"a blob of the arm64 child lost, amd64 nodes only", []types.Use{use(amd)}, []types.Finding{lost(types.BlobMissing, "linux/arm64")},
			[]types.Code{types.LostForOtherPlatform}, types.OK, "(blob-missing)"},
		{"arm64 child lost, nodes of both", []types.Use{use(amd, arm)}, []types.Finding{lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.LostForSomeNodes}, types.AtRisk, "node r1 (linux/arm64) cannot pull it, while node a1 (linux/amd64), node a2 (linux/amd64) still can"},
		{"amd64 child lost, amd64 nodes", []types.Use{use(amd)}, []types.Finding{lost(types.ChildMissing, "linux/amd64")},
			[]types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"both children lost, nodes of both", []types.Use{use(amd, arm)}, []types.Finding{lost(types.ChildMissing, "linux/amd64"), lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.ChildMissing, types.ChildMissing}, types.Broken, "gone"},
		{"arm64 lost: one use on arm64 only, one on amd64", []types.Use{use(amd), use(arm)}, []types.Finding{lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a DaemonSet on nodes of both: its arm64 pods cannot start", []types.Use{{Source: "cluster", Kind: "DaemonSet", Platforms: []types.NodePlatform{amd, arm}}},
			[]types.Finding{lost(types.ChildMissing, "linux/arm64")}, []types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a pod with Always on the arm64 node: its next start pulls there", []types.Use{{Source: "cluster", Kind: "Deployment", Pod: "p", Node: "r1", PullPolicy: "Always", Platforms: []types.NodePlatform{amd, arm}}},
			[]types.Finding{lost(types.ChildMissing, "linux/arm64")}, []types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a pod with IfNotPresent on the arm64 node: the node keeps what runs", []types.Use{{Source: "cluster", Kind: "Deployment", Pod: "p", Node: "r1", PullPolicy: "IfNotPresent", Platforms: []types.NodePlatform{amd, arm}}},
			[]types.Finding{lost(types.ChildMissing, "linux/arm64")}, []types.Code{types.LostForSomeNodes}, types.AtRisk, "node r1 (linux/arm64) cannot pull it"},
		{"nodes unknown: every platform is required", []types.Use{use()}, []types.Finding{lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a loss with no platform is everyone's", []types.Use{use(amd)}, []types.Finding{lost(types.ManifestMissing, "")},
			[]types.Code{types.ManifestMissing}, types.Broken, "gone"},
		{"a fault under a platform stays a fault", []types.Use{use(amd)}, []types.Finding{lost(types.Unreachable, "linux/arm64")},
			[]types.Code{types.Unreachable}, types.Unknown, "gone"},
		// The mutation audit's survivors: each row fails when its bug is put back.
		{"arm64/v8 child lost, arm64 nodes only: the node pulls that variant", []types.Use{use(arm)}, []types.Finding{lost(types.ChildMissing, "linux/arm64/v8")},
			[]types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"arm/v7 child lost, an arm64 node: another architecture", []types.Use{use(arm)}, []types.Finding{lost(types.ChildMissing, "linux/arm/v7")},
			[]types.Code{types.LostForOtherPlatform}, types.OK, "linux/arm/v7"},
		{"a pod with Always on an amd64 node needs only its own node's platform", []types.Use{{Source: "cluster", Kind: "Deployment", Pod: "p", Node: "a1", PullPolicy: "Always", Platforms: []types.NodePlatform{amd, arm}}},
			[]types.Finding{lost(types.ChildMissing, "linux/arm64")}, []types.Code{types.LostForSomeNodes}, types.AtRisk, "node r1 (linux/arm64) cannot pull it"},
		{"an attestation lost stays at-risk", []types.Use{use(amd)}, []types.Finding{lost(types.AttestationMissing, "unknown/unknown")},
			[]types.Code{types.AttestationMissing}, types.AtRisk, "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := &types.Image{Reference: "reg.example/app:v1", Uses: tc.uses, Findings: append([]types.Finding(nil), tc.findings...)}
			im.UpdateVerdict()
			narrowToNodes(im)
			var got []types.Code
			for _, f := range im.Findings {
				got = append(got, f.Code)
			}
			if strings.Join(codeStrings(got), ",") != strings.Join(codeStrings(tc.want), ",") {
				t.Errorf("codes %v, want %v", got, tc.want)
			}
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", im.Verdict, tc.verdict)
			}
			if !strings.Contains(im.Findings[0].Message, tc.says) {
				t.Errorf("message %q does not say %q", im.Findings[0].Message, tc.says)
			}
			if im.Findings[0].Advice == "" {
				t.Error("no advice")
			}
		})
	}
}

func codeStrings(cs []types.Code) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// TestUsePlatforms: a use requires the platforms of the nodes its pod may
// run on when it restarts; condition taints do not move it, and a selector
// no node matches requires every platform, saying why.
func TestUsePlatforms(t *testing.T) {
	notReady := []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}, {Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}}
	node := func(name, arch string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{inventory.LabelOS: "linux", inventory.LabelArch: arch}},
			Spec: corev1.NodeSpec{Taints: notReady}}
	}
	pod := func(name string, selector map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "app", Image: "reg.example/app:v1"}}}}
	}
	inv, err := inventory.List(context.Background(), k8sfake.NewClientset(node("a1", "amd64"), node("r1", "arm64"),
		pod("arm", map[string]string{inventory.LabelArch: "arm64"}), pod("gpu", map[string]string{"pool": "gpu"})), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ pod, platforms, why string }{
		{"arm", "linux/arm64=r1", "1 of 2 nodes, by its nodeSelector, required node affinity and tolerations: r1; condition taints not counted: node.kubernetes.io/not-ready, node.kubernetes.io/unreachable"},
		{"gpu", "", "every platform counts"},
	} {
		for _, c := range inv.Containers {
			if c.Pod != tc.pod {
				continue
			}
			var u types.Use
			usePlatforms(inv, c, &u)
			var got []string
			for _, p := range u.Platforms {
				got = append(got, p.Platform+"="+strings.Join(p.Nodes, ","))
			}
			if strings.Join(got, " ") != tc.platforms || !strings.Contains(u.PlatformsWhy, tc.why) {
				t.Errorf("%s: platforms %q why %q, want %q and %q", tc.pod, got, u.PlatformsWhy, tc.platforms, tc.why)
			}
		}
	}
}

// TestUsePlatformsUnknownNode: a node whose platform is unknown (no
// kubernetes.io/os or arch label, no nodeInfo) may need any platform, so a
// use that may run there requires every one; a use kept off it by its
// nodeSelector requires only its own nodes' platforms.
func TestUsePlatformsUnknownNode(t *testing.T) {
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	pod := func(name string, selector map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "app", Image: "reg.example/app:v1"}}}}
	}
	inv, err := inventory.List(context.Background(), k8sfake.NewClientset(
		node("a1", map[string]string{inventory.LabelOS: "linux", inventory.LabelArch: "amd64", "pool": "web"}),
		node("r1", map[string]string{inventory.LabelOS: "linux", inventory.LabelArch: "arm64", "pool": "web"}),
		node("u1", map[string]string{"pool": "batch"}),
		pod("anywhere", nil), pod("web", map[string]string{"pool": "web"}), pod("batch", map[string]string{"pool": "batch"})), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod, platforms string
		lost           types.Code // of a lost linux/arm64 child, as narrowToNodes says it
	}{
		{"anywhere", "", types.ChildMissing},
		{"web", "linux/amd64=a1 linux/arm64=r1", types.LostForSomeNodes},
		{"batch", "", types.ChildMissing},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			var u types.Use
			for _, c := range inv.Containers {
				if c.Pod == tc.pod {
					u = types.Use{Source: "cluster", Kind: "Pod", Pod: c.Pod}
					usePlatforms(inv, c, &u)
				}
			}
			var got []string
			for _, p := range u.Platforms {
				got = append(got, p.Platform+"="+strings.Join(p.Nodes, ","))
			}
			if strings.Join(got, " ") != tc.platforms {
				t.Errorf("platforms %q (why %q), want %q", got, u.PlatformsWhy, tc.platforms)
			}
			im := &types.Image{Reference: "reg.example/app:v1", Uses: []types.Use{u}, Findings: []types.Finding{
				types.NewFinding(types.ChildMissing, "sha256:"+strings.Repeat("2", 64), "linux/arm64", "the linux/arm64 manifest is gone")}}
			im.UpdateVerdict()
			narrowToNodes(im)
			if im.Findings[0].Code != tc.lost {
				t.Errorf("a lost linux/arm64 child is %s, want %s", im.Findings[0].Code, tc.lost)
			}
		})
	}
}
