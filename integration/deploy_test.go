//go:build integration

package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/regcheck/regcheck/deploy"
	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// TestDeploy renders deploy/ with kustomize (an overlay naming the image,
// as a user's would), creates every object in a real kube-apiserver, and
// runs the CronJob's own arguments, read back from the API server, as its
// ServiceAccount: the RBAC of the base is enough for record and scan, and
// is no more (no Secret, no other ConfigMap, no pod, no Job).
func TestDeploy(t *testing.T) {
	ctx := t.Context()
	kc := startCluster(t)
	admin := clientFor(t, kc.Config)
	reg := startEmpty(t, registry.V3)
	gateway := startPushgateway(t)

	// What runs: regcheck's own image (any image does: the CronJob is a
	// workload like the others), a Deployment with a running pod, and a
	// CronJob whose tag was never pushed (broken).
	regcheckImage := reg.Host() + "/tools/regcheck"
	regcheckDigest := pushSingle(t, regcheckImage+":v1", "regcheck")
	webDigest := pushSingle(t, reg.Host()+"/shop/web:v1", "web")
	for _, ns := range []string{"shop", "ops"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// No controller-manager runs: the ServiceAccount admission needs "default" made by hand.
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	workload(t, ctx, admin, "shop", "web", reg.Host()+"/shop/web:v1", "IfNotPresent", "node-a", reg.Host()+"/shop/web@"+webDigest)
	report := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-report", Namespace: "ops"},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "report", Image: reg.Host() + "/ops/report:v2"}}},
		}}}},
	}
	if _, err := admin.BatchV1().CronJobs("ops").Create(ctx, report, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The cluster serves OpenShift's mirror set kinds, one IDMS created:
	// the base's RBAC must let scan --cluster read them (no "forbidden").
	if err := kubeapi.ApplyCRDs(ctx, kc.Config, filepath.Join("testdata", "openshift", "crds.yaml")); err != nil {
		t.Fatal(err)
	}
	createObject(t, ctx, dynamicFor(t, kc.Config), idmsResource, "ImageDigestMirrorSet", "shop",
		map[string]any{"imageDigestMirrors": []any{map[string]any{"source": "mirrored.example/shop", "mirrors": []any{"mirror.example/shop"}}}})

	// kubectl apply -k of an overlay on deploy/, with the image pinned.
	overlay := fmt.Sprintf("resources: [../base]\nimages:\n  - name: registry.example.com/tools/regcheck\n    newName: %s\n    digest: %s\n", regcheckImage, regcheckDigest)
	rendered, err := deploy.Render(overlay)
	if err != nil {
		t.Fatal(err)
	}
	created := applyAll(t, kc, rendered)
	t.Logf("created from deploy/ (kustomize): %s", strings.Join(created, ", "))

	cj, err := admin.BatchV1().CronJobs("regcheck").Get(ctx, "regcheck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("the CronJob has %d init containers and %d containers, want record then scan", len(pod.InitContainers), len(pod.Containers))
	}
	steps := []corev1.Container{pod.InitContainers[0], pod.Containers[0]}
	for _, c := range steps {
		if want := regcheckImage + "@" + regcheckDigest; c.Image != want {
			t.Errorf("%s runs %s, want the overlay's %s", c.Name, c.Image, want)
		}
	}

	// The ServiceAccount's token as the kubeconfig the CLI finds: the
	// arguments stay the CronJob's (in the pod, client-go finds the
	// mounted token the same way, with no flag).
	saCfg := actAs(t, kc, cj.Namespace, pod.ServiceAccountName)
	t.Setenv("HOME", t.TempDir()) // the pod's emptyDir
	t.Setenv("XDG_CACHE_HOME", "")
	sa := clientFor(t, saCfg)

	// Run each container's arguments; only the Pushgateway's address
	// differs (the cluster's service name does not resolve here).
	var transcript strings.Builder
	wantCode := map[string]int{"record": cli.ExitClean, "scan": cli.ExitFindings}
	for _, c := range steps {
		args := slices.Clone(c.Args)
		for i, a := range args {
			args[i] = strings.Replace(a, "http://pushgateway.monitoring:9091", gateway, 1)
		}
		code, stdout, stderr := runAuthorized(t, args)
		fmt.Fprintf(&transcript, "$ regcheck %s\n%s%s(exit %d)\n\n", strings.Join(c.Args, " "), stdout, stderr, code)
		if code != wantCode[c.Name] || strings.Contains(stderr, "forbidden") {
			t.Errorf("%s: regcheck %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.Name, strings.Join(args, " "), code, wantCode[c.Name], stdout, stderr)
		}
	}
	t.Logf("the CronJob's pod, as ServiceAccount regcheck/regcheck:\n\n%s", transcript.String())

	t.Run("the history is in the ConfigMap", func(t *testing.T) {
		cm, err := admin.CoreV1().ConfigMaps("regcheck").Get(ctx, "regcheck-history", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h := cm.Data["history.json"]; !strings.Contains(h, webDigest) || !strings.Contains(h, `"shop"`) {
			t.Errorf("history.json does not record shop/web's running digest %s:\n%.600s", webDigest, h)
		}
	})

	t.Run("the Pushgateway holds both commands' metrics", func(t *testing.T) {
		resp, err := http.Get(gateway + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		all := parseText(t, body)
		for _, command := range []string{"record", "scan"} {
			if len(find(all, "regcheck_last_success_timestamp_seconds", map[string]string{"job": "regcheck", "command": command})) == 0 {
				t.Errorf("no regcheck_last_success_timestamp_seconds{command=%q} on the Pushgateway", command)
			}
		}
		broken := find(all, "regcheck_use_findings", map[string]string{"namespace": "ops", "workload": "nightly-report", "verdict": "broken"})
		if len(broken) == 0 {
			t.Errorf("no broken series for ops/nightly-report")
		}
		for _, s := range broken {
			t.Logf("%s %g", s, s.value)
		}
	})

	t.Run("and no more", func(t *testing.T) {
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "regcheck"}, Data: map[string]string{"k": "v"}}
		if _, err := admin.CoreV1().ConfigMaps("regcheck").Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "shop"}, StringData: map[string]string{"password": "not-for-regcheck"}}
		if _, err := admin.CoreV1().Secrets("shop").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "regcheck"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}}}
		for name, call := range map[string]func() error{
			"get a secret": func() error {
				_, err := sa.CoreV1().Secrets("shop").Get(ctx, "regcred", metav1.GetOptions{})
				return err
			},
			"list secrets":         func() error { _, err := sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err },
			"list its own secrets": func() error { _, err := sa.CoreV1().Secrets("regcheck").List(ctx, metav1.ListOptions{}); return err },
			"get another ConfigMap": func() error {
				_, err := sa.CoreV1().ConfigMaps("regcheck").Get(ctx, "other", metav1.GetOptions{})
				return err
			},
			"update another ConfigMap": func() error {
				_, err := sa.CoreV1().ConfigMaps("regcheck").Update(ctx, other, metav1.UpdateOptions{})
				return err
			},
			"create a ConfigMap": func() error {
				_, err := sa.CoreV1().ConfigMaps("regcheck").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
				return err
			},
			"list ConfigMaps": func() error { _, err := sa.CoreV1().ConfigMaps("regcheck").List(ctx, metav1.ListOptions{}); return err },
			"delete the history": func() error {
				return sa.CoreV1().ConfigMaps("regcheck").Delete(ctx, "regcheck-history", metav1.DeleteOptions{})
			},
			"create a pod": func() error {
				_, err := sa.CoreV1().Pods("regcheck").Create(ctx, pod, metav1.CreateOptions{})
				return err
			},
			"create a pod elsewhere": func() error { _, err := sa.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{}); return err },
			"exec into a pod": func() error {
				return sa.CoreV1().RESTClient().Post().Namespace("shop").Resource("pods").Name("web-5d9c8-x7k2p").SubResource("exec").Do(ctx).Error()
			},
			"create a Job": func() error {
				_, err := sa.BatchV1().Jobs("regcheck").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}}, metav1.CreateOptions{})
				return err
			},
			"delete a Deployment": func() error { return sa.AppsV1().Deployments("shop").Delete(ctx, "web", metav1.DeleteOptions{}) },
			"read its own token": func() error {
				_, err := sa.CoreV1().ServiceAccounts("regcheck").Get(ctx, "regcheck", metav1.GetOptions{})
				return err
			},
			"mint a token": func() error {
				_, err := sa.CoreV1().ServiceAccounts("regcheck").CreateToken(ctx, "regcheck", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
				return err
			},
		} {
			if err := call(); !apierrors.IsForbidden(err) {
				t.Errorf("as the ServiceAccount, %s: %v, want Forbidden", name, err)
			}
		}

		// Everything the ServiceAccount may do, as the API server sums it up,
		// is what every authenticated user may (shop's default ServiceAccount,
		// bound to nothing) plus the inventory's get/list (the workload kinds,
		// the workload custom resources, the image policies, the
		// namespaces whose labels they select by, OpenShift's mirror sets)
		// and the history's
		// get/update (its head and four archives).
		inventory := map[string][]string{"": {"pods", "nodes", "namespaces"}, "apps": {"deployments", "statefulsets", "daemonsets", "replicasets"}, "batch": {"jobs", "cronjobs"},
			"kyverno.io": {"clusterpolicies", "policies"}, "policies.kyverno.io": {"imagevalidatingpolicies", "namespacedimagevalidatingpolicies"}, "policy.sigstore.dev": {"clusterimagepolicies", "trustroots"},
			"argoproj.io": {"rollouts", "workflowtemplates", "cronworkflows"}, "tekton.dev": {"tasks", "pipelines"},
			"serving.knative.dev": {"services"}, "keda.sh": {"scaledjobs"}, "apps.kruise.io": {"clonesets"},
			"postgresql.cnpg.io": {"clusters"}, "monitoring.coreos.com": {"prometheuses", "alertmanagers"},
			"config.openshift.io": {"imagedigestmirrorsets", "imagetagmirrorsets", "images"}, "operator.openshift.io": {"imagecontentsourcepolicies"}}
		regcheck := func(r right) bool {
			return (r.verb == "get" || r.verb == "list") && slices.Contains(inventory[r.group], r.resource) && r.name == "" ||
				(r.verb == "get" || r.verb == "update") && r.group == "" && r.resource == "configmaps" && r.namespace == "regcheck" &&
					slices.Contains([]string{"regcheck-history", "regcheck-history-1", "regcheck-history-2", "regcheck-history-3", "regcheck-history-4"}, r.name)
		}
		nobodyCfg, _, err := kc.ServiceAccountConfig(ctx, "shop", "default")
		if err != nil {
			t.Fatal(err)
		}
		nobody := clientFor(t, nobodyCfg)
		for _, ns := range []string{"regcheck", "shop"} {
			everyone := rights(t, nobody, ns)
			got := rights(t, sa, ns)
			for r := range got {
				if !everyone[r] && !regcheck(r) {
					t.Errorf("the ServiceAccount may %s", r)
				}
			}
			for r := range everyone {
				if regcheck(r) {
					t.Errorf("every authenticated user may %s: the test proves nothing of it", r)
				}
			}
		}
	})

	t.Run("gc-check-job.yaml as its ServiceAccount", func(t *testing.T) {
		// The example Job's namespace holds the registry (and its storage's claim).
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "registry"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		data, err := deploy.Files.ReadFile("gc-check-job.yaml")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("created from deploy/gc-check-job.yaml: %s", strings.Join(applyAll(t, kc, data), ", "))
		job, err := admin.BatchV1().Jobs("registry").Get(ctx, "regcheck-gc-check", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		actAs(t, kc, job.Namespace, job.Spec.Template.Spec.ServiceAccountName)
		// The registry's storage where the Job mounts it, and its address.
		args := slices.Clone(job.Spec.Template.Spec.Containers[0].Args)
		for i, a := range args {
			args[i] = strings.NewReplacer("/var/lib/registry", reg.Root, "registry.example.com", reg.Host()).Replace(a)
		}
		code, stdout, stderr := runAuthorized(t, args)
		t.Logf("$ regcheck %s\n%s%s(exit %d)", strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "), stdout, stderr, code)
		// Every in-use image is a tagged single image: a 2.8 collector
		// with --delete-untagged breaks none of them.
		if code != cli.ExitClean {
			t.Errorf("exit %d, want 0", code)
		}
	})
}

// actAs makes the CLI act as the ServiceAccount namespace/name, by a
// token for it in the kubeconfig $KUBECONFIG names (for the rest of the
// test), and returns a client config for it.
func actAs(t *testing.T, kc *kubeapi.Cluster, namespace, name string) *rest.Config {
	t.Helper()
	cfg, token, err := kc.ServiceAccountConfig(t.Context(), namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "testkube", token); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	return cfg
}

// runAuthorized runs regcheck in process with args, again while it is
// refused a request: RBAC objects reach the authorizer's cache shortly
// after they are created.
func runAuthorized(t *testing.T, args []string) (code int, stdout, stderr string) {
	t.Helper()
	eventually(t, func() (int, error) {
		var out, errb bytes.Buffer
		code = cli.Run(t.Context(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
		stdout, stderr = out.String(), errb.String()
		return code, nil
	}, func(int, error) bool { return !strings.Contains(stderr, "forbidden") })
	return code, stdout, stderr
}

// right is one verb on one resource (of one name, "" for any) in a namespace.
type right struct{ namespace, verb, group, resource, name string }

func (r right) String() string {
	return fmt.Sprintf("%s %s.%s %s in namespace %s", r.verb, r.resource, r.group, r.name, r.namespace)
}

// rights is what cs may do in namespace ns, by a SelfSubjectRulesReview.
func rights(t *testing.T, cs kubernetes.Interface, ns string) map[right]bool {
	t.Helper()
	rr, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(t.Context(), &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Status.Incomplete {
		t.Fatalf("the rules review of namespace %s is incomplete: %s", ns, rr.Status.EvaluationError)
	}
	out := map[right]bool{}
	for _, r := range rr.Status.ResourceRules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						out[right{ns, v, g, res, n}] = true
					}
				}
			}
		}
	}
	return out
}

// applyAll creates every object of a multi-document YAML as admin, through
// the dynamic client (any kind the API server serves), and names them.
func applyAll(t *testing.T, kc *kubeapi.Cluster, docs []byte) []string {
	t.Helper()
	dc, err := dynamic.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kc.Client()
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(admin.Discovery()))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(docs), 4096)
	var names []string
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return names
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dc.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatalf("creating %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		names = append(names, gvk.Kind+" "+strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/"))
	}
}
