//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// pushSingle pushes fixture.Single(seed) to ref and returns its digest.
func pushSingle(t testing.TB, ref, seed string) string {
	t.Helper()
	d, err := fixture.PushSingle(context.Background(), ref, seed)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// workload creates a Deployment, its ReplicaSet and one running Pod on node
// whose container status reports imageID, as a kubelet would.
func workload(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, nm, image, policy, node, imageID string) {
	t.Helper()
	workloadWith(t, ctx, cs, ns, nm, image, policy, node, imageID, nil)
}

// workloadWith is workload with the pod spec changed by mutate first (a
// nodeSelector, an affinity), in the template and the pod alike.
func workloadWith(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, nm, image, policy, node, imageID string, mutate func(*corev1.PodSpec)) {
	t.Helper()
	labels := map[string]string{"app": nm}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: nm, Image: image, ImagePullPolicy: corev1.PullPolicy(policy)}}}
	if mutate != nil {
		mutate(&spec)
	}
	dep, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: nm, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	isTrue := true
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: nm + "-5d9c8", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: &isTrue}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podSpec := spec
	podSpec.NodeName = node
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rs.Name + "-x7k2p", Namespace: ns, Labels: labels, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &isTrue}}},
		Spec: podSpec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: nm, Image: image, ImageID: imageID, Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Date(2026, 3, 20, 15, 58, 0, 0, time.UTC))}},
	}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// clusterScan runs `regcheck scan --cluster -A` as a user would and returns
// the exit code and the JSON document.
func clusterScan(t *testing.T, kubeconfig string, extra ...string) (int, map[string]*types.Image) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"scan", "--cluster", "-A", "--kubeconfig", kubeconfig, "-o", "json"}, extra...)
	code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb}, args)
	var doc report.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("exit %d, output not JSON: %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	byRef := byReference(doc)
	return code, byRef
}

type want struct {
	verdict types.Verdict
	codes   []string // sorted finding codes
}

func checkImages(t *testing.T, got map[string]*types.Image, wants map[string]want) {
	t.Helper()
	for ref, w := range wants {
		im, ok := got[ref]
		if !ok {
			t.Errorf("%s: not in the report", ref)
			continue
		}
		var codes []string
		for _, f := range im.Findings {
			codes = append(codes, string(f.Code))
		}
		sort.Strings(codes)
		if im.Verdict != w.verdict || !slices.Equal(codes, w.codes) {
			t.Errorf("%s: %s %v, want %s %v", ref, im.Verdict, codes, w.verdict, w.codes)
			for _, f := range im.Findings {
				t.Logf("    %s %s: %s", f.Severity, f.Code, f.Message)
			}
		}
	}
	if len(got) != len(wants) {
		t.Errorf("report has %d images, want %d", len(got), len(wants))
	}
}

func finding(im *types.Image, code types.Code) *types.Finding {
	for i := range im.Findings {
		if im.Findings[i].Code == code {
			return &im.Findings[i]
		}
	}
	return nil
}

