//go:build integration

package integration

import (
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
)

// rolloutRevision creates ReplicaSet rs owned by Rollout ro (uid) and its
// one running pod at digest of image, as Argo's controller and a kubelet
// would; it returns the pod's name.
func (r *watchRig) rolloutRevision(t *testing.T, ro string, uid types.UID, rs, image, digest string) string {
	t.Helper()
	ctx := t.Context()
	yes := true
	labels := map[string]string{"app": ro, "rollouts-pod-template-hash": rs}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullAlways}}}
	set, err := r.cs.AppsV1().ReplicaSets(r.ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rs, Namespace: r.ns, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: ro, UID: uid, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec.NodeName = "node-a"
	pod, err := r.cs.CoreV1().Pods(r.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rs + "-x7k2p", Namespace: r.ns, Labels: labels, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: set.Name, UID: set.UID, Controller: &yes}}},
		Spec: spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeapi.PatchStatus(ctx, r.cs, r.ns, pod.Name, restartedStatus("app", image, r.imageID("ro", digest), 0, "Completed", 0)); err != nil {
		t.Fatal(err)
	}
	return pod.Name
}

// TestWatchRolloutOwner: an Argo Rollout → ReplicaSet → Pod chain on the
// real apiserver (the Rollout CRD schemaless). The watcher and record
// keep one history for it, under Rollout/ro: no slot under the
// ReplicaSet's hash, and the next revision (another ReplicaSet) is a
// transition of the same slot.
func TestWatchRolloutOwner(t *testing.T) {
	r := newWatchRig(t)
	ctx := t.Context()
	if err := kubeapi.ApplyCRDs(ctx, r.kc.Config, filepath.Join("testdata", "inputs", "crds.yaml")); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(r.kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	image := r.ref("ro", "latest")
	d1 := pushSingle(t, image, "ro v1")
	rollout := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "ro", "namespace": r.ns},
		"spec": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": image}}}}},
	}}
	ro, err := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}).
		Namespace(r.ns).Create(ctx, rollout, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod1 := r.rolloutRevision(t, "ro", ro.GetUID(), "ro-6c9f8d7b5", image, d1)
	src := configMapHistory(r.cs, r.ns, "regcheck-history")
	w := r.startWatcher(t, []string{"--configmap", r.ns + "/regcheck-history"})
	w.waitReady(t, time.Minute)
	first, _ := waitTransition(t, src, 30*time.Second, firstSeen("ro", d1))
	if first.OwnerKind != "Rollout" || first.Pod != pod1 {
		t.Errorf("first sighting %v, want under Rollout/ro of pod %s", first, pod1)
	}
	run, err := r.runRecord(t, "regcheck-history")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range run.Entries {
		if e.OwnerKind != "Rollout" || e.OwnerName != "ro" {
			t.Errorf("record saved %s/%s, want Rollout/ro", e.OwnerKind, e.OwnerName)
		}
	}

	d2 := pushSingle(t, image, "ro v2")
	r.rolloutRevision(t, "ro", ro.GetUID(), "ro-7d8e9f0a1", image, d2)
	if err := r.cs.CoreV1().Pods(r.ns).Delete(ctx, pod1, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next, _ := waitTransition(t, src, 30*time.Second, func(tr watchTransition) bool { return tr.To == d2 })
	if next.OwnerKind != "Rollout" || next.OwnerName != "ro" || next.From != d1 {
		t.Errorf("next revision %v, want Rollout/ro from %s (one slot)", next, short(d1))
	}
	h, err := src()
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range h.Records {
		if rc.OwnerKind != "Rollout" || rc.OwnerName != "ro" {
			t.Errorf("history record under %s/%s, want Rollout/ro", rc.OwnerKind, rc.OwnerName)
		}
	}
	for _, tr := range h.Transitions {
		if tr.OwnerKind != "Rollout" {
			t.Errorf("history transition %v, want under Rollout/ro", tr)
		}
	}
}
