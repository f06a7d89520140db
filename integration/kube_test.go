//go:build integration

package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
)

// startKube starts a real kube-apiserver (with apiserverFlags added to its
// own) and etcd for the test, stopped at its end, and returns them with an
// admin client.
func startKube(t *testing.T, ctx context.Context, apiserverFlags ...string) (*kubeapi.Cluster, kubernetes.Interface) {
	t.Helper()
	kc, err := kubeapi.Start(ctx, t.TempDir(), kubeapi.DefaultBinDir(), apiserverFlags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Stop)
	cs, err := kc.Client()
	if err != nil {
		t.Fatal(err)
	}
	return kc, cs
}

// namespaceWithSA creates namespace ns and, as there is no
// controller-manager to do it, its default service account.
func namespaceWithSA(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
