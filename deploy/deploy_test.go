// Package deploy_test checks the manifests in deploy/ as the API server
// would read them: client-go's scheme, strict (an unknown or duplicate
// field is an error).
package deploy_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/regcheck/regcheck/deploy"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// decode reads every YAML document of a file with client-go's scheme.
func decode(t *testing.T, path string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, _, err := dec.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
		out = append(out, obj)
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestCronJobSharded: deploy/cronjob-sharded.yaml is a batch/v1 CronJob of
// an Indexed Job whose pods each scan one shard, as many shards as
// completions, as the ServiceAccount deploy/rbac.yaml defines.
func TestCronJobSharded(t *testing.T) {
	objs := decode(t, "cronjob-sharded.yaml")
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1 CronJob", len(objs))
	}
	cj, ok := objs[0].(*batchv1.CronJob)
	if !ok {
		t.Fatalf("decoded a %T, want a batch/v1 CronJob", objs[0])
	}
	job := cj.Spec.JobTemplate.Spec
	if job.CompletionMode == nil || *job.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", job.CompletionMode)
	}
	if job.Completions == nil || job.Parallelism == nil || *job.Completions != 4 || *job.Parallelism != 4 {
		t.Fatalf("completions %v, parallelism %v: want 4 and 4", job.Completions, job.Parallelism)
	}

	var sa *corev1.ServiceAccount
	for _, o := range decode(t, "rbac.yaml") {
		if s, ok := o.(*corev1.ServiceAccount); ok {
			sa = s
		}
	}
	pod := job.Template.Spec
	if sa == nil || pod.ServiceAccountName != sa.Name || cj.Namespace != sa.Namespace {
		t.Errorf("runs as %s/%s, want the ServiceAccount of rbac.yaml (%+v)", cj.Namespace, pod.ServiceAccountName, sa)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s, want Never (a pod failure policy needs it)", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	args := pod.Containers[0].Args
	want := []string{"scan", "--cluster", "-A", "--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", *job.Completions), "--pushgateway", "http://pushgateway.monitoring:9091", "-o", "json"}
	if !slices.Equal(args, want) {
		t.Errorf("args %q, want %q", args, want)
	}
	for _, e := range pod.Containers[0].Env {
		if e.Name == "JOB_COMPLETION_INDEX" || e.Name == "REGCHECK_SHARD_COUNT" {
			t.Errorf("env sets %s: the Job controller sets the index, and --shard the count", e.Name)
		}
	}
}

// render renders the kustomize base (or overlay) and decodes each object
// strictly, as decode does.
func render(t *testing.T, overlay string) []runtime.Object {
	t.Helper()
	data, err := deploy.Render(overlay)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return decode(t, path)
}

// historyName is the ConfigMap the README, the Role and the CronJob name.
const historyName = "regcheck-history"

