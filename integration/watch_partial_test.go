//go:build integration

package integration

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
)

// barePod creates pod name, of no controller, on node-a running image
// at digest, as a kubelet reports it.
func (r *watchRig) barePod(t *testing.T, name, image, digest string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{
			{Name: "relay", Image: image, ImagePullPolicy: corev1.PullAlways}}},
		Status: restartedStatus("relay", image, r.imageID(repoName(image), digest), 0, "", 0),
	}
	p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{}
	if _, err := kubeapi.CreatePods(t.Context(), r.cs, []*corev1.Pod{p}, 1); err != nil {
		t.Fatal(err)
	}
}

// podsWithSeries says which of pods have a series of family name (a bare
// pod is its own workload: owner_name, or workload, is its name).
func podsWithSeries(all []series, name string, pods ...string) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if len(find(all, name, map[string]string{"owner_name": p}))+len(find(all, name, map[string]string{"workload": p})) > 0 {
			out[p] = true
		}
	}
	return out
}

// TestWatchPartialWalkKeepsSeries: two bare pods run relay:latest, the tag
// moves in the real registry, a third pod starts on the new digest. The
// debounced walk of the new digest keeps the series of the first two:
// regcheck_container_image_available and regcheck_use_findings exist for
// all three pods after it.
func TestWatchPartialWalkKeepsSeries(t *testing.T) {
	r := newWatchRig(t)
	image := r.ref("relay", "latest")
	d1 := pushSingle(t, image, "relay v1")
	r.barePod(t, "relay-a", image, d1)
	r.barePod(t, "relay-b", image, d1)
	w := r.startWatcher(t, nil, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	pods := []string{"relay-a", "relay-b", "relay-c"}
	waitSeries := func(what string, ok func([]series) bool) ([]series, []byte) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			all, text := w.scrape(t)
			if ok(all) {
				return all, text
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s:\n%s\n%s", what, text, w.tail())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitSeries("the first walk", func(all []series) bool {
		return len(podsWithSeries(all, "regcheck_container_image_available", pods...)) == 2
	})

	d2 := pushSingle(t, image, "relay v2") // the tag moved
	r.barePod(t, "relay-c", image, d2)
	all, text := waitSeries("the walk of the new digest", func(all []series) bool {
		return podsWithSeries(all, "regcheck_container_image_available", "relay-c")["relay-c"]
	})
	for _, fam := range []string{"regcheck_container_image_available", "regcheck_use_findings"} {
		if got := podsWithSeries(all, fam, pods...); len(got) != 3 {
			t.Errorf("%s after the debounced walk: series for %v, want all of %v\n%s", fam, got, pods, text)
		}
	}
	for _, p := range pods {
		if v := metric(all, "regcheck_container_image_available", map[string]string{"owner_name": p}); v != 1 {
			t.Errorf("regcheck_container_image_available of %s = %v, want 1 (both digests pull)", p, v)
		}
	}
}
