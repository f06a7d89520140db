//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

// startCluster starts the real kube-apiserver + etcd. Missing binaries fail
// the test: under the integration tag they are a requirement, not an option.
func startCluster(t *testing.T) *kubeapi.Cluster {
	t.Helper()
	binDir := kubeapi.DefaultBinDir()
	start := time.Now()
	c, err := kubeapi.Start(t.Context(), t.TempDir(), binDir)
	if err != nil {
		t.Fatalf("starting kube-apiserver from %s: %v", binDir, err)
	}
	t.Cleanup(c.Stop)
	t.Logf("kube-apiserver ready at %s in %v", c.URL, time.Since(start).Round(time.Millisecond))
	return c
}

// applyManifest decodes every document of a YAML file with client-go's
// universal deserializer and creates it.
func applyManifest(ctx context.Context, cs kubernetes.Interface, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	dec := scheme.Codecs.UniversalDeserializer()
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: decoding: %w", path, err)
		}
		if err := create(ctx, cs, obj); err != nil {
			return fmt.Errorf("%s: creating %s: %w", path, gvk.Kind, err)
		}
	}
}

func create(ctx context.Context, cs kubernetes.Interface, obj runtime.Object) error {
	var err error
	o := metav1.CreateOptions{}
	switch v := obj.(type) {
	case *corev1.Namespace:
		_, err = cs.CoreV1().Namespaces().Create(ctx, v, o)
	case *corev1.ServiceAccount:
		_, err = cs.CoreV1().ServiceAccounts(v.Namespace).Create(ctx, v, o)
	case *corev1.ConfigMap:
		_, err = cs.CoreV1().ConfigMaps(v.Namespace).Create(ctx, v, o)
	case *rbacv1.ClusterRole:
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, v, o)
	case *rbacv1.ClusterRoleBinding:
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, v, o)
	case *rbacv1.Role:
		_, err = cs.RbacV1().Roles(v.Namespace).Create(ctx, v, o)
	case *rbacv1.RoleBinding:
		_, err = cs.RbacV1().RoleBindings(v.Namespace).Create(ctx, v, o)
	default:
		return fmt.Errorf("unexpected object %T", obj)
	}
	return err
}