// TestKustomization: kubectl apply -k deploy/ makes the namespace, the
// ServiceAccount, the read-only ClusterRole and its binding, the history
// ConfigMap, a Role on that ConfigMap alone, and the nightly CronJob that
// records into it, then scans, as that ServiceAccount, with the image the
// kustomization names.
func TestKustomization(t *testing.T) {
	objs := render(t, "")
	var (
		kinds []string
		cj    *batchv1.CronJob
		role  *rbacv1.Role
	)
	for _, o := range objs {
		switch v := o.(type) {
		case *batchv1.CronJob:
			cj = v
		case *rbacv1.Role:
			role = v
		case *corev1.ConfigMap:
			if len(v.Data) != 0 || len(v.BinaryData) != 0 {
				t.Errorf("the history ConfigMap %s ships with data %v: kubectl apply would reset it", v.Name, v.Data)
			}
		}
		acc, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, fmt.Sprintf("%T %s/%s", o, acc.GetNamespace(), acc.GetName()))
		if acc.GetLabels()["app.kubernetes.io/part-of"] != "regcheck" {
			t.Errorf("%T %s has no part-of label", o, acc.GetName())
		}
	}
	want := []string{
		"*v1.Namespace /regcheck",
		"*v1.ServiceAccount regcheck/regcheck",
		"*v1.ClusterRole /regcheck-inventory",
		"*v1.ClusterRoleBinding /regcheck-inventory",
		"*v1.ClusterRole /regcheck-pull-secrets",
		"*v1.ConfigMap regcheck/" + historyName,
		"*v1.ConfigMap regcheck/" + historyName + "-1",
		"*v1.ConfigMap regcheck/" + historyName + "-2",
		"*v1.ConfigMap regcheck/" + historyName + "-3",
		"*v1.ConfigMap regcheck/" + historyName + "-4",
		"*v1.Role regcheck/regcheck-records",
		"*v1.RoleBinding regcheck/regcheck-records",
		"*v1.CronJob regcheck/regcheck",
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("objects:\n got %q\nwant %q", kinds, want)
	}
	wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{historyName, historyName + "-1", historyName + "-2", historyName + "-3", historyName + "-4"}, Verbs: []string{"get", "update"}}}
	if !reflect.DeepEqual(role.Rules, wantRules) {
		t.Errorf("Role rules %+v, want %+v", role.Rules, wantRules)
	}

	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.StartingDeadlineSeconds == nil || *cj.Spec.StartingDeadlineSeconds <= 0 {
		t.Errorf("concurrencyPolicy %s, startingDeadlineSeconds %v", cj.Spec.ConcurrencyPolicy, cj.Spec.StartingDeadlineSeconds)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if pod.ServiceAccountName != "regcheck" || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("serviceAccountName %q, restartPolicy %s", pod.ServiceAccountName, pod.RestartPolicy)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("pod securityContext %+v, want runAsNonRoot as 65532 (the image's user)", sc)
	}
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("%d init containers and %d containers, want record then scan", len(pod.InitContainers), len(pod.Containers))
	}
	record, scan := pod.InitContainers[0], pod.Containers[0]
	const push = "http://pushgateway.monitoring:9091"
	for _, c := range []struct {
		c    corev1.Container
		args []string
	}{
		{record, []string{"record", "--configmap", "regcheck/" + historyName, "-A", "--pushgateway", push}},
		{scan, []string{"scan", "--cluster", "-A", "--pushgateway", push}},
	} {
		t.Run(c.c.Name, func(t *testing.T) {
			if !slices.Equal(c.c.Args, c.args) || len(c.c.Command) != 0 {
				t.Errorf("command %q args %q, want the image's entrypoint with %q", c.c.Command, c.c.Args, c.args)
			}
			if c.c.Image != "registry.example.com/tools/regcheck:v1" {
				t.Errorf("image %q, want the kustomization's", c.c.Image)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
				if _, ok := c.c.Resources.Requests[r]; !ok {
					t.Errorf("no %s request", r)
				}
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
				if _, ok := c.c.Resources.Limits[r]; !ok {
					t.Errorf("no %s limit", r)
				}
			}
			sc := c.c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("securityContext %+v", sc)
			}
			// HOME, the image's /home/nonroot, is an emptyDir: the one place it writes.
			if len(c.c.VolumeMounts) != 1 || c.c.VolumeMounts[0].MountPath != "/home/nonroot" {
				t.Errorf("mounts %+v, want the home emptyDir at /home/nonroot", c.c.VolumeMounts)
			}
		})
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].EmptyDir == nil || pod.Volumes[0].EmptyDir.SizeLimit == nil {
		t.Errorf("volumes %+v, want one emptyDir with a sizeLimit", pod.Volumes)
	}
	// The Job fails without a retry where asking again finds the same.
	rules := cj.Spec.JobTemplate.Spec.PodFailurePolicy.Rules
	if len(rules) != 3 || rules[0].OnExitCodes.ContainerName == nil || *rules[0].OnExitCodes.ContainerName != "scan" || !slices.Equal(rules[0].OnExitCodes.Values, []int32{1, 2}) {
		t.Errorf("podFailurePolicy %+v", rules)
	}
}

// TestHistoryName: the README and the docs name the history ConfigMap the
// Role lets the CronJob update, wherever they show --configmap.
func TestHistoryName(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, p := range append(pages, "../README.md") {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`--configmap\s+(\S+)`).FindAllStringSubmatch(string(text), -1) {
			shown++
			if m[1] != "regcheck/"+historyName {
				t.Errorf("%s shows --configmap %s, want regcheck/%s (the ConfigMap deploy/rbac.yaml grants)", p, m[1], historyName)
			}
		}
	}
	if shown == 0 {
		t.Fatal("neither the README nor docs/ show --configmap")
	}
}

