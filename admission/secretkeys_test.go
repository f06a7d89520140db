package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// realPEM is a fresh ECDSA P-256 public key, PEM-encoded, as cosign
// public-key writes one.
func realPEM(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// secretOf is a Secret holding data.
func secretOf(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// kyvernoSecretEntry is an attestor entry naming its key by keys.secret.
func kyvernoSecretEntry(ns, name string) string {
	return fmt.Sprintf("                - keys:\n                    secret:\n                      name: %s\n                      namespace: %s\n", name, ns) + ignoreTlog
}

// secretAuthority is a ClusterImagePolicy key authority naming a Secret.
func secretAuthority(ns, name string) string {
	return fmt.Sprintf("    - key:\n        secretRef:\n          name: %s\n          namespace: %s\n", name, ns)
}

// TestReadSecrets: keys kept in Secrets are read with one GET per Secret
// the policies name (never a list) and verified as inline keys: Kyverno's
// keys.secret and k8s:// publicKeys read cosign.pub in the namespace
// named; policy-controller's key.secretRef reads the one entry of the
// Secret in its own namespace, whatever secretRef.namespace says. A
// Secret that cannot be read leaves the entry unknown, naming the Secret
// and what to do, and no finding holds key material.
func TestReadSecrets(t *testing.T) {
	a, b := realPEM(t), realPEM(t)
	good := map[string]Outcome{a: Verified}
	forbidden := func(action k8stesting.Action) (bool, runtime.Object, error) {
		get := action.(k8stesting.GetAction)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, get.GetName(), fmt.Errorf("no RBAC"))
	}
	for _, c := range []struct {
		name     string
		policy   string
		secrets  []*corev1.Secret
		react    k8stesting.ReactionFunc
		want     types.Verdict
		mentions string
		gets     string // the Secrets read, in order
	}{
		{"kyverno keys.secret, key A: ok", kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign")),
			[]*corev1.Secret{secretOf("keys", "cosign", map[string]string{"cosign.pub": a, "cosign.key": "private, never read"})}, nil, types.OK, "", "keys/cosign"},
		{"kyverno keys.secret, key B: broken", kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign")),
			[]*corev1.Secret{secretOf("keys", "cosign", map[string]string{"cosign.pub": b})}, nil, types.Broken,
			"keys.secret (Secret keys/cosign (cosign.pub)) for Deployment dev/web; the signature is there, and cosign refuses it", "keys/cosign"},
		{"kyverno k8s:// publicKeys: ok", kyvernoPolicy("Enforce", 0, keyEntry("k8s://keys/cosign", ignoreTlog)),
			[]*corev1.Secret{secretOf("keys", "cosign", map[string]string{"cosign.pub": a})}, nil, types.OK, "", "keys/cosign"},
		{"kyverno, the same Secret twice: one GET", kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign"), keyEntry("k8s://keys/cosign", ignoreTlog)),
			[]*corev1.Secret{secretOf("keys", "cosign", map[string]string{"cosign.pub": a})}, nil, types.OK, "", "keys/cosign"},
		{"kyverno, no cosign.pub: unknown", kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign")),
			[]*corev1.Secret{secretOf("keys", "cosign", map[string]string{"key.pub": a})}, nil, types.Unknown, "Secret keys/cosign (cosign.pub) has no cosign.pub entry", "keys/cosign"},
		{"kyverno, not a key: unknown", kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign")),
			[]*corev1.Secret{secretOf("keys", "cosign", map[string]string{"cosign.pub": "not a key"})}, nil, types.Unknown, "does not hold a PEM public key", "keys/cosign"},
		{"kyverno, the Secret missing: unknown", kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign")),
			nil, nil, types.Unknown, "Secret keys/cosign (cosign.pub) does not exist", "keys/cosign"},
		{"kyverno, forbidden: unknown, naming the Secret and the grant", kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign")),
			nil, forbidden, types.Unknown, "Secret keys/cosign (cosign.pub) could not be read (forbidden: regcheck may not get it): grant get on that Secret (a Role with resourceNames: [cosign] in namespace keys", "keys/cosign"},
		{"policy-controller secretRef, its own namespace: ok", cipPolicy(secretAuthority("elsewhere", "pc-key")),
			[]*corev1.Secret{secretOf(PolicyControllerNamespace, "pc-key", map[string]string{"any-name": a}), secretOf("elsewhere", "pc-key", map[string]string{"any-name": b})},
			nil, types.OK, "", "cosign-system/pc-key"},
		{"policy-controller secretRef, key B: broken", cipPolicy(secretAuthority("", "pc-key")),
			[]*corev1.Secret{secretOf(PolicyControllerNamespace, "pc-key", map[string]string{"k": b})}, nil, types.Broken, "key.secretRef (Secret cosign-system/pc-key)", "cosign-system/pc-key"},
		{"policy-controller secretRef, two entries: unknown", cipPolicy(secretAuthority("", "pc-key")),
			[]*corev1.Secret{secretOf(PolicyControllerNamespace, "pc-key", map[string]string{"a": a, "b": b})}, nil, types.Unknown,
			"Secret cosign-system/pc-key has 2 entries (a, b), where policy-controller takes exactly one", "cosign-system/pc-key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readPolicy(t, c.policy)
			var objs []runtime.Object
			for _, s := range c.secrets {
				objs = append(objs, s)
			}
			client := fake.NewClientset(objs...)
			if c.react != nil {
				client.PrependReactor("get", "secrets", c.react)
			}
			if err := (SecretReader{Client: client}).ReadSecrets(context.Background(), ps); err != nil {
				t.Fatal(err)
			}
			var gets []string
			for _, act := range client.Actions() {
				if act.GetResource().Resource != "secrets" || act.GetVerb() != "get" {
					t.Errorf("%s %s: only GETs of secrets are allowed", act.GetVerb(), act.GetResource().Resource)
					continue
				}
				gets = append(gets, act.GetNamespace()+"/"+act.(k8stesting.GetAction).GetName())
			}
			if got := strings.Join(gets, " "); got != c.gets {
				t.Errorf("Secrets read %q, want %q", got, c.gets)
			}
			im := applyOne(t, ps, &fakeVerifier{outcomes: good})
			if im.Verdict != c.want {
				t.Errorf("verdict %s, want %s: %+v", im.Verdict, c.want, im.Findings)
			}
			text := fmt.Sprint(im.Findings)
			if c.mentions != "" && !strings.Contains(text, c.mentions) {
				t.Errorf("no finding says %q: %s", c.mentions, text)
			}
			for _, k := range []string{a, b} {
				body := strings.Split(k, "\n")[1]
				if strings.Contains(text, body) {
					t.Errorf("a finding holds key material: %s", text)
				}
			}
		})
	}
}