// eventually retries f for a few seconds: RBAC objects reach the
// authorizer's cache shortly after they are created.
func eventually[T any](t *testing.T, f func() (T, error), done func(T, error) bool) (T, error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := f()
		if done(v, err) || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestClusterInventoryAndRecord(t *testing.T) {
	ctx := t.Context()
	kc := startCluster(t)
	admin := clientFor(t, kc.Config)

	rbac := filepath.Join("..", "deploy", "rbac.yaml")
	if err := applyManifest(ctx, admin, rbac); err != nil {
		t.Fatal(err)
	}
	scenario := kubeapi.Scenario{Namespace: "shop"}
	if err := scenario.Apply(ctx, admin); err != nil {
		t.Fatal(err)
	}
	want := scenario.Want()

	t.Run("inventory as admin", func(t *testing.T) {
		got, err := inventory.List(ctx, admin, "")
		if err != nil {
			t.Fatal(err)
		}
		kubeapi.AssertInventory(t, want, got)
		got, err = inventory.List(ctx, admin, "shop")
		if err != nil {
			t.Fatal(err)
		}
		kubeapi.AssertInventory(t, want, got)
	})

	saCfg, _, err := kc.ServiceAccountConfig(ctx, "regcheck", "regcheck")
	if err != nil {
		t.Fatal(err)
	}
	sa := clientFor(t, saCfg)

	t.Run("inventory as the regcheck ServiceAccount with deploy/rbac.yaml", func(t *testing.T) {
		got, err := eventually(t, func() (*inventory.Inventory, error) { return inventory.List(ctx, sa, "") },
			func(_ *inventory.Inventory, err error) bool { return !apierrors.IsForbidden(err) })
		if err != nil {
			t.Fatal(err)
		}
		kubeapi.AssertInventory(t, want, got)
	})

	t.Run("pull secrets as the regcheck ServiceAccount with deploy/rbac-pull-secrets.yaml", func(t *testing.T) {
		// What --pull-secrets reads (go-containerregistry pkg/authn/kubernetes,
		// as cluster.CheckWithPullSecretsThen calls it): the pod's imagePullSecrets
		// and its ServiceAccount's, by name, in the pod's namespace.
		dockerConfig := func(host, user string) map[string][]byte {
			auth := base64.StdEncoding.EncodeToString([]byte(user + ":not-a-real-password"))
			return map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth))}
		}
		for _, sec := range []*corev1.Secret{
			{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson, Data: dockerConfig("registry.example.com", "pod-puller")},
			{ObjectMeta: metav1.ObjectMeta{Name: "sa-cred"}, Type: corev1.SecretTypeDockerConfigJson, Data: dockerConfig("ghcr.io", "sa-puller")},
		} {
			if _, err := admin.CoreV1().Secrets("shop").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		defSA, err := admin.CoreV1().ServiceAccounts("shop").Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defSA.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "sa-cred"}}
		if _, err := admin.CoreV1().ServiceAccounts("shop").Update(ctx, defSA, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		keychain := func() (authn.Keychain, error) {
			return k8sauth.New(ctx, sa, k8sauth.Options{Namespace: "shop", ServiceAccountName: "default", ImagePullSecrets: []string{"regcred"}})
		}
		// Without the binding the ServiceAccount cannot read them: the check below means something.
		if _, err := keychain(); !apierrors.IsForbidden(err) {
			t.Fatalf("reading pull secrets before rbac-pull-secrets.yaml: %v, want Forbidden", err)
		}
		if err := applyManifest(ctx, admin, filepath.Join("..", "deploy", "rbac-pull-secrets.yaml")); err != nil {
			t.Fatal(err)
		}
		kc, err := eventually(t, keychain, func(_ authn.Keychain, err error) bool { return !apierrors.IsForbidden(err) })
		if err != nil {
			t.Fatalf("reading pull secrets with the shipped roles: %v", err)
		}
		for host, user := range map[string]string{"registry.example.com": "pod-puller", "ghcr.io": "sa-puller"} {
			reg, err := name.NewRegistry(host)
			if err != nil {
				t.Fatal(err)
			}
			a, err := kc.Resolve(reg)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := a.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Username != user {
				t.Errorf("credentials for %s: user %q, want %q", host, cfg.Username, user)
			}
		}
		// get is all the role grants: listing every Secret stays forbidden.
		if _, err := sa.CoreV1().Secrets("shop").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing secrets as the regcheck ServiceAccount: %v, want Forbidden", err)
		}
	})

	t.Run("a role without list on daemonsets fails naming verb and resource", func(t *testing.T) {
		role, err := admin.RbacV1().ClusterRoles().Get(ctx, "regcheck-inventory", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		limited := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "regcheck-inventory-limited"}}
		for _, r := range role.Rules {
			if !containsString(r.Resources, "daemonsets") {
				limited.Rules = append(limited.Rules, r)
				continue
			}
			// Split daemonsets out and keep only get on it.
			rest := r.DeepCopy()
			rest.Resources = without(r.Resources, "daemonsets")
			limited.Rules = append(limited.Rules, *rest,
				rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: []string{"daemonsets"}, Verbs: without(r.Verbs, "list")})
		}
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, limited, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts("regcheck").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "limited"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "regcheck-inventory-limited"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "regcheck-inventory-limited"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "limited", Namespace: "regcheck"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := kc.ServiceAccountConfig(ctx, "regcheck", "limited")
		if err != nil {
			t.Fatal(err)
		}
		limitedClient := clientFor(t, cfg)
		_, err = eventually(t, func() (*inventory.Inventory, error) { return inventory.List(ctx, limitedClient, "") },
			func(_ *inventory.Inventory, err error) bool {
				return err != nil && strings.Contains(err.Error(), "daemonsets")
			})
		if err == nil {
			t.Fatal("List succeeded without list on daemonsets")
		}
		t.Logf("error: %v", err)
		for _, s := range []string{"listing daemonsets.apps in all namespaces", `cannot list resource "daemonsets" in API group "apps"`} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q\ndoes not contain %q", err, s)
			}
		}
		if !apierrors.IsForbidden(err) {
			t.Errorf("error lost its Forbidden status: %v", err)
		}
	})

	t.Run("record: snapshot, restart onto a new digest, diff", func(t *testing.T) {
		file := &record.File{Path: filepath.Join(t.TempDir(), "state", "history.json")}
		cmStore := &record.ConfigMap{Client: sa, Namespace: "regcheck", Name: "regcheck-history"}
		t1 := time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC)

		inv, err := inventory.List(ctx, sa, "")
		if err != nil {
			t.Fatal(err)
		}
		s1 := record.FromInventory("testkube", t1, inv)
		for _, st := range []record.Store{file, cmStore} {
			res, err := record.Save(ctx, st, s1)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Changes) != 0 || !res.Previous.Time.IsZero() {
				t.Errorf("first snapshot into %T: %+v", st, res)
			}
		}

		// The kubelet restarted nginx in one web pod and it pulled a new digest.
		if err := kubeapi.SetImageID(ctx, admin, "shop", "web-7d9f-aaaaa", "nginx", "docker.io/library/nginx@"+kubeapi.DigestNginxV2); err != nil {
			t.Fatal(err)
		}
		inv, err = inventory.List(ctx, sa, "")
		if err != nil {
			t.Fatal(err)
		}
		s2 := record.FromInventory("testkube", t1.Add(time.Hour), inv)
		wantChange := []recordresult.Change{{
			Cluster: "testkube", Namespace: "shop", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx",
			Pod: "web-7d9f-aaaaa", Node: "node-a", Image: "nginx:1.27", From: []string{kubeapi.DigestNginx}, To: kubeapi.DigestNginxV2,
		}}
		var histories []*record.History
		for _, st := range []record.Store{file, cmStore} {
			res, err := record.Save(ctx, st, s2)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Changes, wantChange) {
				t.Errorf("changes in %T:\n got %+v\nwant %+v", st, res.Changes, wantChange)
			}
			if res.Trimmed != 0 {
				t.Errorf("%T trimmed %d records", st, res.Trimmed)
			}
			h, err := st.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			histories = append(histories, h)
		}
		// The ConfigMap round-trips to the same history as the file.
		if !reflect.DeepEqual(histories[0], histories[1]) {
			t.Errorf("file and ConfigMap histories differ:\nfile %+v\ncm   %+v", histories[0], histories[1])
		}
		// Both digests of web/nginx are kept; both were last seen now (one pod
		// each), so pin --from-records picks the newer rollout and Find shows both.
		h := histories[0]
		q := record.Query{Namespace: "shop", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx"}
		if r, ok := h.Running(q); !ok || r.Digest != kubeapi.DigestNginxV2 {
			t.Errorf("Running(web/nginx) = %+v, %v", r, ok)
		}
		if rs := h.Find(q); len(rs) != 2 || rs[1].Digest != kubeapi.DigestNginx || rs[1].Pod != "web-7d9f-bbbbb" {
			t.Errorf("Find(web/nginx) = %+v", rs)
		}
		// Every running container of the scenario is recorded (templates are
		// not), counted from the scenario's own list, not from the snapshot:
		// one entry per pod container, one record per (owner, container,
		// digest), plus one for the new digest.
		pods, records := scenarioRecords(want)
		if len(s1.Entries) != pods || len(h.Records) != records+1 {
			t.Errorf("snapshot has %d entries (want %d), history %d records (want %d)", len(s1.Entries), pods, len(h.Records), records+1)
		}
	})

	t.Run("record: concurrent ConfigMap updates keep every entry", func(t *testing.T) {
		const writers, rounds = 6, 4
		inv, err := inventory.List(ctx, admin, "shop")
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, writers*rounds)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				st := &record.ConfigMap{Client: admin, Namespace: "regcheck", Name: "concurrent"}
				for i := range rounds {
					s := record.FromInventory(fmt.Sprintf("cluster-%d-%d", w, i), time.Unix(1_800_000_000, 0), inv)
					if _, err := record.Save(ctx, st, s); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		h, err := (&record.ConfigMap{Client: admin, Namespace: "regcheck", Name: "concurrent"}).Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Records per snapshot: the scenario's distinct (owner, container,
		// digest), plus web-7d9f-aaaaa's new digest since the restart above.
		_, per := scenarioRecords(want)
		if got, want := len(h.Records), writers*rounds*(per+1); got != want {
			t.Errorf("got %d records, want %d", got, want)
		}
	})

	t.Run("record: ConfigMap trims against the real API server", func(t *testing.T) {
		st := &record.ConfigMap{Client: admin, Namespace: "regcheck", Name: "trimmed", MaxBytes: 8 << 10}
		var trimmed int
		for i := range 30 {
			inv, err := inventory.List(ctx, admin, "shop")
			if err != nil {
				t.Fatal(err)
			}
			s := record.FromInventory(fmt.Sprintf("cluster-%02d", i), time.Unix(1_800_000_000+int64(i)*60, 0), inv)
			res, err := record.Save(ctx, st, s)
			if err != nil {
				t.Fatal(err)
			}
			trimmed += res.Trimmed
			if res.Trimmed > 0 && !strings.Contains(res.Message, "trimmed the") {
				t.Errorf("trim message %q", res.Message)
			}
		}
		if trimmed == 0 {
			t.Fatal("nothing was trimmed")
		}
		h, err := st.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := h.Latest("cluster-29"); !ok {
			t.Errorf("the newest snapshot was trimmed")
		}
		if _, ok := h.Latest("cluster-00"); ok {
			t.Errorf("the oldest snapshot was kept")
		}
	})

	t.Run("regcheck record: namespace-scoped runs and a full ConfigMap", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := kc.WriteKubeconfig(kubeconfig, "testkube", kc.Config.BearerToken); err != nil {
			t.Fatal(err)
		}
		run := func(args ...string) (stdout, stderr string) {
			t.Helper()
			var out, errb bytes.Buffer
			args = append([]string{"record", "--kubeconfig", kubeconfig}, args...)
			if code := cli.Run(ctx, cli.Streams{Out: &out, Err: &errb}, args); code != cli.ExitClean {
				t.Fatalf("regcheck %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errb.String())
			}
			return out.String(), errb.String()
		}

		// A second namespace with one running pod.
		// No controller-manager runs: the ServiceAccount admission needs "default" made by hand.
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ServiceAccounts("other").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := admin.CoreV1().Pods("other").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "solo"},
			Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "main", Image: "alpine:3.22"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "docker.io/library/alpine:3.22",
			ImageID: "docker.io/library/alpine@" + kubeapi.DigestAlpine,
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(kubeapi.Started)}}}}
		if _, err := admin.CoreV1().Pods("other").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}

		// record -n shop, record -n other, a restart in shop, record -n shop --diff:
		// shop is compared with shop's last run, not with other's.
		history := filepath.Join(t.TempDir(), "history.json")
		run("-n", "shop", "--out", history)
		out, _ := run("-n", "other", "--out", history, "--diff")
		if !strings.Contains(out, "no previous snapshot of testkube") {
			t.Errorf("first run of -n other --diff:\n%s\nwant it to say there is no previous snapshot", out)
		}
		if err := kubeapi.SetImageID(ctx, admin, "shop", "web-7d9f-bbbbb", "nginx", "docker.io/library/nginx@"+kubeapi.DigestNginxV2); err != nil {
			t.Fatal(err)
		}
		out, _ = run("-n", "shop", "--out", history, "--diff", "-o", "json")
		var doc struct{ Changes []recordresult.Change }
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v in:\n%s", err, out)
		}
		wantChange := []recordresult.Change{{
			Cluster: "testkube", Namespace: "shop", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx",
			Pod: "web-7d9f-bbbbb", Node: "node-b", Image: "nginx:1.27", From: []string{kubeapi.DigestNginx}, To: kubeapi.DigestNginxV2,
		}}
		if !reflect.DeepEqual(doc.Changes, wantChange) {
			t.Errorf("record -n shop --diff after record -n other:\n got %+v\nwant %+v", doc.Changes, wantChange)
		}

		// A ConfigMap history just under the size limit: this run moves its
		// oldest records to the archive cli-trim-1 and trims nothing.
		cm := &record.ConfigMap{Client: admin, Namespace: "regcheck", Name: "cli-trim"}
		old := nearlyFullHistory(t, record.DefaultConfigMapMaxBytes-500)
		if _, err := cm.Update(ctx, func(h *record.History) error {
			h.Records = old
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		_, stderr := run("-n", "shop", "--configmap", "regcheck/cli-trim")
		if strings.Contains(stderr, "trimmed") {
			t.Errorf("the run trimmed history although the archives had room; stderr:\n%s", stderr)
		}
		split := &record.ConfigMap{Client: admin, Namespace: "regcheck", Name: "cli-trim", Archives: record.DefaultConfigMapArchives}
		whole, err := split.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(whole.Records) <= len(old) {
			t.Errorf("head and archives hold %d records, want the %d old ones and the run's", len(whole.Records), len(old))
		}
		if a, err := admin.CoreV1().ConfigMaps("regcheck").Get(ctx, record.ArchiveName("cli-trim", 1), metav1.GetOptions{}); err != nil || a.Data[record.ConfigMapKey] == "" {
			t.Errorf("archive cli-trim-1: %v, want the oldest records", err)
		}
	})
}