// TestGCCheckJob: deploy/gc-check-job.yaml runs gc-check over the
// registry's storage mounted read-only (volume and mount), as a
// ServiceAccount bound to the read-only ClusterRole, and is not in the
// kustomization.
func TestGCCheckJob(t *testing.T) {
	objs := decode(t, "gc-check-job.yaml")
	if len(objs) != 3 {
		t.Fatalf("%d objects, want ServiceAccount, ClusterRoleBinding, Job", len(objs))
	}
	sa, ok1 := objs[0].(*corev1.ServiceAccount)
	crb, ok2 := objs[1].(*rbacv1.ClusterRoleBinding)
	job, ok3 := objs[2].(*batchv1.Job)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("objects %T %T %T", objs[0], objs[1], objs[2])
	}
	pod := job.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || sa.Namespace != job.Namespace {
		t.Errorf("runs as %s/%s, want %s/%s", job.Namespace, pod.ServiceAccountName, sa.Namespace, sa.Name)
	}
	if crb.RoleRef.Name != "regcheck-inventory" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa.Name || crb.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("binding %+v", crb)
	}
	c := pod.Containers[0]
	i := slices.Index(c.Args, "--storage")
	if len(c.Args) == 0 || c.Args[0] != "gc-check" || i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("args %q, want gc-check --storage DIR …", c.Args)
	}
	var storage *corev1.Volume
	for _, m := range c.VolumeMounts {
		if m.MountPath != c.Args[i+1] {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("the storage is mounted writable")
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name {
				storage = &v
			}
		}
	}
	if storage == nil || storage.PersistentVolumeClaim == nil || !storage.PersistentVolumeClaim.ReadOnly {
		t.Errorf("the storage volume %+v, want a claim mounted readOnly", storage)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("securityContext %+v", sc)
	}
	kust, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stripComments(string(kust)), "gc-check-job.yaml") {
		t.Errorf("gc-check-job.yaml is in the kustomization: it runs by hand, before a GC")
	}
}

// composeFile is what TestCompose reads of docker-compose.yml; an unknown
// key is an error, as docker compose's own schema would make it.
type composeFile struct {
	Name      string
	XRegistry any `yaml:"x-registry-2"`
	Services  map[string]struct {
		Image string
		Build *struct {
			Context string
			Target  string
		}
		Entrypoint  []string
		Command     []string
		NetworkMode string `yaml:"network_mode"`
		Environment map[string]string
		Volumes     []string
		Ports       []string
		ReadOnly    bool `yaml:"read_only"`
		Tmpfs       []string
		Healthcheck *struct {
			Test              []string
			Interval, Timeout string
			Retries           int
		}
		DependsOn map[string]struct{ Condition string } `yaml:"depends_on"`
	}
	Volumes map[string]struct{}
}

