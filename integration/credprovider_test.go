//go:build integration

package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/s3registry"
	"github.com/regcheck/regcheck/types"
)

// credPlugin is credprovider's test plugin (credprovider/testdata/plugin),
// built into a bin dir of its own, named as the configs name it.
type credPlugin struct {
	binDir, name string
}

func buildCredPlugin(t *testing.T) credPlugin {
	t.Helper()
	p := credPlugin{binDir: t.TempDir(), name: "test-plugin"}
	build := exec.Command("go", "build", "-o", filepath.Join(p.binDir, p.name), "./credprovider/testdata/plugin")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test plugin: %v\n%s", err, out)
	}
	return p
}

// config writes a CredentialProviderConfig whose one provider, the test
// plugin, matches match and answers as env says (see the plugin's doc), and
// returns the flags that give it to regcheck.
func (p credPlugin) config(t *testing.T, match string, env map[string]string) []string {
	t.Helper()
	var envs []map[string]string
	for k, v := range env {
		envs = append(envs, map[string]string{"name": k, "value": v})
	}
	envs = append(envs, map[string]string{"name": "PLUGIN_LOG", "value": filepath.Join(t.TempDir(), "runs.log")})
	cfg := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1",
		"kind":       "CredentialProviderConfig",
		"providers": []map[string]any{{
			"name":                 p.name,
			"apiVersion":           "credentialprovider.kubelet.k8s.io/v1",
			"matchImages":          []string{match},
			"defaultCacheDuration": "10m",
			"env":                  envs,
		}},
	}
	b, _ := json.Marshal(cfg)
	file := filepath.Join(t.TempDir(), "credential-provider-config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--image-credential-provider-config", file, "--image-credential-provider-bin-dir", p.binDir}
}

// TestCredentialProviderProd scans distribution v3.1.2 with token auth over
// TLS (internal/testing/s3registry) whose password only the kubelet's
// credential provider plugin gives: the Docker config is empty. With the
// plugin's right credentials the image is ok; a plugin that fails makes it
// unknown with credentials-error (exit 3, never broken); wrong credentials
// make it unknown with unauthorized. In every output format, at
// --log-level debug and with -v, no password or token is printed.
func TestCredentialProviderProd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reg, err := s3registry.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	imgs, err := fixture.Push(ctx, reg.Host(), "cred/", fixture.WithTransport(reg.Transport()), fixture.WithAuth(reg.Auth()))
	if err != nil {
		t.Fatal(err)
	}
	fx := map[string]fixture.Image{}
	for _, im := range imgs {
		fx[im.Name] = im
	}
	single := fx["single"]
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials but the plugin's
	plugin := buildCredPlugin(t)
	const wrongPassword = "pw-wrong-d41d8cd98f00b204"
	c := &prodCLI{ctx: ctx}
	t.Cleanup(func() {
		checkLeaks(t, reg, reg.DockerConfigJSON(), c.runs)
		checkLeak(t, c.runs, "the wrong password", wrongPassword)
	})
	base := []string{single.Ref, "--ca-file", reg.CA.File, "--no-cache", "--timeout", "20s"}

	for _, tc := range []struct {
		name     string
		env      map[string]string
		code     int
		verdict  types.Verdict
		findings []types.Code
	}{
		{"right credentials", map[string]string{"PLUGIN_USERNAME": reg.Username, "PLUGIN_PASSWORD": reg.Password},
			cli.ExitClean, types.OK, nil},
		{"plugin fails", map[string]string{"PLUGIN_MODE": "fail", "PLUGIN_PASSWORD": reg.Password},
			cli.ExitIncomplete, types.Unknown, []types.Code{types.CredentialsError}},
		{"wrong credentials", map[string]string{"PLUGIN_USERNAME": reg.Username, "PLUGIN_PASSWORD": wrongPassword},
			cli.ExitIncomplete, types.Unknown, []types.Code{types.Unauthorized}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := append(plugin.config(t, reg.Host(), tc.env), base...)
			got, _ := c.scanJSON(t, tc.code, flags...)
			checkCredVerdict(t, got[single.Ref], tc.verdict, tc.findings)
			for _, format := range []string{"table", "markdown"} {
				r := c.run(t, append([]string{"scan", "-o", format, "-v"}, flags...)...)
				if r.code != tc.code {
					t.Errorf("%s: exit %d, want %d\n%s", r, r.code, tc.code, lastLines(r.err, 20))
				}
				for _, code := range tc.findings {
					if !strings.Contains(r.out, string(code)) {
						t.Errorf("%s: the report does not name %s:\n%s", r, code, r.out)
					}
				}
			}
		})
	}
	// One keychain gives one credential: the plugin's for an image it
	// matches, even when the Docker config has one too; the Docker
	// config's for any other.
	t.Run("plugin before the Docker config", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", dockerConfig(t, reg.Host(), reg.Username, wrongPassword))
		flags := append(plugin.config(t, reg.Host(), map[string]string{"PLUGIN_USERNAME": reg.Username, "PLUGIN_PASSWORD": reg.Password}), base...)
		got, _ := c.scanJSON(t, cli.ExitClean, flags...)
		checkCredVerdict(t, got[single.Ref], types.OK, nil)
	})
	t.Run("Docker config for an image no plugin matches", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", dockerConfig(t, reg.Host(), reg.Username, reg.Password))
		flags := append(plugin.config(t, "registry.example.com", map[string]string{"PLUGIN_MODE": "fail"}), base...)
		got, _ := c.scanJSON(t, cli.ExitClean, flags...)
		checkCredVerdict(t, got[single.Ref], types.OK, nil)
	})
	t.Run("cluster with pull secrets", func(t *testing.T) { credCluster(t, ctx, c, reg, plugin, fx["app-a"], single) })
}

