//go:build integration

package integration

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// TestClusterPlatforms: the real kube-apiserver with an amd64 and an arm64
// Node, and the real docker/distribution 2.8.3 after its own GC, which
// deletes the untagged arm64 child of partial:v1 and keeps its tagged amd64
// child. The same image is broken, at-risk or ok by the nodes its pods may
// run on.
func TestClusterPlatforms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx)
	reg := startEmpty(t, registry.V2)
	digest := map[string]string{}
	for _, prefix := range []string{"amd/", "both/", "arm/"} {
		imgs, err := fixture.Push(ctx, reg.Host(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range imgs {
			if im.Name == "partial" {
				digest[prefix] = im.Digest.String()
			}
		}
	}
	collect(t, reg)

	for _, n := range []struct{ name, arch string }{{"amd-1", "amd64"}, {"arm-1", "arm64"}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": n.arch}}}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The API server taints a new node not-ready (NoSchedule) until
		// its kubelet says otherwise; no kubelet runs here: these nodes
		// are ready.
		created.Spec.Taints = nil
		if _, err := cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := "shop"
	namespaceWithSA(t, ctx, cs, ns)
	onArch := func(arch string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"kubernetes.io/arch": arch} }
	}
	ref := func(prefix string) string { return reg.Host() + "/" + prefix + "partial:v1" }
	running := func(prefix string) string { return reg.Host() + "/" + prefix + "partial@" + digest[prefix] }
	workloadWith(t, ctx, cs, ns, "amd", ref("amd/"), "IfNotPresent", "amd-1", running("amd/"), onArch("amd64"))
	workloadWith(t, ctx, cs, ns, "both", ref("both/"), "IfNotPresent", "amd-1", running("both/"), nil)
	workloadWith(t, ctx, cs, ns, "arm", ref("arm/"), "IfNotPresent", "arm-1", running("arm/"), onArch("arm64"))

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "k3s", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	code, got := clusterScan(t, kubeconfig)
	checkImages(t, got, map[string]want{
		ref("amd/"):  {types.OK, []string{"lost-for-other-platform", "mutable-reference"}},
		ref("both/"): {types.AtRisk, []string{"lost-for-some-nodes", "mutable-reference"}},
		ref("arm/"):  {types.Broken, []string{"child-missing"}},
	})
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want 1: the arm64-only workload's image is broken", code)
	}
	if im := got[ref("both/")]; im != nil {
		f := finding(im, types.LostForSomeNodes)
		if f == nil || !strings.Contains(f.Message, "node arm-1 (linux/arm64) cannot pull it") || !strings.Contains(f.Message, "node amd-1 (linux/amd64) still can") {
			t.Errorf("lost-for-some-nodes does not name the nodes: %+v", f)
		}
		if len(im.Uses) != 1 || len(im.Uses[0].Platforms) != 2 || !strings.Contains(im.Uses[0].PlatformsWhy, "every node (2)") {
			t.Errorf("use platforms: %+v", im.Uses)
		}
	}
	if im := got[ref("amd/")]; im != nil {
		if u := im.Uses; len(u) != 1 || len(u[0].Platforms) != 1 || u[0].Platforms[0].Platform != "linux/amd64" || !strings.Contains(u[0].PlatformsWhy, "1 of 2 nodes") {
			t.Errorf("amd64 use: platforms %+v, why %q", u, u[0].PlatformsWhy)
		}
	}
}