// TestCompose: docker-compose.yml (which cannot run here: no Docker)
// tells make demo's story with the registry versions the tests run: 2.8.3
// seeded, collected, started again and scanned by regcheck's image over
// examples/manifests, whose references name its address; 3.1.2 beside it.
func TestCompose(t *testing.T) {
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c composeFile
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(c.Services))
	if want := []string{"gc", "registry-2", "registry-2-collected", "registry-3", "scan", "seed"}; !slices.Equal(names, want) {
		t.Fatalf("services %q, want %q", names, want)
	}
	s := c.Services
	v2 := "registry:" + strings.TrimPrefix(registry.V2, "registry-v")
	v3 := "registry:" + strings.TrimPrefix(registry.V3, "registry-v")
	for name, image := range map[string]string{"registry-2": v2, "gc": v2, "registry-2-collected": v2, "registry-3": v3, "scan": "regcheck:dev"} {
		if s[name].Image != image {
			t.Errorf("%s runs %q, want %q (the version the tests run)", name, s[name].Image, image)
		}
	}

	// The steps, in order: each waits for the one before.
	for _, d := range []struct{ service, after, condition string }{
		{"seed", "registry-2", "service_healthy"},
		{"gc", "seed", "service_completed_successfully"},
		{"registry-2-collected", "gc", "service_completed_successfully"},
		{"scan", "registry-2-collected", "service_healthy"},
	} {
		if got := s[d.service].DependsOn; len(got) != 1 || got[d.after].Condition != d.condition {
			t.Errorf("%s depends on %v, want %s: %s", d.service, got, d.after, d.condition)
		}
		if d.condition == "service_healthy" && s[d.after].Healthcheck == nil {
			t.Errorf("%s waits for %s to be healthy, which has no healthcheck", d.service, d.after)
		}
	}

	// One storage: the seeded registry's, collected by gc, served again.
	for _, name := range []string{"registry-2", "gc", "registry-2-collected"} {
		if !slices.Equal(s[name].Volumes, []string{"registry2:/var/lib/registry"}) {
			t.Errorf("%s mounts %q, want the volume registry2 at /var/lib/registry", name, s[name].Volumes)
		}
	}
	for name, svc := range s {
		for _, v := range svc.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if _, ok := c.Volumes[src]; !ok && !strings.HasPrefix(src, "./") {
				t.Errorf("%s mounts the undeclared volume %s", name, src)
			}
		}
	}
	if e := s["gc"].Entrypoint; !slices.Contains(e, "garbage-collect") || !slices.Contains(e, "--delete-untagged=true") {
		t.Errorf("gc runs %q, want registry garbage-collect --delete-untagged=true", e)
	}

	// seed and scan reach the registry at the address the examples name.
	addr := s["registry-2"].Environment["REGISTRY_HTTP_ADDR"]
	_, port, _ := strings.Cut(addr, ":")
	host := "127.0.0.1:" + port
	if s["registry-2-collected"].Environment["REGISTRY_HTTP_ADDR"] != addr {
		t.Errorf("the collected registry listens elsewhere than the seeded one")
	}
	if s["seed"].NetworkMode != "service:registry-2" || s["scan"].NetworkMode != "service:registry-2-collected" {
		t.Errorf("seed's network %q, scan's %q: want their registry's", s["seed"].NetworkMode, s["scan"].NetworkMode)
	}
	if !slices.Equal(s["seed"].Command, []string{"-addr", host}) {
		t.Errorf("seed pushes with %q, want -addr %s", s["seed"].Command, host)
	}
	refs := regexp.MustCompile(`image:\s*['"]?([^\s'"}]+)`)
	files, _ := filepath.Glob("../examples/manifests/*.yaml")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range refs.FindAllStringSubmatch(stripComments(string(b)), -1) {
			n++
			if !strings.HasPrefix(m[1], host+"/demo/") {
				t.Errorf("%s names %s, which the compose registry (%s) does not serve", f, m[1], host)
			}
		}
	}
	if n == 0 {
		t.Fatal("no image reference in examples/manifests")
	}

	// regcheck's image and the seeder are the Dockerfile's targets.
	dockerfile, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"seed": "demo-seed", "scan": "regcheck"} {
		b := s[name].Build
		if b == nil || b.Context != "." || b.Target != target || !strings.Contains(string(dockerfile), "\nFROM scratch AS "+target+"\n") {
			t.Errorf("%s builds %+v, want the Dockerfile's target %s", name, b, target)
		}
	}
	scan := s["scan"]
	if !slices.Equal(scan.Command, []string{"scan", "-f", "/examples/manifests"}) || !slices.Equal(scan.Volumes, []string{"./examples/manifests:/examples/manifests:ro"}) {
		t.Errorf("scan runs %q over %q, want scan -f /examples/manifests over examples/manifests read-only", scan.Command, scan.Volumes)
	}
	if !scan.ReadOnly || !slices.Equal(scan.Tmpfs, []string{"/home/nonroot"}) {
		t.Errorf("scan: read_only %v, tmpfs %q: want a read-only root and HOME on a tmpfs", scan.ReadOnly, scan.Tmpfs)
	}
}