// TestClusterScan: a real kube-apiserver whose pods report running digests,
// and a real docker/distribution 2.8.3 registry, before and after its GC.
// Before: drift (a tag re-pushed after the pod started), pull-always on a
// mutable tag, a pin no tag reaches. After: the GC-broken index, running
// digests that live only in node caches, the deleted pin.
func TestClusterScan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx)
	reg, imgs := startRegistry(t, registry.V2)
	host := reg.Host()
	var buildx fixture.Image
	for _, im := range imgs {
		if im.Name == "buildx" {
			buildx = im
		}
	}
	ref := func(repo, rest string) string { return host + "/" + repo + rest }

	coturnA := pushSingle(t, ref("c/coturn", ":latest"), "coturn 4.17")
	rollbackC := pushSingle(t, ref("c/rollback", ":v1"), "rollback v1, first build")
	pinnedP := pushSingle(t, ref("c/pinned", ":v1"), "pinned v1")
	orphanO1 := pushSingle(t, ref("c/orphanpin", ":v1"), "orphan pin, first build")

	ns := "dam-prod"
	namespaceWithSA(t, ctx, cs, ns)
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Images = []corev1.ContainerImage{
		{Names: []string{ref("c/coturn", "@"+coturnA)}, SizeBytes: 1 << 20},
		{Names: []string{ref("c/rollback", "@"+rollbackC), ref("c/rollback", ":v1")}, SizeBytes: 1 << 20},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	workload(t, ctx, cs, ns, "signaling", ref("gc/buildx", ":v1"), "IfNotPresent", "node-b", ref("gc/buildx", "@"+buildx.Digest.String()))
	workload(t, ctx, cs, ns, "coturn", ref("c/coturn", ":latest"), "Always", "node-a", "docker-pullable://"+ref("c/coturn", "@"+coturnA))
	workload(t, ctx, cs, ns, "rollback", ref("c/rollback", ":v1"), "IfNotPresent", "node-a", ref("c/rollback", "@"+rollbackC))
	workload(t, ctx, cs, ns, "pinned", ref("c/pinned", ":v1@"+pinnedP), "IfNotPresent", "node-a", ref("c/pinned", "@"+pinnedP))
	workload(t, ctx, cs, ns, "orphanpin", ref("c/orphanpin", ":v1@"+orphanO1), "IfNotPresent", "node-a", ref("c/orphanpin", "@"+orphanO1))

	// Upstream moves on after the pods started.
	coturnB := pushSingle(t, ref("c/coturn", ":latest"), "coturn 4.18 (rejects --no-dtls)")
	pushSingle(t, ref("c/rollback", ":v1"), "rollback v1, rebuilt")
	pushSingle(t, ref("c/orphanpin", ":v1"), "orphan pin, rebuilt")

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "k3s-prod", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}

	t.Run("before GC", func(t *testing.T) {
		code, got := clusterScan(t, kubeconfig)
		checkImages(t, got, map[string]want{
			ref("gc/buildx", ":v1"):             {types.OK, []string{"mutable-reference"}}, // a tag alone is no risk
			ref("c/coturn", ":latest"):          {types.AtRisk, []string{"drift", "mutable-reference", "pull-always-mutable"}},
			ref("c/rollback", ":v1"):            {types.AtRisk, []string{"drift", "mutable-reference"}},
			ref("c/pinned", ":v1@"+pinnedP):     {types.OK, nil},
			ref("c/orphanpin", ":v1@"+orphanO1): {types.AtRisk, []string{"pinned-digest-untagged"}},
		})
		if code != cli.ExitClean {
			t.Errorf("exit %d, want 0: nothing is broken", code)
		}
		if im := got[ref("c/coturn", ":latest")]; im != nil {
			d := finding(im, "drift")
			if d == nil || d.Severity != types.SeverityHigh || d.Digest != coturnB || !bytes.Contains([]byte(d.Message), []byte(coturnA)) {
				t.Errorf("coturn drift: %+v; want high, naming %s (running) and %s (tag now)", d, coturnA, coturnB)
			}
		}
		if im := got[ref("c/rollback", ":v1")]; im != nil {
			if d := finding(im, "drift"); d == nil || d.Severity != types.SeverityWarning {
				t.Errorf("rollback drift (IfNotPresent, pinned tag): %+v, want warning", d)
			}
		}
		if code, _ := clusterScan(t, kubeconfig, "--fail-on", "high"); code != cli.ExitFindings {
			t.Errorf("--fail-on high: exit %d, want 1 (drift on pull-always is high)", code)
		}
	})

	// regcheck record, as a user runs it: a snapshot, then the coturn pod
	// restarts onto the new digest, then --diff names exactly that change.
	t.Run("record", func(t *testing.T) {
		history := filepath.Join(t.TempDir(), "history.json")
		run := func(args ...string) []byte {
			t.Helper()
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb},
				append([]string{"record", "-A", "--kubeconfig", kubeconfig, "--out", history, "-o", "json"}, args...))
			if code != cli.ExitClean {
				t.Fatalf("record %v: exit %d\n%s", args, code, errb.String())
			}
			return out.Bytes()
		}
		var first struct {
			Cluster    string
			Containers int
		}
		if err := json.Unmarshal(run(), &first); err != nil {
			t.Fatal(err)
		}
		if first.Cluster != "k3s-prod" || first.Containers != 5 {
			t.Fatalf("first record: cluster %q, %d containers; want k3s-prod, 5", first.Cluster, first.Containers)
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=coturn"})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("coturn pod: %v %d", err, len(pods.Items))
		}
		pod := pods.Items[0]
		pod.Status.ContainerStatuses[0].ImageID = ref("c/coturn", "@"+coturnB)
		pod.Status.ContainerStatuses[0].RestartCount = 1
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var second struct {
			Changes []struct {
				Namespace, OwnerKind, OwnerName, Container string
				From                                       []string
				To                                         string
			}
		}
		if err := json.Unmarshal(run("--diff"), &second); err != nil {
			t.Fatal(err)
		}
		if len(second.Changes) != 1 {
			t.Fatalf("record --diff: %d changes, want 1: %+v", len(second.Changes), second.Changes)
		}
		c := second.Changes[0]
		if c.OwnerKind != "Deployment" || c.OwnerName != "coturn" || !slices.Equal(c.From, []string{coturnA}) || c.To != coturnB {
			t.Errorf("record --diff: %+v, want Deployment coturn %s -> %s", c, coturnA, coturnB)
		}
		// Put the pod back as it was for the scans below.
		pod2, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod2.Status.ContainerStatuses[0].ImageID = "docker-pullable://" + ref("c/coturn", "@"+coturnA)
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod2, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	// pin --from-cluster and --from-records pin to the digest that runs (A),
	// not to the one the tag has moved to (B): the safe choice, already on
	// the nodes.
	t.Run("pin to what runs", func(t *testing.T) {
		manifest := fmt.Sprintf(`# coturn, as deployed
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coturn
  namespace: %s
spec:
  template:
    spec:
      containers:
        - name: coturn
          image: %s # the TURN relay
          imagePullPolicy: Always
`, ns, ref("c/coturn", ":latest"))
		history := filepath.Join(t.TempDir(), "history.json")
		var out, errb bytes.Buffer
		if code := cli.Run(ctx, cli.Streams{Out: &out, Err: &errb}, []string{"record", "-A", "--kubeconfig", kubeconfig, "--out", history}); code != cli.ExitClean {
			t.Fatalf("record: exit %d\n%s", code, errb.String())
		}
		for _, source := range [][]string{
			{"--from-cluster", "-A", "--kubeconfig", kubeconfig},
			{"--from-records", history},
		} {
			dir := t.TempDir()
			file := filepath.Join(dir, "coturn.yaml")
			if err := os.WriteFile(file, []byte(manifest), 0o640); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			errb.Reset()
			args := append([]string{"pin", "--write", "--pull-policy", "IfNotPresent"}, append(source, dir)...)
			if code := cli.Run(ctx, cli.Streams{Out: &out, Err: &errb}, args); code != cli.ExitClean {
				t.Fatalf("pin %v: exit %d\n%s%s", source, code, out.String(), errb.String())
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.NewReplacer(
				ref("c/coturn", ":latest"), ref("c/coturn", ":latest@"+coturnA),
				"imagePullPolicy: Always", "imagePullPolicy: IfNotPresent").Replace(manifest)
			if string(got) != want {
				t.Errorf("pin %v wrote:\n%s\nwant:\n%s", source, got, want)
			}
		}
	})

	// gc-check with the cluster as the in-use set, before the GC: it must
	// name every in-use image and running digest the GC is about to break.
	t.Run("gc-check --cluster", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := cli.Run(ctx, cli.Streams{Out: &out, Err: &errb}, []string{"gc-check", "--storage", reg.Root,
			"--delete-untagged", "--cluster", "-A", "--kubeconfig", kubeconfig, "-o", "json"})
		if code != cli.ExitFindings {
			t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errb.String())
		}
		var rep struct{ WouldBreak []struct{ Reference string } }
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range rep.WouldBreak {
			got = append(got, e.Reference)
		}
		want := []string{
			ref("gc/buildx", ":v1"),                      // the index's children are untagged
			ref("gc/buildx", "@"+buildx.Digest.String()), // and the same index as it runs
			ref("c/coturn", "@"+coturnA),                 // the running digest, untagged since latest moved
			ref("c/rollback", "@"+rollbackC),             // likewise
			ref("c/orphanpin", ":v1@"+orphanO1),          // the pinned digest no tag reaches
			ref("c/orphanpin", "@"+orphanO1),             // and the same digest as it runs
		}
		if !sameSet(got, want) {
			t.Errorf("wouldBreak %v\nwant %v", got, want)
		}
	})

	// The registry's own GC deletes every untagged manifest: the index
	// children, the digests the tags moved away from.
	collect(t, reg)

	t.Run("after GC", func(t *testing.T) {
		code, got := clusterScan(t, kubeconfig)
		checkImages(t, got, map[string]want{
			ref("gc/buildx", ":v1"):             {types.Broken, []string{"attestation-missing", "child-missing"}},
			ref("c/coturn", ":latest"):          {types.AtRisk, []string{"drift", "mutable-reference", "pull-always-mutable", "running-digest-missing"}},
			ref("c/rollback", ":v1"):            {types.AtRisk, []string{"drift", "mutable-reference", "running-digest-missing"}},
			ref("c/pinned", ":v1@"+pinnedP):     {types.OK, nil},
			ref("c/orphanpin", ":v1@"+orphanO1): {types.Broken, []string{"manifest-missing"}},
		})
		if code != cli.ExitFindings {
			t.Errorf("exit %d, want 1", code)
		}
		for _, r := range []string{ref("c/coturn", ":latest"), ref("c/rollback", ":v1")} {
			im := got[r]
			if im == nil {
				continue
			}
			f := finding(im, "running-digest-missing")
			if f == nil || !bytes.Contains([]byte(f.Message), []byte("node-a")) {
				t.Errorf("%s: running-digest-missing %+v, want it to name node-a", r, f)
			}
		}
	})
}

// adminToken reads the admin bearer token out of the harness's config.
func adminToken(t *testing.T, kc *kubeapi.Cluster) string {
	t.Helper()
	if kc.Config.BearerToken == "" {
		t.Fatal("the kubeapi admin config has no bearer token")
	}
	return kc.Config.BearerToken
}
