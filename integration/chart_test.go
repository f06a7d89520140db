//go:build integration

package integration

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/charts"
	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
)

// chartDigest pins the chart's image in these renders (no pod runs it).
const chartDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// chartRelease is one release of the chart created in the API server, and
// what its ServiceAccount must be allowed.
type chartRelease struct {
	rel         charts.Release
	values      map[string]any
	sa, history string // the ServiceAccount and the history ConfigMap
	lease       string
	pullSecrets bool
}

// TestChart renders charts/regcheck with Helm's engine and creates every
// object (not a dry run) in a real kube-apiserver, with prometheus-operator's
// kinds registered: the release regcheck with the defaults (helm install
// regcheck -n regcheck --create-namespace --set image.digest=…) and the
// release audit with every optional part on (ci/all-on-values.yaml), side
// by side. Then, as each release's ServiceAccount: it may do what
// regcheck needs and nothing more (SelfSubjectRulesReview, as TestDeploy
// checks deploy/); the defaults' watcher, run with its Deployment's
// arguments, syncs and takes the release's Lease; and the all-on CronJob's
// record writes the release's own history ConfigMap.
func TestChart(t *testing.T) {
	ctx := t.Context()
	kc := startCluster(t)
	admin := clientFor(t, kc.Config)
	if err := kubeapi.ApplyCRDs(ctx, kc.Config, filepath.Join("testdata", "monitoring", "crds.yaml")); err != nil {
		t.Fatal(err)
	}
	// What the all-on values name outside the release: the namespace it
	// reads (with a running pod to record) and the dashboard's.
	for _, ns := range []string{"shop", "monitoring", "regcheck"} {
		if err := createNamespace(ctx, admin, ns); err != nil {
			t.Fatal(err)
		}
	}
	workload(t, ctx, admin, "shop", "web", "registry.example.com/shop/web:v1", "IfNotPresent", "node-a", "registry.example.com/shop/web@"+chartDigest)

	allOn := map[string]any{}
	data, err := charts.File("ci/all-on-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.Unmarshal(data, &allOn); err != nil {
		t.Fatal(err)
	}
	releases := []chartRelease{
		{rel: charts.Release{Name: "regcheck", Namespace: "regcheck"}, values: map[string]any{"image": map[string]any{"digest": chartDigest}},
			sa: "regcheck", history: "regcheck-history", lease: "regcheck-watch"},
		{rel: charts.Release{Name: "audit", Namespace: "audit"}, values: allOn,
			sa: "audit-regcheck", history: "digests", lease: "audit-regcheck-watch", pullSecrets: true},
	}
	for _, r := range releases {
		rendered, err := charts.Render(ctx, r.rel, r.values)
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := rendered.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		created := applyAll(t, kc, manifest)
		t.Logf("release %s: created %d objects: %s", r.rel.Name, len(created), strings.Join(created, ", "))
	}
	checkChartObjects(t, kc)

	nobodyCfg, _, err := kc.ServiceAccountConfig(ctx, "shop", "default")
	if err != nil {
		t.Fatal(err)
	}
	nobody := clientFor(t, nobodyCfg)
	for _, r := range releases {
		t.Run(r.rel.Name+" may do what regcheck needs and no more", func(t *testing.T) {
			cfg, _, err := kc.ServiceAccountConfig(ctx, r.rel.Namespace, r.sa)
			if err != nil {
				t.Fatal(err)
			}
			checkChartRights(t, r, clientFor(t, cfg), nobody)
		})
	}
	t.Run("the defaults' watcher syncs and leads as its ServiceAccount", func(t *testing.T) {
		runChartWatcher(t, kc, releases[0])
	})
	t.Run("the all-on CronJob's record writes its history as its ServiceAccount", func(t *testing.T) {
		runChartRecord(t, kc, releases[1])
	})
}