// Without a client (policies from files, no cluster), a Secret key is
// unknown, saying where the key is: no GET is tried.
func TestReadSecretsNoClient(t *testing.T) {
	ps := readPolicy(t, cipPolicy(secretAuthority("", "pc-key")))
	if err := (SecretReader{}).ReadSecrets(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	im := applyOne(t, ps, &fakeVerifier{})
	want := "the key is kept in Secret cosign-system/pc-key, which is read only with the cluster's policies: check against the cluster, or give the public key inline as key.data"
	if im.Verdict != types.Unknown || !strings.Contains(fmt.Sprint(im.Findings), want) {
		t.Errorf("verdict %s, findings %+v; want unknown saying %q", im.Verdict, im.Findings, want)
	}
}

// A cancelled context ends ReadSecrets with its error.
func TestReadSecretsCancelled(t *testing.T) {
	ps := readPolicy(t, kyvernoPolicy("Enforce", 0, kyvernoSecretEntry("keys", "cosign")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (SecretReader{Client: fake.NewClientset()}).ReadSecrets(ctx, ps); err == nil {
		t.Error("no error for a cancelled context")
	}
}

// readPolicy reads one policy from YAML, its namespace dev opted in.
func readPolicy(t *testing.T, policy string) *Policies {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, problems := ReadFiles([]string{p})
	if len(ps.Rules) != 1 {
		t.Fatalf("%d rules read, want 1: %+v\n%s", len(ps.Rules), problems, policy)
	}
	ps.LabelsKnown = true
	ps.Labels = map[string]map[string]string{"dev": {includeLabel: "true"}}
	return ps
}

// applyOne applies ps to one signed team image used by Deployment dev/web.
func applyOne(t *testing.T, ps *Policies, v Verifier) *types.Image {
	t.Helper()
	chk := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true)}}},
		Parse: scan.ParseReference, Verifier: v}
	im := &types.Image{Reference: "registry.example.com/team/web:v1", Digest: imgDigest, Verdict: types.OK,
		Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "dev", Name: "web"}}}
	if err := chk.Apply(context.Background(), &types.Result{Images: []*types.Image{im}}); err != nil {
		t.Fatal(err)
	}
	return im
}
