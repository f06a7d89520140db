//go:build integration

package integration

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	"k8s.io/client-go/dynamic"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// waitSeries scrapes w (at most timeout) until ok accepts what it serves,
// and returns that.
func waitSeries(t *testing.T, w *watcher, timeout time.Duration, what string, ok func([]series) bool) []series {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		all, text := w.scrape(t)
		if ok(all) {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v:\n%s\n%s", what, timeout, text, w.tail())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// useOf selects the regcheck_use_findings series of Deployment name's
// container name in ns.
func useOf(ns, name string, extra map[string]string) map[string]string {
	l := map[string]string{"namespace": ns, "workload_kind": "Deployment", "workload": name, "container": name}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// privateRegistry starts distribution 3.1.2 requiring user's password and
// pushes an image to it; it returns the registry's host, the image's
// reference and digest.
func privateRegistry(t *testing.T, user, password string) (host, image, digest string) {
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
	reg, err := registry.Start(t.Context(), bin, filepath.Join(dir, "registry"), "", registry.WithHtpasswd(htpasswd))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	image = reg.Host() + "/private/app:v1"
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, ggcrtypes.DockerManifestSchema2), static.NewLayer([]byte("private app"), ggcrtypes.DockerLayer))
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(image, name.Insecure)
	if err := remote.Write(tag, img, remote.WithAuth(&authn.Basic{Username: user, Password: password})); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return reg.Host(), image, d.String()
}

// TestWatchPullSecrets: a registry that requires a password, a Deployment
// whose pods' imagePullSecrets hold it. `regcheck watch --pull-secrets`
// reads the Secret as the kubelet would and walks the image whole
// (regcheck_container_image_available 1); without the flag the use is
// unknown (unauthorized), never broken. The password is in no log and no
// series.
func TestWatchPullSecrets(t *testing.T) {
	r := newWatchRig(t)
	const user, password = "ci-puller", "s3cret-pull-password"
	host, image, digest := privateRegistry(t, user, password)
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if _, err := r.cs.CoreV1().Secrets(r.ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth))},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	workloadWith(t, t.Context(), r.cs, r.ns, "app", image, "IfNotPresent", "node-a", host+"/private/app@"+digest, func(s *corev1.PodSpec) {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	})
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials from the machine running the test

	avail := map[string]string{"namespace": r.ns, "owner_kind": "Deployment", "owner_name": "app", "container": "app", "image": image}
	for _, tc := range []struct {
		name  string
		flags []string
		ok    func([]series) bool
	}{
		{"with --pull-secrets", []string{"--pull-secrets"}, func(all []series) bool {
			return metric(all, "regcheck_container_image_available", avail) == 1 &&
				len(find(all, "regcheck_use_findings", useOf(r.ns, "app", map[string]string{"verdict": string(types.OK)}))) > 0
		}},
		{"without", nil, func(all []series) bool {
			return len(find(all, "regcheck_use_findings", useOf(r.ns, "app", map[string]string{"verdict": string(types.Unknown), "code": string(types.Unauthorized)}))) > 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			args := append([]string{"--insecure-registry", host, "--walk-debounce", "1s"}, tc.flags...)
			w := r.startWatcher(t, []string{"--out", filepath.Join(t.TempDir(), "history.json")}, args...)
			w.waitReady(t, time.Minute)
			all := waitSeries(t, w, time.Minute, tc.name, tc.ok)
			t.Logf("%s: the walk's series %v after start", tc.name, time.Since(began).Round(time.Millisecond))
			for _, s := range find(all, "regcheck_use_findings", useOf(r.ns, "app", nil)) {
				if s.labels["verdict"] == string(types.Broken) {
					t.Errorf("a use is broken: %v (a registry that refuses credentials proves nothing missing)", s)
				}
			}
			if tc.flags == nil {
				if got := find(all, "regcheck_container_image_available", avail); len(got) > 0 {
					t.Errorf("regcheck_container_image_available%v = %v while unknown, want absent", avail, got)
				}
			}
			_, text := w.scrape(t)
			code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second)
			if code != 0 {
				t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
			}
			log, _ := os.ReadFile(w.log)
			for _, secret := range []string{password, auth} {
				if bytes.Contains(log, []byte(secret)) || strings.Contains(string(text), secret) {
					t.Fatal("the registry password appears in the watcher's log or series")
				}
			}
		})
	}
}

// TestWatchAdmission: images signed with real cosign, a Kyverno
// ClusterPolicy (its real CRD in the apiserver) enforcing the signature on
// */team/*, the signature of one deleted. The watcher's walk applies the
// policy as scan --cluster does: the use of the image whose signature is
// gone is broken with signature-missing, the whole one is ok.
func TestWatchAdmission(t *testing.T) {
	r := newWatchRig(t)
	ctx := t.Context()
	sig := newAdmCosign(t)
	host := r.reg.Host()
	enforced := pushAndSign(t, sig, host, "team/web")
	whole := pushAndSign(t, sig, host, "team/api")
	deleteSignature(t, host, "team/web", enforced)
	if ok, out, err := sig.Verify(ctx, strings.TrimSuffix(enforced.ref, ":v1")+"@"+enforced.digest, cosign.Legacy); err != nil || ok {
		t.Fatalf("cosign verify %s after deleting its signature = %v (%v), want false\n%s", enforced.ref, ok, err, out)
	}
	if err := r.kc.InstallPolicyCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(r.kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	policy, _, _ := strings.Cut(admissionPolicies, "\n---\n") // require-signed-team: Enforce on */team/*
	applyPolicies(t, ctx, dyn, strings.NewReplacer("HOST", host, "PUB", pubYAML(t, sig)).Replace(policy))
	for name, im := range map[string]admImage{"web": enforced, "api": whole} {
		workload(t, ctx, r.cs, r.ns, name, im.ref, "IfNotPresent", "node-a", strings.TrimSuffix(im.ref, ":v1")+"@"+im.digest)
	}

	began := time.Now()
	w := r.startWatcher(t, []string{"--out", filepath.Join(t.TempDir(), "history.json")}, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	broken := useOf(r.ns, "web", map[string]string{"verdict": string(types.Broken), "code": string(types.SignatureMissing)})
	api := useOf(r.ns, "api", nil)
	all := waitSeries(t, w, time.Minute, "web broken with signature-missing, api walked", func(all []series) bool {
		return metric(all, "regcheck_use_findings", broken) >= 1 && len(find(all, "regcheck_use_findings", api)) > 0
	})
	t.Logf("the enforced policy's finding exported %v after start", time.Since(began).Round(time.Millisecond))
	for _, s := range find(all, "regcheck_use_findings", api) {
		if s.labels["verdict"] != string(types.OK) || s.labels["code"] == string(types.SignatureMissing) {
			t.Errorf("api, signed and whole: %v, want ok", s)
		}
	}
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
}
