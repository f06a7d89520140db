package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
)

// marker is the secret planted in every input kind; no output may hold it,
// nor its first characters (a decoder's quote of a value cut short).
const marker = "s3cr3t-MARKER"

// TestNoSecretInAnyOutput plants marker in each kind of input that may
// hold a credential (a k3s registries.yaml, a containerd hosts.toml, a
// CRI-O registries.conf, a CredentialProviderConfig and its plugin's
// stderr, an image volume's reference), runs a scan with -v in every
// report format and with --metrics-file (the textfile), and looks for it
// in stdout, in the log on stderr and in the textfile.
func TestNoSecretInAnyOutput(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := fixture.Push(context.Background(), host, "t/")
	if err != nil {
		t.Fatal(err)
	}
	image := imgs[0].Ref
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("bin/echo", "#!/bin/sh\necho \"login failed: password $PASSWORD for https://user:$PASSWORD@"+host+"\" >&2\nexit 1\n")
	provider := func(kind string) string {
		return "apiVersion: kubelet.config.k8s.io/v1\n" + kind + "providers:\n- name: echo\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n" +
			"  matchImages: [\"" + host + "\"]\n  defaultCacheDuration: 1m\n  env:\n  - name: PASSWORD\n    value: " + marker + "\n"
	}
	scanArgs := []string{image}
	podYAML := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: \"" + image + "\"}]\n"
	write("kz/pod.yaml", podYAML)
	write("argo/pod.yaml", podYAML)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"k3s auth mistyped", []string{"--registries-config", write("k3s-bad.yaml", "configs:\n  \""+host+"\":\n    auth: "+marker+"-and-more\n")}},
		{"k3s password", []string{"--registries-config", write("k3s.yaml", "mirrors:\n  docker.io:\n    endpoint: [\"http://user:"+marker+"@"+host+"\"]\nconfigs:\n  \""+host+"\":\n    auth:\n      password: "+marker+"\n      identity_token: "+marker+"\n")}},
		{"hosts.toml userinfo and header", []string{"--registries-config", write("certs.d/"+hostDirectory(host)+"/hosts.toml",
			"[host.\"http://user:"+marker+"@"+host+"\"]\n  capabilities = [\"pull\", \"resolve\"]\n  [host.\"http://user:"+marker+"@"+host+"\".header]\n    Authorization = \"Basic "+marker+"\"\n")}},
		{"hosts.toml header mistyped", []string{"--registries-config", write("bad.d/"+hostDirectory(host)+"/hosts.toml",
			"[host.\"http://user:"+marker+"@"+host+"\"]\n  [host.\"http://user:"+marker+"@"+host+"\".header]\n    Authorization = {basic = \""+marker+"\"}\n")}},
		{"registries.conf location", []string{"--registries-config", write("registries.conf", "[[registry]]\nprefix = \""+host+"\"\nlocation = \"user:"+marker+"@"+host+"\"\n")}},
		{"provider config without kind", []string{"--image-credential-provider-config", write("cpc-nokind.yaml", provider("")), "--image-credential-provider-bin-dir", filepath.Join(dir, "bin")}},
		{"provider stderr", []string{"--image-credential-provider-config", write("cpc.yaml", provider("kind: CredentialProviderConfig\n")), "--image-credential-provider-bin-dir", filepath.Join(dir, "bin")}},
		// Before: a remote base's and an Application's userinfo was quoted
		// in full in every format and on stderr.
		{"kustomize remote base", []string{"--offline", "-f", filepath.Dir(write("kz/kustomization.yaml", "resources:\n- https://user:"+marker+"@github.com/org/repo//base?ref=v1\n- pod.yaml\n"))}},
		{"Argo CD repoURL", []string{"--offline", "-f", filepath.Dir(write("argo/app.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  source:\n    repoURL: https://user:"+marker+"@charts.example/x\n    chart: x\n    targetRevision: 1.0.0\n"))}},
		{"image volume", []string{"-f", write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: \""+image+"\"}]\n  volumes:\n  - name: v\n    image: {reference: \"user:"+marker+"@"+host+"/vol:1\"}\n")}},
	} {
		for _, format := range outputFormats() {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				textfile := filepath.Join(t.TempDir(), "regcheck.prom")
				args := append([]string{"scan", "-v", "-o", format, "--metrics-file", textfile, "--insecure-registry", host}, tc.args...)
				if !slices.Contains(tc.args, "-f") {
					args = append(args, scanArgs...)
				}
				var out, errOut bytes.Buffer
				code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, args)
				prom, _ := os.ReadFile(textfile)
				for what, text := range map[string]string{"stdout": out.String(), "log": errOut.String(), "textfile": string(prom)} {
					if strings.Contains(text, marker[:7]) {
						t.Errorf("exit %d: the %s holds the secret:\n%s", code, what, text)
					}
				}
				if out.Len()+errOut.Len() == 0 {
					t.Errorf("exit %d and no output at all", code)
				}
			})
		}
	}
}

// hostDirectory is containerd's directory name for host:port.
func hostDirectory(host string) string {
	if i := strings.LastIndex(host, ":"); i > 0 {
		return host[:i] + "_" + host[i+1:] + "_"
	}
	return host
}

// TestNoSecretInFlagErrors: a password in the --registry-state path, the
// --registry value or a trusted root's baseUrl never reaches stdout or
// stderr, whatever the format (before: each was echoed in the error).
func TestNoSecretInFlagErrors(t *testing.T) {
	dir := t.TempDir()
	ecr := filepath.Join(dir, "ecr.json")
	if err := os.WriteFile(ecr, []byte(`{"rules":[{"rulePriority":1,"selection":{"tagStatus":"any","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(root, []byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[{"baseUrl":"https://user:`+marker+`@rekor.example:port","hashAlgorithm":"SHA2_256","publicKey":{"rawBytes":"`+
		base64.StdEncoding.EncodeToString(der)+`","keyDetails":"PKIX_ECDSA_P256_SHA_256","validFor":{"start":"2021-01-12T11:53:27Z"}},"logId":{"keyId":"`+base64.StdEncoding.EncodeToString([]byte("id"))+`"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"registry-state path", []string{"gc-check", "--cleanup", ecr, "--registry-state", "org/app=https://user:" + marker + "@host.example/state.json", "reg.example/org/app:v1"}},
		{"registry value", []string{"gc-check", "--cleanup", ecr, "--registry", "https://user:" + marker + "@reg.example", "reg.example/org/app:v1"}},
		{"trusted root baseUrl", []string{"scan", "--trusted-root", root, "-f", ecr}},
		{"trusted root path", []string{"scan", "--trusted-root", "https://user:" + marker + "@tuf.example/trusted_root.json", "-f", ecr}},
	} {
		for _, format := range outputFormats() {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				var out, errOut bytes.Buffer
				code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, append(tc.args, "-o", format))
				for what, text := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
					if strings.Contains(text, marker[:7]) {
						t.Errorf("exit %d: the %s holds the secret:\n%s", code, what, text)
					}
				}
				if out.Len()+errOut.Len() == 0 {
					t.Errorf("exit %d and no output at all", code)
				}
			})
		}
	}
}
