package watch

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func specPod(image string, tolerationSeconds int64) *corev1.Pod {
	s := tolerationSeconds
	return &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Args: []string{"--verbose"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
		Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s}},
	}}
}

// Pods whose slimmed containers or tolerations are equal share one slice;
// pods that differ in any field do not; a shared slice cannot be appended
// into another pod's.
func TestSlimSharesSpecSlices(t *testing.T) {
	t.Parallel()
	slimmed := func(p *corev1.Pod) *corev1.Pod {
		if _, err := slim(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := slimmed(specPod("reg.example/app:v1", 300)), slimmed(specPod("reg.example/app:v1", 300))
	other := slimmed(specPod("reg.example/app:v2", 60))
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] {
		t.Error("equal specs: containers or tolerations not shared")
	}
	if &a.Spec.Containers[0] == &other.Spec.Containers[0] || &a.Spec.Tolerations[0] == &other.Spec.Tolerations[0] {
		t.Error("another image or toleration period shares a slice")
	}
	if got := a.Spec.Containers[0]; got.Image != "reg.example/app:v1" || got.Name != "app" || got.ImagePullPolicy != corev1.PullIfNotPresent || got.Args != nil {
		t.Errorf("slimmed container %+v", got)
	}
	if got := *other.Spec.Tolerations[0].TolerationSeconds; got != 60 {
		t.Errorf("tolerationSeconds %d, want 60", got)
	}
	grown := append(a.Spec.Containers, corev1.Container{Name: "extra"})
	if &grown[0] == &a.Spec.Containers[0] || len(b.Spec.Containers) != 1 {
		t.Error("append wrote into the shared slice")
	}
}

// The shared slices stay bounded whatever the number of distinct specs.
func TestSharedSlicesBound(t *testing.T) {
	t.Parallel()
	c := &sharedSlices[int]{max: 8}
	for i := range 100 {
		c.get(fmt.Sprint(i), []int{i})
		if len(c.m) > c.max {
			t.Fatalf("%d held, bound %d", len(c.m), c.max)
		}
	}
	if got := c.get("99", []int{-1}); got[0] != 99 {
		t.Errorf("get after the bound: %v, want the held [99]", got)
	}
	if got := c.get("none", nil); got != nil {
		t.Errorf("empty slice: %v, want nil", got)
	}
}
