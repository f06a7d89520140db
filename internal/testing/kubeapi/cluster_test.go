package kubeapi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestStartMissingBinaries(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), t.TempDir(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), EtcdBinary) || !strings.Contains(err.Error(), "hack/build-bins.sh") {
		t.Errorf("Start without binaries = %v; want an error naming the binary and how to build it", err)
	}
}

// TestStart starts the real binaries when they are built (the integration
// tests require them; this unit test only skips).
func TestStart(t *testing.T) {
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
	if c.Config.TLSClientConfig.Insecure || len(c.Config.TLSClientConfig.CAData) == 0 {
		t.Errorf("admin config does not verify the serving certificate")
	}
	// The kubeconfig file works as the CLI would load it.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// A ServiceAccount token authenticates (and, without RBAC, is forbidden).
	if err := (Scenario{Namespace: "t"}).Apply(ctx, cs); err != nil {
		t.Fatal(err)
	}
	saCfg, _, err := c.ServiceAccountConfig(ctx, "t", "default")
	if err != nil {
		t.Fatal(err)
	}
	_, err = kubernetes.NewForConfigOrDie(saCfg).CoreV1().Pods("t").List(ctx, metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), `"system:serviceaccount:t:default" cannot list resource "pods"`) {
		t.Errorf("list as the default ServiceAccount = %v; want forbidden for that user", err)
	}
	c.Stop()
	c.Stop()
	if !c.apiserver.exited() || !c.etcd.exited() {
		t.Errorf("processes still running after Stop")
	}
}
