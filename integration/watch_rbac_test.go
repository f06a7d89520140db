//go:build integration

package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// watchRole is what the watcher reads in the rig's namespace; without
// names it is the whole set.
func watchRole(ns string, cronJobVerbs ...string) *rbacv1.Role {
	read := []string{"get", "list", "watch"}
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "watch", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: cronJobVerbs}}}
}

// TestWatchForbiddenList: a service account whose Role lacks `list
// cronjobs` leaves /readyz failing and the log naming cronjobs and list
// within 15s, instead of waiting in cache sync without a word; granting
// the verb makes the watcher ready without a restart. The Role lacks
// `watch` too: with it, client-go's watch-list (on by default since 1.35)
// syncs from a WATCH alone and kube-apiserver 1.37 asks no `list`.
func TestWatchForbiddenList(t *testing.T) {
	r := newWatchRig(t)
	ctx := t.Context()
	if _, err := r.cs.CoreV1().ServiceAccounts(r.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "watch"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.cs.RbacV1().Roles(r.ns).Create(ctx, watchRole(r.ns, "get"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.cs.RbacV1().RoleBindings(r.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "watch", Namespace: r.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "watch"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "watch", Namespace: r.ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, token, err := r.kc.ServiceAccountConfig(ctx, r.ns, "watch")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := r.kc.WriteKubeconfig(kubeconfig, "watch", token); err != nil {
		t.Fatal(err)
	}
	w := r.startWatcher(t, []string{"--out", filepath.Join(t.TempDir(), "history.json")}, "--kubeconfig", kubeconfig)

	start := time.Now()
	var body string
	for {
		if w.exited() {
			t.Fatalf("regcheck watch exited: %v\n%s", w.cmd.ProcessState, w.tail())
		}
		code, b, err := w.get("/readyz")
		logged, _ := os.ReadFile(w.log)
		if err == nil && code == http.StatusOK {
			t.Fatalf("/readyz is 200 while list cronjobs is denied:\n%s", w.tail())
		}
		if err == nil && code == http.StatusServiceUnavailable && strings.Contains(string(b), "list cronjobs denied") &&
			deniedLogged(string(logged)) {
			body = string(b)
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("after 15s /readyz says %d %q and the log does not name list on cronjobs:\n%s", code, b, w.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("denied named in %v; /readyz: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(body))

	if _, err := r.cs.RbacV1().Roles(r.ns).Update(ctx, watchRole(r.ns, "get", "list", "watch"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	w.waitReady(t, 90*time.Second)
	t.Logf("ready %v after list cronjobs was granted", time.Since(granted).Round(time.Millisecond))
}

// deniedLogged reports whether one error line of the log names the
// cronjobs resource and the list verb.
func deniedLogged(log string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "ERROR ") && strings.Contains(line, "resource=cronjobs") && strings.Contains(line, "verb=list") {
			return true
		}
	}
	return false
}
