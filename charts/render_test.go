package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// allOn are the values of ci/all-on-values.yaml: every optional part of
// the chart on.
func allOn() map[string]any {
	data, err := File("ci/all-on-values.yaml")
	if err != nil {
		panic(err)
	}
	var v map[string]any
	if err := sigsyaml.Unmarshal(data, &v); err != nil {
		panic(err)
	}
	return v
}

// kinds lists the objects as KIND NAMESPACE/NAME.
func kinds(objs []object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s %s/%s", o.u.GetKind(), o.u.GetNamespace(), o.u.GetName()))
	}
	return out
}

// TestRenderDefaults: helm install regcheck -n regcheck --set
// image.digest=… creates the ServiceAccount and RBAC, the history, the
// watcher (two replicas, leader election, Service, PodMonitor), the nightly
// CronJob, the alerts and the dashboard; no Namespace (helm's
// --create-namespace makes it) and no pull-secret binding.
func TestRenderDefaults(t *testing.T) {
	objs := objects(t, render(t, pinned()))
	want := []string{
		"ServiceAccount regcheck/regcheck",
		"ConfigMap regcheck/regcheck-dashboard",
		"ConfigMap regcheck/regcheck-history",
		"ConfigMap regcheck/regcheck-history-1", "ConfigMap regcheck/regcheck-history-2",
		"ConfigMap regcheck/regcheck-history-3", "ConfigMap regcheck/regcheck-history-4",
		"ClusterRole /regcheck-inventory",
		"ClusterRole /regcheck-pull-secrets",
		"ClusterRole /regcheck-watch",
		"ClusterRoleBinding /regcheck-inventory",
		"ClusterRoleBinding /regcheck-watch",
		"Role regcheck/regcheck-records",
		"Role regcheck/regcheck-watch-lease",
		"RoleBinding regcheck/regcheck-records",
		"RoleBinding regcheck/regcheck-watch-lease",
		"Service regcheck/regcheck-watch",
		"Deployment regcheck/regcheck-watch",
		"CronJob regcheck/regcheck",
		"PodMonitor regcheck/regcheck-watch",
		"PrometheusRule regcheck/regcheck",
	}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("objects:\n got %q\nwant %q", got, want)
	}
	for _, o := range objs {
		if o.u.GetLabels()["app.kubernetes.io/part-of"] != "regcheck" {
			t.Errorf("%s %s has no part-of label", o.u.GetKind(), o.u.GetName())
		}
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			args := v.Spec.Template.Spec.Containers[0].Args
			if !slices.Equal(args, []string{"watch", "-A", "--configmap", "regcheck/regcheck-history", "--leader-elect", "--leader-election-id", "regcheck-watch", "--metrics-bind-address", ":8080"}) {
				t.Errorf("watch args %q", args)
			}
			if *v.Spec.Replicas != 2 {
				t.Errorf("replicas %d", *v.Spec.Replicas)
			}
		case *corev1.ConfigMap:
			if v.Name == "regcheck-dashboard" {
				board, _ := File("dashboards/regcheck.json")
				if v.Labels["grafana_dashboard"] != "1" || strings.TrimSpace(v.Data["regcheck.json"]) != strings.TrimSpace(string(board)) || !json.Valid([]byte(v.Data["regcheck.json"])) {
					t.Errorf("dashboard ConfigMap labels %v, data %.80q: want the sidecar's label and dashboards/regcheck.json", v.Labels, v.Data["regcheck.json"])
				}
			}
		}
	}
}