// checkChartObjects reads back what the API server holds of both
// releases: the watcher's replicas, one CronJob per pool, the monitoring
// kinds and the dashboard where the values put them.
func checkChartObjects(t *testing.T, kc *kubeapi.Cluster) {
	t.Helper()
	ctx := t.Context()
	admin := clientFor(t, kc.Config)
	dep, err := admin.AppsV1().Deployments("regcheck").Get(ctx, "regcheck-watch", metav1.GetOptions{})
	if err != nil || *dep.Spec.Replicas != 2 || !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--leader-elect") {
		t.Errorf("the defaults' watcher: %v %+v", err, dep)
	}
	cjs, err := admin.BatchV1().CronJobs("audit").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cj := range cjs.Items {
		names = append(names, cj.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"audit-regcheck-crio", "audit-regcheck-k3s"}) {
		t.Errorf("the all-on CronJobs %q, want one per node pool", names)
	}
	dyn := dynamicFor(t, kc.Config)
	for _, c := range []struct{ resource, ns, name string }{
		{"podmonitors", "regcheck", "regcheck-watch"},
		{"prometheusrules", "regcheck", "regcheck"},
		{"servicemonitors", "audit", "audit-regcheck-watch"},
		{"prometheusrules", "audit", "audit-regcheck"},
	} {
		gvr := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: c.resource}
		if _, err := dyn.Resource(gvr).Namespace(c.ns).Get(ctx, c.name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s %s/%s: %v", c.resource, c.ns, c.name, err)
		}
	}
	for _, c := range []struct{ ns, name string }{{"regcheck", "regcheck-dashboard"}, {"monitoring", "audit-regcheck-dashboard"}} {
		cm, err := admin.CoreV1().ConfigMaps(c.ns).Get(ctx, c.name, metav1.GetOptions{})
		if err != nil || cm.Labels["grafana_dashboard"] != "1" || cm.Data["regcheck.json"] == "" {
			t.Errorf("dashboard %s/%s: %v, labels %v", c.ns, c.name, err, cm.Labels)
		}
	}
}

// checkChartRights: every right regcheck needs is in the ServiceAccount's
// rules review, in the release's namespace and in another, and every
// right it has beyond what any authenticated user has is one of them.
func checkChartRights(t *testing.T, r chartRelease, sa, nobody kubernetes.Interface) {
	t.Helper()
	inventory := map[string][]string{"": {"pods", "nodes", "namespaces"}, "apps": {"deployments", "statefulsets", "daemonsets", "replicasets"}, "batch": {"jobs", "cronjobs"},
		"kyverno.io": {"clusterpolicies", "policies"}, "policies.kyverno.io": {"imagevalidatingpolicies", "namespacedimagevalidatingpolicies"}, "policy.sigstore.dev": {"clusterimagepolicies", "trustroots"},
		"argoproj.io": {"rollouts", "workflowtemplates", "cronworkflows"}, "tekton.dev": {"tasks", "pipelines"},
		"serving.knative.dev": {"services"}, "keda.sh": {"scaledjobs"}, "apps.kruise.io": {"clonesets"},
		"postgresql.cnpg.io": {"clusters"}, "monitoring.coreos.com": {"prometheuses", "alertmanagers"},
		"config.openshift.io": {"imagedigestmirrorsets", "imagetagmirrorsets", "images"}, "operator.openshift.io": {"imagecontentsourcepolicies"}}
	watched := map[string][]string{"": {"pods", "nodes"}, "apps": {"deployments", "statefulsets", "daemonsets", "replicasets"}, "batch": {"jobs", "cronjobs"}}
	const coordination = "coordination.k8s.io"
	ns := r.rel.Namespace
	needs := func(in string) []right {
		var out []right
		for g, rs := range inventory {
			for _, res := range rs {
				out = append(out, right{in, "get", g, res, ""}, right{in, "list", g, res, ""})
			}
		}
		for g, rs := range watched {
			for _, res := range rs {
				out = append(out, right{in, "list", g, res, ""}, right{in, "watch", g, res, ""})
			}
		}
		if r.pullSecrets {
			out = append(out, right{in, "get", "", "secrets", ""}, right{in, "get", "", "serviceaccounts", ""})
		}
		if in == ns {
			out = append(out, right{in, "get", "", "configmaps", r.history}, right{in, "update", "", "configmaps", r.history},
				right{in, "create", coordination, "leases", ""}, right{in, "get", coordination, "leases", r.lease}, right{in, "update", coordination, "leases", r.lease})
			for i := 1; i <= 4; i++ { // the history's four archives
				a := fmt.Sprintf("%s-%d", r.history, i)
				out = append(out, right{in, "get", "", "configmaps", a}, right{in, "update", "", "configmaps", a})
			}
		}
		return out
	}
	allowed := func(x right) bool {
		for _, n := range needs(x.namespace) {
			if n == x {
				return true
			}
		}
		return false
	}
	for _, in := range []string{ns, "shop"} {
		var got map[right]bool
		missing := func() []right {
			var m []right
			for _, n := range needs(in) {
				if !got[n] {
					m = append(m, n)
				}
			}
			return m
		}
		// RBAC objects reach the authorizer's cache shortly after they are created.
		eventually(t, func() (map[right]bool, error) { got = rights(t, sa, in); return got, nil },
			func(map[right]bool, error) bool { return len(missing()) == 0 })
		for _, m := range missing() {
			t.Errorf("the ServiceAccount may not %s", m)
		}
		everyone := rights(t, nobody, in)
		for x := range got {
			if !everyone[x] && !allowed(x) {
				t.Errorf("the ServiceAccount may %s", x)
			}
		}
	}
}

