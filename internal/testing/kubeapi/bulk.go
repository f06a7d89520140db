package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BulkConfig is the admin client config with client-side rate limits
// raised high enough that creating thousands of pods is bounded by the API
// server, not by the client.
func (c *Cluster) BulkConfig() *rest.Config {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	return cfg
}

// PatchStatus replaces a pod's status with st through the pods/status
// subresource, as a JSON merge patch: no read before, so no conflict, and
// the container status lists are replaced whole (a merge patch does not
// merge lists). This is what a kubelet's status update looks like to a
// watcher; there is no kubelet here.
func PatchStatus(ctx context.Context, cs kubernetes.Interface, namespace, name string, st corev1.PodStatus) error {
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("patching the status of pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// CreatePods creates every pod, then writes the status it holds with
// PatchStatus (the API server drops a status given on create), workers
// pods at a time. It stops at the first error or when ctx ends and returns
// how many pods were created with their status.
func CreatePods(ctx context.Context, cs kubernetes.Interface, pods []*corev1.Pod, workers int) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan *corev1.Pod)
	var (
		mu    sync.Mutex
		done  int
		first error
		wg    sync.WaitGroup
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				err := createWithStatus(ctx, cs, p)
				mu.Lock()
				if err != nil && first == nil {
					first = err
					cancel()
				} else if err == nil {
					done++
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, p := range pods {
		select {
		case next <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil && done < len(pods) {
		first = ctx.Err()
	}
	return done, first
}

func createWithStatus(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) error {
	st := p.Status
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return PatchStatus(ctx, cs, p.Namespace, p.Name, st)
}
