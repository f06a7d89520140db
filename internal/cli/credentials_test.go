package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