// saKubeconfig writes a kubeconfig acting as the ServiceAccount ns/name.
func saKubeconfig(t *testing.T, kc *kubeapi.Cluster, ns, name string) string {
	t.Helper()
	_, token, err := kc.ServiceAccountConfig(t.Context(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(path, "testkube", token); err != nil {
		t.Fatal(err)
	}
	return path
}

// runChartWatcher runs the real binary with the release's Deployment's
// arguments and env (POD_NAMESPACE as its fieldRef gives it), as its
// ServiceAccount: its informers sync (it is ready), it takes the Lease the
// Role names, and as leader writes the running digest into the history.
func runChartWatcher(t *testing.T, kc *kubeapi.Cluster, r chartRelease) {
	ctx := t.Context()
	admin := clientFor(t, kc.Config)
	dep, err := admin.AppsV1().Deployments(r.rel.Namespace).Get(ctx, r.sa+"-watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	addr := "127.0.0.1:" + strconv.Itoa(freeLoopbackPort(t))
	args := slices.Clone(c.Args)
	i := slices.Index(args, "--metrics-bind-address")
	if i < 0 || args[i+1] != ":"+strconv.Itoa(int(c.Ports[0].ContainerPort)) {
		t.Fatalf("args %q do not serve the container's port %d", args, c.Ports[0].ContainerPort)
	}
	args[i+1] = addr // the pod's port, on loopback here
	args = append(args, "--kubeconfig", saKubeconfig(t, kc, r.rel.Namespace, r.sa))
	env := []string{"POD_NAMESPACE=" + r.rel.Namespace}
	for _, e := range c.Env {
		if e.Value != "" {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	w := startWatchProcess(t, watchBinary(t), addr, args, env...)
	t.Logf("regcheck %s (as %s/%s, %s)", strings.Join(c.Args, " "), r.rel.Namespace, r.sa, strings.Join(env, " "))
	t.Logf("ready in %v", w.waitReady(t, time.Minute).Round(time.Millisecond))
	t.Logf("leader in %v", w.waitLeader(t, 1, time.Minute).Round(time.Millisecond))
	lease, err := admin.CoordinationV1().Leases(r.rel.Namespace).Get(ctx, r.lease, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("Lease %s/%s: %v %+v", r.rel.Namespace, r.lease, err, lease)
	}
	checkHistory(t, kc, r)
	if code, took := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM (%v):\n%s", code, took, w.tail())
	}
}

// checkHistory waits for the release's history ConfigMap to hold shop/web's
// running digest.
func checkHistory(t *testing.T, kc *kubeapi.Cluster, r chartRelease) {
	t.Helper()
	admin := clientFor(t, kc.Config)
	h, err := eventually(t, func() (string, error) {
		cm, err := admin.CoreV1().ConfigMaps(r.rel.Namespace).Get(t.Context(), r.history, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return cm.Data["history.json"], nil
	}, func(h string, err error) bool { return err == nil && strings.Contains(h, chartDigest) })
	if err != nil || !strings.Contains(h, chartDigest) || !strings.Contains(h, `"shop"`) {
		t.Errorf("ConfigMap %s/%s does not record shop/web's running digest: %v\n%.600s", r.rel.Namespace, r.history, err, h)
	}
}

// runChartRecord runs the record container of the release's first pool
// CronJob, its arguments read back from the API server, as its
// ServiceAccount, pushing to a real Pushgateway: it writes the release's
// history ConfigMap, and its metrics carry the pool.
func runChartRecord(t *testing.T, kc *kubeapi.Cluster, r chartRelease) {
	ctx := t.Context()
	admin := clientFor(t, kc.Config)
	cj, err := admin.BatchV1().CronJobs(r.rel.Namespace).Get(ctx, r.sa+"-k3s", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gateway := startPushgateway(t)
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	record := pod.InitContainers[0]
	args := slices.Clone(record.Args)
	for i, a := range args {
		args[i] = strings.Replace(a, "http://pushgateway.monitoring:9091", gateway, 1)
	}
	actAs(t, kc, r.rel.Namespace, pod.ServiceAccountName)
	t.Setenv("HOME", t.TempDir()) // the pod's emptyDir
	t.Setenv("XDG_CACHE_HOME", "")
	code, stdout, stderr := runAuthorized(t, args)
	t.Logf("$ regcheck %s\n%s%s(exit %d)", strings.Join(record.Args, " "), stdout, stderr, code)
	if code != cli.ExitClean || strings.Contains(stderr, "forbidden") {
		t.Errorf("exit %d, want 0", code)
	}
	checkHistory(t, kc, r)
	resp, err := http.Get(gateway + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(find(parseText(t, body), "regcheck_last_success_timestamp_seconds", map[string]string{"job": "regcheck", "command": "record", "pool": "k3s"})) == 0 {
		t.Errorf("no regcheck_last_success_timestamp_seconds{command=\"record\",pool=\"k3s\"} on the Pushgateway")
	}
}
