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
	"slices"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// TestClusterPullSecrets: a registry that requires a password, a pod whose
// imagePullSecrets hold it. With --pull-secrets regcheck reads the secret as
// the kubelet would and the image is ok; without, it is unknown (never
// broken); and the password never appears in the output or the logs.
func TestClusterPullSecrets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const user, password = "ci-puller", "s3cret-pull-password"
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
	image := reg.Host() + "/private/app:v1"
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, ggcrtypes.DockerManifestSchema2), static.NewLayer([]byte("private app"), ggcrtypes.DockerLayer))
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(image, name.Insecure)
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: user, Password: password})); err != nil {
		t.Fatal(err)
	}

	kc, cs := startKube(t, ctx)
	ns := "private"
	for _, create := range []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
			cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host(), auth)
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
				Type:       corev1.SecretTypeDockerConfigJson,
				Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "app"},
				Spec: corev1.PodSpec{
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
					Containers:       []corev1.Container{{Name: "app", Image: image}},
				},
			}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil {
			t.Fatal(err)
		}
	}
	// Another tenant uses the same image with a stale password: its pods'
	// pulls fail, and that must not be hidden by the first tenant's success
	// nor borrow its credentials.
	other := "other"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(other).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := base64.StdEncoding.EncodeToString([]byte(user + ":rotated-away"))
	if _, err := cs.CoreV1().Secrets(other).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host(), stale))},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(other).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
			Containers:       []corev1.Container{{Name: "app", Image: image}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "private", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	// No Docker config credentials may leak in from the machine running the test.
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	for _, tc := range []struct {
		name    string
		flags   []string
		code    int
		verdict types.Verdict
		finding types.Code
		naming  string // the fault's message names these credentials
	}{
		{"without pull secrets", []string{"-n", ns}, cli.ExitIncomplete, types.Unknown, types.Unauthorized, ""},
		{"with pull secrets", []string{"-n", ns, "--pull-secrets"}, cli.ExitClean, types.OK, "mutable-reference", ""},
		{"stale secret in another namespace", []string{"-n", other, "--pull-secrets"}, cli.ExitIncomplete, types.Unknown, types.Unauthorized, "namespace other"},
		{"both namespaces: each with its own", []string{"-A", "--pull-secrets"}, cli.ExitIncomplete, types.Unknown, "", "namespace other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"scan", "--cluster", "--kubeconfig", kubeconfig, "-o", "json", "--log-level", "debug"}, tc.flags...)
			code := cli.Run(ctx, cli.Streams{Out: &out, Err: &errb}, args)
			if bytes.Contains(out.Bytes(), []byte(password)) || bytes.Contains(errb.Bytes(), []byte(password)) ||
				bytes.Contains(errb.Bytes(), []byte(base64.StdEncoding.EncodeToString([]byte(user+":"+password)))) {
				t.Fatal("the registry password appears in regcheck's output or logs")
			}
			var doc report.Document
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, out.String(), errb.String())
			}
			if len(doc.Images) != 1 {
				t.Fatalf("%d images, want 1", len(doc.Images))
			}
			im := doc.Images[0]
			if tc.finding == "" { // both namespaces: the private one's check passed, the other's met a 401
				var codes []types.Code
				for _, f := range im.Findings {
					codes = append(codes, f.Code)
				}
				if code != tc.code || im.Verdict != tc.verdict || len(im.Uses) != 2 || !slices.Equal(codes, []types.Code{types.Unauthorized, "mutable-reference"}) {
					t.Fatalf("exit %d, %s %v, %d uses; want exit %d, %s with unauthorized and mutable-reference, 2 uses", code, im.Verdict, codes, len(im.Uses), tc.code, tc.verdict)
				}
			} else if code != tc.code || im.Verdict != tc.verdict || len(im.Findings) != 1 || im.Findings[0].Code != tc.finding {
				t.Fatalf("exit %d, %s %+v; want exit %d, %s with %s", code, im.Verdict, im.Findings, tc.code, tc.verdict, tc.finding)
			}
			if tc.naming != "" && !strings.Contains(im.Findings[0].Message, tc.naming) {
				t.Errorf("the fault %q does not name %q", im.Findings[0].Message, tc.naming)
			}
		})
	}
}