// TestClusterConditionTaints: the real kube-apiserver with an amd64 and an
// arm64 Node that keep the not-ready taint the API server adds at creation
// (no kubelet runs here, no node lifecycle controller removes it) and carry
// the taints of an outage, a drain and disk pressure; the real 2.8.3 after
// its GC, which deleted partial:v1's untagged arm64 child. A Deployment
// pinned to arm64 by nodeSelector, scaled to zero (its next pod is placed
// anew), cannot start: broken. Before, no node passed the taint filter, the
// nodeSelector was dropped with it, and the amd64 node "could still pull
// it": at-risk. On the same nodes, references that name one platform's
// manifest: the fixture's amd64-only single:v1 on a Deployment pinned to
// arm64 is broken (platform-mismatch), partial:v1-amd64 (the index's amd64
// child, tagged) on a Deployment free to run on both at-risk, naming
// partial:v1's index to pin instead; before, both were ok.
func TestClusterConditionTaints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx)
	reg := startEmpty(t, registry.V2)
	if _, err := fixture.Push(ctx, reg.Host(), "arm/"); err != nil {
		t.Fatal(err)
	}
	imgs, err := fixture.Push(ctx, reg.Host(), "both/")
	if err != nil {
		t.Fatal(err)
	}
	digest := "" // partial:v1's index
	for _, im := range imgs {
		if im.Name == "partial" {
			digest = im.Digest.String()
		}
	}
	collect(t, reg)

	conditions := map[string][]corev1.Taint{
		"amd-1": {{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}, {Key: "node.kubernetes.io/disk-pressure", Effect: corev1.TaintEffectNoSchedule}},
		"arm-1": {{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}, {Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}},
	}
	for _, n := range []struct{ name, arch string }{{"amd-1", "amd64"}, {"arm-1", "arm64"}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": n.arch}}}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(created.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "node.kubernetes.io/not-ready" }) {
			t.Fatalf("the API server did not taint node %s not-ready: %+v", n.name, created.Spec.Taints)
		}
		created.Spec.Taints = append(created.Spec.Taints, conditions[n.name]...)
		created.Spec.Unschedulable = n.name == "arm-1" // cordoned
		if _, err := cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := "shop"
	namespaceWithSA(t, ctx, cs, ns)
	ref := func(prefix string) string { return reg.Host() + "/" + prefix + "partial:v1" }
	single, amdChild := reg.Host()+"/arm/single:v1", reg.Host()+"/both/partial:v1-amd64"
	onArm := map[string]string{"kubernetes.io/arch": "arm64"}
	for _, d := range []struct {
		name, image string
		selector    map[string]string
	}{{"arm", ref("arm/"), onArm}, {"both", ref("both/"), nil}, {"single-on-arm", single, onArm}, {"amd-child", amdChild, nil}} {
		labels := map[string]string{"app": d.name}
		zero := int32(0)
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{NodeSelector: d.selector, Containers: []corev1.Container{{Name: d.name, Image: d.image}}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "k3s", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	code, got := clusterScan(t, kubeconfig)
	checkImages(t, got, map[string]want{
		ref("arm/"):  {types.Broken, []string{"child-missing"}},
		ref("both/"): {types.AtRisk, []string{"lost-for-some-nodes", "mutable-reference"}},
		single:       {types.Broken, []string{"platform-mismatch"}},
		amdChild:     {types.AtRisk, []string{"mutable-reference", "platform-mismatch"}},
	})
	if code != cli.ExitFindings {
		t.Errorf("exit %d, want 1: the arm64-only workload's image is broken", code)
	}
	if im := got[single]; im != nil {
		if f := finding(im, types.PlatformMismatch); f == nil || f.Severity != types.SeverityCritical ||
			!strings.Contains(f.Message, "for linux/amd64: node arm-1 (linux/arm64) cannot run it") {
			t.Errorf("single:v1 on arm64: %+v", f)
		}
	}
	if im := got[amdChild]; im != nil {
		f := finding(im, types.PlatformMismatch)
		if f == nil || f.Severity != types.SeverityWarning || !strings.Contains(f.Message, "node arm-1 (linux/arm64) cannot run it") ||
			!strings.Contains(f.Message, "while node amd-1 (linux/amd64) can") || !strings.Contains(f.Message, "pin "+reg.Host()+"/both/partial@"+digest) {
			t.Errorf("partial:v1-amd64 on both: %+v, want the index %s named", f, digest)
		}
	}
	if im := got[ref("arm/")]; im != nil {
		if u := im.Uses; len(u) != 1 || len(u[0].Platforms) != 1 || u[0].Platforms[0].Platform != "linux/arm64" ||
			!strings.Contains(u[0].PlatformsWhy, "1 of 2 nodes") || !strings.Contains(u[0].PlatformsWhy, "condition taints not counted: node.kubernetes.io/not-ready, node.kubernetes.io/unreachable, node.kubernetes.io/unschedulable") {
			t.Errorf("arm64 use: %+v", u)
		}
	}
	if im := got[ref("both/")]; im != nil {
		if u := im.Uses; len(u) != 1 || len(u[0].Platforms) != 2 || !strings.Contains(u[0].PlatformsWhy, "every node (2)") {
			t.Errorf("unpinned use: %+v", u)
		}
	}
}
