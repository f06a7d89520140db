//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/bcrypt"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// secretKeyPolicies are a Kyverno Enforce ClusterPolicy on HOST/kyv/*
// whose key is the Secret keys/cosign-key (keys.secret: Kyverno reads its
// cosign.pub), and a policy-controller ClusterImagePolicy on HOST/pc/**
// whose key authority is the Secret pc-key (key.secretRef: read in
// policy-controller's namespace, cosign-system, whatever the reference's
// namespace). Both ignore the transparency log (rekor.ignoreTlog; no
// ctlog), the images being signed with --tlog-upload=false.
const secretKeyPolicies = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed-by-secret
spec:
  rules:
    - name: verify
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/kyv/*"]
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    secret:
                      name: cosign-key
                      namespace: keys
                    rekor: {ignoreTlog: true}
---
apiVersion: policy.sigstore.dev/v1alpha1
kind: ClusterImagePolicy
metadata:
  name: signed-by-secret-ref
spec:
  images:
    - glob: "HOST/pc/**"
  authorities:
    - key:
        secretRef:
          name: pc-key
          namespace: elsewhere
`

// TestAdmissionSecret: keys kept in Kubernetes Secrets, read in --cluster
// mode with a GET of each Secret a policy names. Images signed with real
// cosign v3.1.3 with key A or key B, a real apiserver holding the engines'
// CRDs, the policies and the Secrets holding key A's PEM. The truth is
// cosign verify --key with the same PEM: exit 0 for A's signatures
// (regcheck: ok), not 0 for B's (regcheck: broken, signature-refused). A
// kubeconfig that may read the policies but not the Secrets gives unknown,
// naming the Secret and the grant; a Role with get on those Secrets alone
// (resourceNames, as the chart's policyKeySecrets writes) makes it ok.
func TestAdmissionSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	keyA, keyB := newAdmCosign(t), newAdmCosign(t)
	reg := startEmpty(t, registry.V3)
	host := reg.Host()
	images := map[string]admImage{
		"kyv-a": pushAndSign(t, keyA, host, "kyv/a"), "kyv-b": pushAndSign(t, keyB, host, "kyv/b"),
		"pc-a": pushAndSign(t, keyA, host, "pc/a"), "pc-b": pushAndSign(t, keyB, host, "pc/b"),
	}
	pemA, err := os.ReadFile(keyA.Pub)
	if err != nil {
		t.Fatal(err)
	}
	// The truth: cosign verify with key A's PEM, the log ignored as both
	// policies ignore it.
	for n, im := range images {
		ok, out, err := keyA.VerifyKey(ctx, strings.TrimSuffix(im.ref, ":v1")+"@"+im.digest, keyA.Pub, cosign.Legacy, true, "")
		if want := strings.HasSuffix(n, "-a"); err != nil || ok != want {
			t.Fatalf("cosign verify --key A %s: %v (%v), want %v\n%s", im.ref, ok, err, want, out)
		}
	}

	kc, cs := startKube(t, ctx)
	for _, ns := range []string{"prod", "keys", "cosign-system", "elsewhere"} {
		namespaceWithSA(t, ctx, cs, ns)
	}
	labelNamespace(t, ctx, cs, "prod", "policy.sigstore.dev/include", "true")
	for n, im := range images {
		workload(t, ctx, cs, "prod", n, im.ref, "IfNotPresent", "node-a", strings.TrimSuffix(im.ref, ":v1")+"@"+im.digest)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "keys", Name: "cosign-key"}, Data: map[string][]byte{"cosign.pub": pemA}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "cosign-system", Name: "pc-key"}, Data: map[string][]byte{"cosign.pub": pemA}},
		// The reference's own namespace, which policy-controller does not read: key B there.
		{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "pc-key"}, Data: map[string][]byte{"cosign.pub": mustRead(t, keyB.Pub)}},
	} {
		if _, err := cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kc.InstallPolicyCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	applyPolicies(t, ctx, dyn, strings.ReplaceAll(secretKeyPolicies, "HOST", host))
	admin := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(admin, "adm", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}

	want := map[string]types.Verdict{"kyv-a": types.OK, "kyv-b": types.Broken, "pc-a": types.OK, "pc-b": types.Broken}
	t.Run("the Secrets read: key A ok, key B broken", func(t *testing.T) {
		code, got, _, stderr := clusterScanErr(t, admin)
		for n, im := range images {
			r := got[im.ref]
			if r == nil || r.Verdict != want[n] {
				t.Errorf("%s: %+v, want %s\n%s", n, r, want[n], stderr)
				continue
			}
			if want[n] == types.Broken {
				f := findingOf(r, types.SignatureRefused)
				if f == nil || !strings.Contains(f.Message, "Secret ") || !strings.Contains(f.Message, "cosign refuses it") {
					t.Errorf("%s: %+v, want signature-refused naming the Secret and cosign's refusal", n, r.Findings)
				}
			}
		}
		if code != cli.ExitFindings {
			t.Errorf("exit %d, want %d", code, cli.ExitFindings)
		}
		if strings.Contains(stderr, strings.Split(string(pemA), "\n")[1]) {
			t.Error("key material in the logs")
		}
	})

	noSecrets := policyReaderKubeconfig(t, ctx, kc)
	t.Run("no get on the Secrets: unknown, naming the Secret and the grant", func(t *testing.T) {
		code, got, _, _ := clusterScanErr(t, noSecrets)
		for n, im := range images {
			r := got[im.ref]
			if r == nil || r.Verdict != types.Unknown {
				t.Errorf("%s: %+v, want unknown", n, r)
				continue
			}
			f := findingOf(r, types.SignatureUnverifiable)
			secret := "Secret keys/cosign-key (cosign.pub)"
			if strings.HasPrefix(n, "pc") {
				secret = "Secret cosign-system/pc-key"
			}
			if f == nil || !strings.Contains(f.Message, secret+" could not be read (forbidden") || !strings.Contains(f.Message, "grant get on that Secret") {
				t.Errorf("%s: %+v, want signature-unverifiable naming %s and the grant", n, r.Findings, secret)
			}
		}
		if code != cli.ExitIncomplete {
			t.Errorf("exit %d, want %d", code, cli.ExitIncomplete)
		}
	})

	t.Run("get on those Secrets alone (resourceNames): as with admin", func(t *testing.T) {
		grantSecretGet(t, ctx, cs, "keys", "cosign-key")
		grantSecretGet(t, ctx, cs, "cosign-system", "pc-key")
		_, got, _, _ := clusterScanErr(t, noSecrets)
		for n, im := range images {
			if r := got[im.ref]; r == nil || r.Verdict != want[n] {
				t.Errorf("%s: %+v, want %s", n, r, want[n])
			}
		}
	})
}

// mustRead is a file's content.
func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// labelNamespace sets one label on a namespace.
func labelNamespace(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, k, v string) {
	t.Helper()
	n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{k: v}
	if _, err := cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// policyReaderKubeconfig writes a kubeconfig for a ServiceAccount that may
// read what inventory lists, the namespaces and the image policies, and no
// Secret (deploy/rbac.yaml's grants, without policyKeySecrets).
func policyReaderKubeconfig(t *testing.T, ctx context.Context, kc *kubeapi.Cluster) string {
	t.Helper()
	cs, err := kc.Client()
	if err != nil {
		t.Fatal(err)
	}
	read := []string{"get", "list"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "policy-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "namespaces"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: read},
		{APIGroups: []string{"kyverno.io"}, Resources: []string{"clusterpolicies", "policies"}, Verbs: read},
		{APIGroups: []string{"policy.sigstore.dev"}, Resources: []string{"clusterimagepolicies"}, Verbs: read}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("prod").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "policy-reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "policy-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "policy-reader", Namespace: "prod"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, token, err := kc.ServiceAccountConfig(ctx, "prod", "policy-reader")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(p, "policy-reader", token); err != nil {
		t.Fatal(err)
	}
	return p
}

// grantSecretGet lets prod/policy-reader get the one Secret ns/name: a
// Role with resourceNames, as the chart's policyKeySecrets renders it.
func grantSecretGet(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "policy-keys"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-keys"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "policy-keys"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "policy-reader", Namespace: "prod"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC is read from the apiserver's informer: wait until it says yes.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if rbacAllows(ctx, cs, ns, name) {
			return
		}
	}
	t.Fatalf("get on Secret %s/%s not granted after 10s", ns, name)
}

// rbacAllows asks the apiserver whether prod/policy-reader may get the
// Secret ns/name.
func rbacAllows(ctx context.Context, cs kubernetes.Interface, ns, name string) bool {
	r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, subjectReview(ns, name), metav1.CreateOptions{})
	return err == nil && r.Status.Allowed
}

// subjectReview asks whether prod/policy-reader may get Secret ns/name.
func subjectReview(ns, name string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:prod:policy-reader",
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:prod", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "secrets", Name: name}}}
}

// privateKeyPolicy is a Kyverno Enforce ClusterPolicy on HOST/private/*
// with key PUB inline, the log ignored.
const privateKeyPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: private-signed
spec:
  rules:
    - name: verify
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/private/*"]
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true}
`

// TestAdmissionPullSecret: a registry that requires a password, images
// and their cosign signatures readable only with the pods' pull secret.
// With --pull-secrets the signatures are looked for and verified with the
// same credentials as the images are walked with: signed with the
// policy's key, ok (cosign verify with those credentials: exit 0); with
// another key, broken (cosign: exit not 0). Without --pull-secrets the
// images are unknown (401), never broken; the password never shows.
func TestAdmissionPullSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const user, password = "sig-puller", "s3cret-sig-password"
	reg := startPrivateRegistry(t, ctx, user, password)
	host := reg.Host()
	creds := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	dockerCfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
	if err := os.WriteFile(filepath.Join(creds, "config.json"), []byte(dockerCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	keyA, keyB := newAdmCosign(t), newAdmCosign(t)
	t.Setenv("DOCKER_CONFIG", creds) // cosign signs and verifies with the password
	good := pushPrivateSigned(t, keyA, host, "private/good", user, password)
	bad := pushPrivateSigned(t, keyB, host, "private/bad", user, password)
	for _, c := range []struct {
		im   admImage
		want bool
	}{{good, true}, {bad, false}} {
		ok, out, err := keyA.VerifyKey(ctx, strings.TrimSuffix(c.im.ref, ":v1")+"@"+c.im.digest, keyA.Pub, cosign.Legacy, true, "")
		if err != nil || ok != c.want {
			t.Fatalf("cosign verify --key A %s: %v (%v), want %v\n%s", c.im.ref, ok, err, c.want, out)
		}
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // regcheck has only the pull secret

	kc, cs := startKube(t, ctx)
	namespaceWithSA(t, ctx, cs, "private")
	if _, err := cs.CoreV1().Secrets("private").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerCfg)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withSecret := func(s *corev1.PodSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}} }
	for n, im := range map[string]admImage{"good": good, "bad": bad} {
		workloadWith(t, ctx, cs, "private", n, im.ref, "IfNotPresent", "node-a", strings.TrimSuffix(im.ref, ":v1")+"@"+im.digest, withSecret)
	}
	if err := kc.InstallPolicyCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	applyPolicies(t, ctx, dyn, strings.NewReplacer("HOST", host, "PUB", pubYAML(t, keyA)).Replace(privateKeyPolicy))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "adm", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name      string
		flags     []string
		code      int
		good, bad types.Verdict
		badCode   types.Code
	}{
		{"with the pull secret: verified with it", []string{"--pull-secrets"}, cli.ExitFindings, types.OK, types.Broken, types.SignatureRefused},
		{"without: unknown, never broken", nil, cli.ExitIncomplete, types.Unknown, types.Unknown, types.Unauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"scan", "--cluster", "-n", "private", "--kubeconfig", kubeconfig, "-o", "json", "--log-level", "debug"}, tc.flags...)
			code := cli.Run(ctx, cli.Streams{Out: &out, Err: &errb}, args)
			if bytes.Contains(out.Bytes(), []byte(password)) || bytes.Contains(errb.Bytes(), []byte(password)) || bytes.Contains(errb.Bytes(), []byte(auth)) {
				t.Fatal("the registry password appears in regcheck's output or logs")
			}
			var doc report.Document
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, out.String(), errb.String())
			}
			got := byReference(doc)
			g, b := got[good.ref], got[bad.ref]
			if g == nil || b == nil {
				t.Fatalf("images %v", doc.Images)
			}
			if code != tc.code || g.Verdict != tc.good || b.Verdict != tc.bad || findingOf(b, tc.badCode) == nil {
				t.Errorf("exit %d, good %s %+v, bad %s %+v; want exit %d, %s, %s with %s", code, g.Verdict, g.Findings, b.Verdict, b.Findings, tc.code, tc.good, tc.bad, tc.badCode)
			}
		})
	}
}

// startPrivateRegistry starts distribution 3 requiring user's password.
func startPrivateRegistry(t *testing.T, ctx context.Context, user, password string) *registry.Registry {
	t.Helper()
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, err := registry.Binary(registry.V3)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Start(ctx, bin, filepath.Join(dir, "registry"), "", registry.WithHtpasswd(htpasswd))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	return reg
}

// pushPrivateSigned pushes an image to host/repo:v1 with the password and
// signs its digest with c in the legacy layout (cosign reads the password
// from DOCKER_CONFIG).
func pushPrivateSigned(t *testing.T, c *cosign.Cosign, host, repo, user, password string) admImage {
	t.Helper()
	ref := host + "/" + repo + ":v1"
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, ggcrtypes.DockerManifestSchema2), static.NewLayer([]byte("private "+repo), ggcrtypes.DockerLayer))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: user, Password: password})); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sign(context.Background(), host+"/"+repo+"@"+d.String(), cosign.Legacy, false); err != nil {
		t.Fatal(err)
	}
	return admImage{ref: ref, digest: d.String()}
}