// credCluster: with --cluster --pull-secrets, a pod's pull secrets come
// before the plugin, as in the kubelet, and a pod without them gets the
// plugin's credentials (they are not lost for the pull secrets). Each pod
// runs an image of its own, so that each image's faults are its pod's.
func credCluster(t *testing.T, ctx context.Context, c *prodCLI, reg *s3registry.Registry, plugin credPlugin, withSecret, without fixture.Image) {
	kc, cs := startKube(t, ctx)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "default", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	const ns = "creds"
	namespaceWithSA(t, ctx, cs, ns)
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON()},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	credPod(t, ctx, cs, ns, "with-secret", withSecret, "regcred")
	credPod(t, ctx, cs, ns, "without", without, "")
	kube := []string{"--cluster", "--pull-secrets", "--kubeconfig", kubeconfig, "-n", ns,
		"--ca-file", reg.CA.File, "--no-cache", "--timeout", "20s"}

	for _, tc := range []struct {
		name    string
		env     map[string]string
		code    int
		without []types.Code // the faults of the image of the pod without a secret
	}{
		// Both pods pull: one with its secret, the other with the plugin's.
		{"plugin right", map[string]string{"PLUGIN_USERNAME": reg.Username, "PLUGIN_PASSWORD": reg.Password},
			cli.ExitClean, nil},
		// The secret is tried first, so the failing plugin is not asked
		// for the pod that has one.
		{"plugin fails", map[string]string{"PLUGIN_MODE": "fail"},
			cli.ExitIncomplete, []types.Code{types.CredentialsError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := c.scanJSON(t, tc.code, append(kube, plugin.config(t, reg.Host(), tc.env)...)...)
			checkCredVerdict(t, got[withSecret.Ref], types.OK, nil)
			verdict := types.OK
			if len(tc.without) > 0 {
				verdict = types.Unknown
			}
			checkCredVerdict(t, got[without.Ref], verdict, tc.without)
		})
	}
}

// credPod creates a running pod in ns with one container running im,
// pulled with the pull secret named (none for "").
func credPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string, im fixture.Image, secret string) {
	t.Helper()
	spec := corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: im.Ref}}}
	if secret != "" {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	repo := im.Ref[:strings.LastIndex(im.Ref, ":")]
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", Image: im.Ref, ImageID: repo + "@" + im.Digest.String(), Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))}},
	}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// dockerConfig writes a Docker config folder whose config.json holds one
// username and password for host.
func dockerConfig(t *testing.T, host, username, password string) string {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkCredVerdict checks an image's verdict and the codes of its faults.
func checkCredVerdict(t *testing.T, im *types.Image, verdict types.Verdict, faults []types.Code) {
	t.Helper()
	if im == nil {
		t.Fatal("the image is not in the report")
	}
	var got []types.Code
	for _, f := range im.Findings {
		if f.Code.Fault() {
			got = append(got, f.Code)
		}
	}
	if im.Verdict != verdict || fmt.Sprint(got) != fmt.Sprint(faults) {
		t.Errorf("%s: %s with faults %v, want %s with %v", im.Reference, im.Verdict, got, verdict, faults)
		for _, f := range im.Findings {
			t.Logf("    %s %s: %s", f.Severity, f.Code, f.Message)
		}
	}
}

// checkLeak fails the test if any run's stdout or stderr holds secret.
func checkLeak(t *testing.T, runs []prodRun, what, secret string) {
	t.Helper()
	for _, r := range runs {
		if strings.Contains(r.out, secret) || strings.Contains(r.err, secret) {
			t.Errorf("LEAK: %s prints %s", r, what)
		}
	}
}