// scenarioRecords counts, in the scenario's expected inventory (written
// out by hand, not computed by the code under test), the containers of its
// pods and the records a snapshot of them makes: one per distinct (owner,
// container, running digest).
func scenarioRecords(want *inventory.Inventory) (pods, records int) {
	type key struct{ kind, name, container, digest string }
	keys := map[key]bool{}
	for _, c := range want.Containers {
		if c.Pod == "" {
			continue // a template: nothing runs it
		}
		pods++
		keys[key{c.OwnerKind, c.OwnerName, c.Container, c.RunningDigest}] = true
	}
	return pods, len(keys)
}

// nearlyFullHistory returns old records whose compact encoding is at most
// size bytes and within 2 KiB of it.
func nearlyFullHistory(t *testing.T, size int) []record.Record {
	t.Helper()
	rec := func(i int) record.Record {
		return record.Record{
			Key: record.Key{Cluster: "old", Namespace: "ns", OwnerKind: "Deployment", OwnerName: fmt.Sprintf("app-%07d", i),
				Container: "c", Digest: fmt.Sprintf("sha256:%064x", i)},
			FirstSeen: time.Unix(1_700_000_000, 0).UTC(), LastSeen: time.Unix(1_700_000_000, 0).UTC(),
			Pod: fmt.Sprintf("app-%07d-abcde", i), Image: "example.com/app:1",
		}
	}
	one, err := json.Marshal(rec(0))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]record.Record, size/(len(one)+1))
	for i := range recs {
		recs[i] = rec(i)
	}
	for {
		b, err := record.Encode(&record.History{Records: recs}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) <= size {
			if len(b) < size-2048 {
				t.Fatalf("history of %d bytes, want close to %d", len(b), size)
			}
			return recs
		}
		recs = recs[:len(recs)-1]
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func without(ss []string, s string) []string {
	var out []string
	for _, x := range ss {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