// TestRenderAllOn: every optional part rendered where it belongs, as the
// release audit (names prefixed audit-regcheck).
func TestRenderAllOn(t *testing.T) {
	r, err := Render(t.Context(), Release{Name: "audit", Namespace: "audit"}, allOn())
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, r)
	got := kinds(objs)
	for _, want := range []string{
		"Namespace /audit", "ClusterRoleBinding /audit-regcheck-pull-secrets", "ConfigMap audit/digests",
		"CronJob audit/audit-regcheck-k3s", "CronJob audit/audit-regcheck-crio", "ServiceMonitor audit/audit-regcheck-watch",
		"PrometheusRule audit/audit-regcheck", "ConfigMap monitoring/audit-regcheck-dashboard", "Deployment audit/audit-regcheck-watch",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %q", want, got)
		}
	}
	if slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "PodMonitor ") || s == "CronJob audit/audit-regcheck" }) {
		t.Errorf("a PodMonitor beside the ServiceMonitor, or the pool-less CronJob: %q", got)
	}
	for _, o := range objs {
		switch v := o.obj.(type) {
		case *batchv1.CronJob:
			checkPoolCronJob(t, v)
		case *appsv1.Deployment:
			checkWatcherAllOn(t, v)
		case *rbacv1.Role:
			if v.Name == "audit-regcheck-records" && !slices.Equal(v.Rules[0].ResourceNames, []string{"digests", "digests-1", "digests-2", "digests-3", "digests-4"}) {
				t.Errorf("the history Role names %q, want digests and its four archives", v.Rules[0].ResourceNames)
			}
			if v.Name == "audit-regcheck-watch-lease" && !slices.Equal(v.Rules[1].ResourceNames, []string{"audit-regcheck-watch"}) {
				t.Errorf("the Lease Role names %q", v.Rules[1].ResourceNames)
			}
		}
		if o.u.GetKind() == "PrometheusRule" || o.u.GetKind() == "ServiceMonitor" {
			if o.u.GetLabels()["release"] != "kube-prometheus-stack" {
				t.Errorf("%s labels %v: no release label for the operator's selector", o.u.GetKind(), o.u.GetLabels())
			}
		}
	}
}

// checkPoolCronJob: a pool's CronJob runs on its nodes, mounts its
// registry configuration read-only at the path scan --registries-config
// reads, pushes with its pool's grouping, and carries every other part.
func checkPoolCronJob(t *testing.T, cj *batchv1.CronJob) {
	t.Helper()
	pool := strings.TrimPrefix(cj.Name, "audit-regcheck-")
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	record, scan := pod.InitContainers[0], pod.Containers[0]
	wantRecord := []string{"record", "--configmap", "audit/digests", "-n", "shop", "--pushgateway", "http://pushgateway.monitoring:9091", "--pushgateway-grouping", "pool=" + pool, "--diff"}
	if !slices.Equal(record.Args, wantRecord) {
		t.Errorf("%s record args %q, want %q", cj.Name, record.Args, wantRecord)
	}
	path := map[string]string{"k3s": "/etc/rancher/k3s/registries.yaml", "crio": "/etc/containers/registries.conf"}[pool]
	wantScan := []string{"scan", "--cluster", "-n", "shop", "--pushgateway", "http://pushgateway.monitoring:9091", "--pushgateway-grouping", "pool=" + pool, "--pull-secrets",
		"--ca-file", "/etc/regcheck/ca/ca.pem",
		"--image-credential-provider-config", "/etc/kubernetes/credential-providers.yaml",
		"--image-credential-provider-bin-dir", "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
		"--registries-config", path, "--fail-on", "at-risk"}
	if !slices.Equal(scan.Args, wantScan) {
		t.Errorf("%s scan args\n %q, want\n %q", cj.Name, scan.Args, wantScan)
	}
	if pod.NodeSelector["pool"] != pool || pod.NodeSelector["kubernetes.io/os"] != "linux" || len(pod.Tolerations) != 1 || pod.Affinity == nil {
		t.Errorf("%s schedules by %v, %v, %v", cj.Name, pod.NodeSelector, pod.Tolerations, pod.Affinity)
	}
	checkMounts(t, cj.Name, scan, pod.Volumes, map[string]string{
		path: path, "/etc/regcheck/ca": "", "/etc/kubernetes/credential-providers.yaml": "/etc/kubernetes/credential-providers.yaml",
		"/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec": "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
	})
	for _, c := range []struct {
		c   corev1.Container
		mem string
	}{{record, "200MiB"}, {scan, "450MiB"}} {
		if !slices.Contains(c.c.Env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: c.mem}) || !slices.Contains(c.c.Env, corev1.EnvVar{Name: "TZ", Value: "UTC"}) {
			t.Errorf("%s %s env %v", cj.Name, c.c.Name, c.c.Env)
		}
		if c.c.Image != "registry.example.com/tools/regcheck:v1@"+digest || c.c.ImagePullPolicy != corev1.PullAlways {
			t.Errorf("%s %s image %s %s", cj.Name, c.c.Name, c.c.Image, c.c.ImagePullPolicy)
		}
	}
	if cj.Spec.Schedule != "0 2 * * *" || len(pod.ImagePullSecrets) != 1 {
		t.Errorf("%s schedule %q, image pull secrets %v", cj.Name, cj.Spec.Schedule, pod.ImagePullSecrets)
	}
}