// TestNodePullPathOverlay: deploy/node-pull-path/ runs the nightly scan
// with the node's registries.yaml, mounted read-only from the host, as
// --registries-config; the record container is left as it is.
func TestNodePullPathOverlay(t *testing.T) {
	data, err := os.ReadFile("node-pull-path/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	overlay := strings.Replace(string(data), "  - ..\n", "  - ../base\n", 1)
	var cj *batchv1.CronJob
	for _, o := range render(t, overlay) {
		if v, ok := o.(*batchv1.CronJob); ok {
			cj = v
		}
	}
	if cj == nil {
		t.Fatal("no CronJob")
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	scan := pod.Containers[0]
	if n := len(scan.Args); n < 2 || scan.Args[n-2] != "--registries-config" || scan.Args[n-1] != "/etc/regcheck/registries.yaml" {
		t.Errorf("scan args %q do not end with --registries-config /etc/regcheck/registries.yaml", scan.Args)
	}
	mounted := false
	for _, m := range scan.VolumeMounts {
		if m.MountPath == "/etc/regcheck/registries.yaml" {
			mounted = m.ReadOnly && m.Name == "node-registries"
		}
	}
	if !mounted {
		t.Errorf("the scan container does not mount node-registries read-only: %+v", scan.VolumeMounts)
	}
	found := false
	for _, v := range pod.Volumes {
		if v.Name == "node-registries" {
			found = v.HostPath != nil && v.HostPath.Path == "/etc/rancher/k3s/registries.yaml" && v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathFile
		}
	}
	if !found {
		t.Errorf("no hostPath volume of type File for the node's registries.yaml: %+v", pod.Volumes)
	}
	for _, a := range pod.InitContainers[0].Args {
		if a == "--registries-config" {
			t.Error("record got --registries-config: it asks no registry")
		}
	}
}

// TestWatchKustomization: kubectl apply -k deploy/watch/, beside the base,
// runs regcheck watch as two replicas electing a leader as the base's
// ServiceAccount, with the RBAC its informers and Lease need, a Service and
// a PodMonitor for its /metrics, probes on /readyz and /healthz, and the
// CronJob's security settings; the base's Role lets it update the history.
func TestWatchKustomization(t *testing.T) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "watch")
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	var podMonitor map[string]any
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetKind() == "PodMonitor" {
			if err := yaml.Unmarshal(data, &podMonitor); err != nil {
				t.Fatal(err)
			}
			continue
		}
		obj, _, err := dec.Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", r.GetKind(), r.GetName(), err)
		}
		objs = append(objs, obj)
	}
	var (
		dep   *appsv1.Deployment
		roles []*rbacv1.Role
		crs   []*rbacv1.ClusterRole
		svc   *corev1.Service
	)
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			dep = v
		case *rbacv1.Role:
			roles = append(roles, v)
		case *rbacv1.ClusterRole:
			crs = append(crs, v)
		case *corev1.Service:
			svc = v
		}
		if acc, _ := meta.Accessor(o); acc.GetLabels()["app.kubernetes.io/part-of"] != "regcheck" {
			t.Errorf("%T %s has no part-of label", o, acc.GetName())
		}
	}
	if dep == nil || svc == nil || podMonitor == nil {
		t.Fatalf("deployment %v, service %v, podmonitor %v", dep != nil, svc != nil, podMonitor != nil)
	}
	if dep.Namespace != "regcheck" || dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("deployment %s/%s replicas %v, want 2 in regcheck", dep.Namespace, dep.Name, dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != "regcheck" || len(pod.Containers) != 1 {
		t.Fatalf("serviceAccountName %q, %d containers", pod.ServiceAccountName, len(pod.Containers))
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("pod securityContext %+v, want runAsNonRoot as 65532", sc)
	}
	c := pod.Containers[0]
	wantArgs := []string{"watch", "-A", "--configmap", "regcheck/" + historyName, "--leader-elect", "--leader-election-id", "regcheck-watch", "--metrics-bind-address", ":8080"}
	if !slices.Equal(c.Args, wantArgs) || c.Image != "registry.example.com/tools/regcheck:v1" {
		t.Errorf("args %q image %q, want %q and the kustomization's image", c.Args, c.Image, wantArgs)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("securityContext %+v", sc)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "metrics" {
		t.Errorf("readiness probe %+v", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v", p)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v", c.Ports)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Error("no memory limit")
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "metrics" || !reflect.DeepEqual(svc.Spec.Selector, dep.Spec.Selector.MatchLabels) {
		t.Errorf("service %+v does not select the watcher's metrics port", svc.Spec)
	}
	spec, _ := podMonitor["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	eps, _ := spec["podMetricsEndpoints"].([]any)
	if podMonitor["apiVersion"] != "monitoring.coreos.com/v1" || fmt.Sprint(sel["matchLabels"]) != fmt.Sprint(mapOf(dep.Spec.Selector.MatchLabels)) || len(eps) != 1 {
		t.Errorf("podmonitor %v", podMonitor)
	}
	if ep, _ := eps[0].(map[string]any); ep["port"] != "metrics" || ep["path"] != "/metrics" {
		t.Errorf("podmonitor endpoint %v", eps[0])
	}
	var watchRole *rbacv1.ClusterRole
	for _, cr := range crs {
		if cr.Name == "regcheck-watch" {
			watchRole = cr
		}
	}
	if watchRole == nil {
		t.Fatal("no ClusterRole regcheck-watch")
	}
	for _, res := range []string{"pods", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs"} {
		if !grants(watchRole.Rules, res, "", "watch") || !grants(watchRole.Rules, res, "", "list") {
			t.Errorf("ClusterRole regcheck-watch does not let the informers list and watch %s", res)
		}
	}
	lease, records := false, false
	for _, o := range render(t, "") { // the base's Role on the history
		if r, ok := o.(*rbacv1.Role); ok {
			roles = append(roles, r)
		}
	}
	for _, r := range roles {
		lease = lease || grants(r.Rules, "leases", "regcheck-watch", "get") && grants(r.Rules, "leases", "regcheck-watch", "update") && grants(r.Rules, "leases", "", "create")
		records = records || grants(r.Rules, "configmaps", historyName, "update")
	}
	if !lease || !records {
		t.Errorf("roles grant the Lease %v, the history ConfigMap %v", lease, records)
	}
}

func mapOf(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// grants reports whether rules allow verb on resource (named name, or
// any name when name is "").
func grants(rules []rbacv1.PolicyRule, resource, name, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
			(len(r.ResourceNames) == 0 || name != "" && slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}
