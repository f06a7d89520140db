package cli

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// providerConfig writes a CredentialProviderConfig naming one provider,
// "ecr-login", and a bin dir that holds no plugin, and returns both.
func providerConfig(t *testing.T) (config, binDir string) {
	t.Helper()
	dir := t.TempDir()
	config = filepath.Join(dir, "credential-providers.yaml")
	os.WriteFile(config, []byte(`apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: ecr-login
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    matchImages: ["*.dkr.ecr.*.amazonaws.com"]
    defaultCacheDuration: 12h
`), 0o644)
	binDir = filepath.Join(dir, "bin")
	os.Mkdir(binDir, 0o755)
	return config, binDir
}

// TestCredentialProviderFlagsUsage: every command that asks registries
// takes the two flags together or not at all, and a config that does not
// load is the user's to fix; each is exit 2, naming what is wrong, before
// any registry is asked (the registry here does not exist).
func TestCredentialProviderFlagsUsage(t *testing.T) {
	t.Parallel()
	config, binDir := providerConfig(t)
	dir := pinTree(t, map[string]string{"pod.yaml": pinPod})
	const image = "127.0.0.1:1/app:v1"
	commands := map[string][]string{
		"scan":     {"scan", image},
		"pin":      {"pin", dir},
		"gc-check": {"gc-check", image},
		"rescue":   {"rescue", "--from-registry", "127.0.0.1:1", image},
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: p, matchImages: [reg.io]}]\n"), 0o644)
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string // each in stderr
	}{
		{"config alone", []string{"--image-credential-provider-config", config},
			[]string{"--image-credential-provider-config needs --image-credential-provider-bin-dir"}},
		{"bin dir alone", []string{"--image-credential-provider-bin-dir", binDir},
			[]string{"--image-credential-provider-bin-dir needs --image-credential-provider-config"}},
		{"plugin missing", []string{"--image-credential-provider-config", config, "--image-credential-provider-bin-dir", binDir},
			[]string{config, `provider "ecr-login"`, "plugin executable"}},
		{"config missing", []string{"--image-credential-provider-config", config + ".gone", "--image-credential-provider-bin-dir", binDir},
			[]string{config + ".gone"}},
		{"bin dir missing", []string{"--image-credential-provider-config", config, "--image-credential-provider-bin-dir", binDir + ".gone"},
			[]string{"bin dir", binDir + ".gone"}},
		{"invalid config", []string{"--image-credential-provider-config", bad, "--image-credential-provider-bin-dir", binDir},
			[]string{bad, `provider "p"`, "apiVersion", "defaultCacheDuration"}},
	} {
		for cmd, args := range commands {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				code, out, errs := runCmd(t, append(append(args, tc.flags...), "--no-cache")...)
				if code != ExitUsage {
					t.Fatalf("exit %d, want %d\n%s%s", code, ExitUsage, out, errs)
				}
				for _, w := range tc.want {
					if !strings.Contains(errs, w) {
						t.Errorf("stderr does not name %q:\n%s", w, errs)
					}
				}
			})
		}
	}
}

// TestCredentialProviderTimeoutFlag: --credential-provider-timeout bounds
// each plugin run, and a plugin that timed out is not run again for the
// other images its matchImages entry matches: three images cost one
// timeout, each unknown with the plugin's failure. 0 is a usage error.
func TestCredentialProviderTimeoutFlag(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	binDir := filepath.Join(dir, "bin")
	os.Mkdir(binDir, 0o755)
	os.WriteFile(filepath.Join(binDir, "slow"), []byte("#!/bin/sh\necho run >> "+runs+"\nexec sleep 30\n"), 0o755)
	config := filepath.Join(dir, "config.yaml")
	os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: slow\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  matchImages: [\""+host+"\"]\n  defaultCacheDuration: 1m\n"), 0o644)
	flags := []string{"scan", "-o", "json", "--insecure-registry", host, "--image-credential-provider-config", config, "--image-credential-provider-bin-dir", binDir}

	var out, errOut bytes.Buffer
	start := time.Now()
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errOut},
		append(flags, "--credential-provider-timeout", "400ms", host+"/a:1", host+"/b:1", host+"/c:1"))
	elapsed := time.Since(start)
	if code != ExitIncomplete {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitIncomplete, errOut.String())
	}
	if n := strings.Count(out.String(), "timed out after 400ms"); n < 3 {
		t.Errorf("%d findings name the timeout, want one per image:\n%s", n, out.String())
	}
	data, _ := os.ReadFile(runs)
	if n := strings.Count(string(data), "run"); n != 1 {
		t.Errorf("the plugin ran %d times, want once", n)
	}
	if elapsed > 10*time.Second {
		t.Errorf("took %s", elapsed)
	}

	errOut.Reset()
	if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errOut},
		append(flags, "--credential-provider-timeout", "0s", host+"/a:1")); code != ExitUsage || !strings.Contains(errOut.String(), "must be positive") {
		t.Errorf("timeout 0: exit %d, stderr %q; want %d naming the bad value", code, errOut.String(), ExitUsage)
	}
}
