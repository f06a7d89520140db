package kubeapi

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestRestartAPIServer creates pods with their status in bulk, watches
// them, restarts kube-apiserver: the watch ends, the server answers on the
// same URL with the same objects (same etcd), and a status patch lands.
func TestRestartAPIServer(t *testing.T) {
	bin := DefaultBinDir()
	for _, b := range []string{EtcdBinary, APIServerBinary} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Skipf("no %s in %s (hack/build-bins.sh cluster)", b, bin)
		}
	}
	ctx := t.Context()
	c, err := Start(ctx, t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	cs := kubernetes.NewForConfigOrDie(c.BulkConfig())
	if err := (Scenario{Namespace: "bulk"}).Apply(ctx, cs); err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range 20 {
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bulk", Name: fmt.Sprintf("p-%02d", i)},
			Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("c", "nginx:1.27", "docker.io/library/nginx@"+DigestNginx, 0)}},
		})
	}
	if n, err := CreatePods(ctx, cs, pods, 4); err != nil || n != len(pods) {
		t.Fatalf("CreatePods = %d, %v; want %d", n, err, len(pods))
	}
	got, err := cs.CoreV1().Pods("bulk").Get(ctx, "p-07", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status.ContainerStatuses; len(st) != 1 || st[0].ImageID != "docker.io/library/nginx@"+DigestNginx {
		t.Fatalf("status after CreatePods = %+v", got.Status)
	}
	w, err := cs.CoreV1().Pods("bulk").Watch(ctx, metav1.ListOptions{ResourceVersion: got.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	url := c.URL
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if c.URL != url {
		t.Errorf("URL %s after the restart, was %s", c.URL, url)
	}
	select {
	case _, open := <-w.ResultChan():
		for open {
			_, open = <-w.ResultChan()
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watch is still open after the API server restarted")
	}
	st := got.Status
	st.ContainerStatuses[0].ImageID = "docker.io/library/nginx@" + DigestNginxV2
	st.ContainerStatuses[0].RestartCount = 1
	if err := PatchStatus(ctx, cs, "bulk", "p-07", st); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Pods("bulk").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(pods)+len(Scenario{}.Pods()) {
		t.Errorf("%d pods after the restart, want %d", len(list.Items), len(pods)+len(Scenario{}.Pods()))
	}
	for _, p := range list.Items {
		if p.Name == "p-07" && (p.Status.ContainerStatuses[0].ImageID != st.ContainerStatuses[0].ImageID || p.Status.ContainerStatuses[0].RestartCount != 1) {
			t.Errorf("p-07's status after the patch: %+v", p.Status.ContainerStatuses)
		}
	}
}