// checkWatcherAllOn: the watcher reads one namespace, elects its leader on
// the release's Lease, and carries the CA bundle, the credential
// providers and the node's registry configuration.
func checkWatcherAllOn(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	want := []string{"watch", "-n", "shop", "--configmap", "audit/digests", "--leader-elect", "--leader-election-id", "audit-regcheck-watch", "--metrics-bind-address", ":8080",
		"--ca-file", "/etc/regcheck/ca/ca.pem",
		"--image-credential-provider-config", "/etc/kubernetes/credential-providers.yaml",
		"--image-credential-provider-bin-dir", "/usr/libexec/kubernetes/kubelet-plugins/credential-provider/exec",
		"--registries-config", "/etc/containerd/certs.d", "--pull-secrets", "--interval", "30m"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("watch args\n %q, want\n %q", c.Args, want)
	}
	if *d.Spec.Replicas != 3 || pod.NodeSelector["kubernetes.io/os"] != "linux" || len(pod.Tolerations) != 1 || pod.Affinity.NodeAffinity == nil || pod.Affinity.PodAntiAffinity != nil {
		t.Errorf("replicas %d, scheduling %v %v %+v", *d.Spec.Replicas, pod.NodeSelector, pod.Tolerations, pod.Affinity)
	}
	if !slices.Contains(c.Env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: "300MiB"}) || !slices.Contains(c.Env, corev1.EnvVar{Name: "TZ", Value: "UTC"}) {
		t.Errorf("env %v", c.Env)
	}
	checkMounts(t, d.Name, c, pod.Volumes, map[string]string{"/etc/containerd/certs.d": "/etc/containerd/certs.d", "/etc/regcheck/ca": ""})
}

// checkMounts: each mount path in want is mounted read-only from a volume
// that is a hostPath of the path given, or ("") the CA bundle's ConfigMap.
func checkMounts(t *testing.T, name string, c corev1.Container, volumes []corev1.Volume, want map[string]string) {
	t.Helper()
	for path, host := range want {
		i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
		if i < 0 || !c.VolumeMounts[i].ReadOnly {
			t.Errorf("%s %s: %s not mounted read-only: %+v", name, c.Name, path, c.VolumeMounts)
			continue
		}
		j := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
		switch {
		case j < 0:
			t.Errorf("%s: no volume %s", name, c.VolumeMounts[i].Name)
		case host == "" && (volumes[j].ConfigMap == nil || volumes[j].ConfigMap.Name != "registry-ca"):
			t.Errorf("%s: %s is %+v, want the ConfigMap registry-ca", name, path, volumes[j])
		case host != "" && (volumes[j].HostPath == nil || volumes[j].HostPath.Path != host):
			t.Errorf("%s: %s is %+v, want the node's %s", name, path, volumes[j], host)
		}
	}
}

// TestDeploySameObjects: kubectl apply -k deploy/, -k deploy/watch/ and
// -k deploy/grafana/, with deploy/prometheus/prometheusrule.yaml, create
// the very objects the chart renders with deploy/'s values, field for
// field: the kustomizations (namespace, labels, image) change nothing.
func TestDeploySameObjects(t *testing.T) {
	chart := map[string]map[string]any{}
	for _, o := range objects(t, render(t, DeployValues())) {
		chart[key(o.u.Object)] = o.u.Object
	}
	deploy := map[string]map[string]any{}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, dir := range []string{"deploy", "deploy/watch", "deploy/grafana"} {
		res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("..", dir))
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		for _, r := range res.Resources() {
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			deploy[key(m)] = m
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "deploy", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule map[string]any
	if err := sigsyaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	deploy[key(rule)] = rule
	for k, o := range chart {
		if d, ok := deploy[k]; !ok {
			t.Errorf("%s: the chart's, not in deploy/", k)
		} else if !reflect.DeepEqual(normal(t, o), normal(t, d)) {
			t.Errorf("%s differs:\nchart:  %s\ndeploy: %s", k, normal(t, o), normal(t, d))
		}
	}
	for k := range deploy {
		if _, ok := chart[k]; !ok {
			t.Errorf("%s: in deploy/, not the chart's", k)
		}
	}
	if len(chart) < 15 {
		t.Errorf("%d objects compared", len(chart))
	}
}

func key(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	return fmt.Sprintf("%s %v/%v", m["kind"], md["namespace"], md["name"])
}

// normal is an object as JSON, so that numbers and maps compare alike
// whichever decoder read them.
func normal(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
