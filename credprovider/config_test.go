package credprovider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\n"

// good is one valid provider, named ecr.
const good = `providers:
- name: ecr
  matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.example.com:5000/team"]
  defaultCacheDuration: 12h
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [get-credentials]
  env:
  - name: AWS_PROFILE
    value: default
`

func TestLoadValidation(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   []string // substrings of the error; none: Load succeeds
	}{
		{name: "valid yaml", config: header + good},
		{name: "valid json", config: `{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig","providers":[{"name":"ecr","matchImages":["gcr.io"],"defaultCacheDuration":"0s","apiVersion":"credentialprovider.kubelet.k8s.io/v1"}]}`},
		{name: "v1beta1 config", config: strings.Replace(header, "/v1\n", "/v1beta1\n", 1) + good},
		{name: "v1alpha1 config and request", config: strings.Replace(header, "/v1\n", "/v1alpha1\n", 1) +
			strings.Replace(good, "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", 1)},
		{name: "unknown field", config: header + good + "  colour: blue\n", want: []string{"config.yaml", `unknown field "providers[0].colour"`}},
		{name: "wrong kind", config: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n", want: []string{"config.yaml", "no kind"}},
		{name: "unknown version", config: "apiVersion: kubelet.config.k8s.io/v9\nkind: CredentialProviderConfig\n", want: []string{"config.yaml", "v9"}},
		{name: "no providers", config: header + "providers: []\n", want: []string{"providers: at least 1 item is required"}},
		{name: "name with slash", config: header + strings.Replace(good, "name: ecr", "name: ../ecr", 1), want: []string{`provider "../ecr": name: cannot contain a path separator`}},
		{name: "name with space", config: header + strings.Replace(good, "name: ecr", "name: e cr", 1), want: []string{`provider "e cr": name: cannot contain spaces`}},
		{name: "name dot dot", config: header + strings.Replace(good, "name: ecr", `name: ".."`, 1), want: []string{`name: cannot be ".."`}},
		{name: "no apiVersion", config: header + strings.Replace(good, "  apiVersion: credentialprovider.kubelet.k8s.io/v1\n", "", 1), want: []string{`provider "ecr": apiVersion: required`}},
		{name: "bad apiVersion", config: header + strings.Replace(good, "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v2", 1),
			want: []string{`apiVersion: "credentialprovider.kubelet.k8s.io/v2" not supported`, "credentialprovider.kubelet.k8s.io/v1beta1"}},
		{name: "no matchImages", config: header + strings.Replace(good, `  matchImages: ["*.dkr.ecr.*.amazonaws.com", "registry.example.com:5000/team"]`+"\n", "", 1), want: []string{`provider "ecr": matchImages: at least 1 item is required`}},
		{name: "bad matchImage", config: header + strings.Replace(good, "registry.example.com:5000/team", "registry.example.com/%zz", 1), want: []string{`matchImages: "registry.example.com/%zz" is invalid`}},
		{name: "no defaultCacheDuration", config: header + strings.Replace(good, "  defaultCacheDuration: 12h\n", "", 1), want: []string{`provider "ecr": defaultCacheDuration: required`}},
		{name: "negative defaultCacheDuration", config: header + strings.Replace(good, "12h", "-1m", 1), want: []string{"defaultCacheDuration: -1m0s must be greater than or equal to 0"}},
		{name: "token attributes valid", config: header + good + "  tokenAttributes:\n    serviceAccountTokenAudience: sts.amazonaws.com\n    cacheType: ServiceAccount\n    requireServiceAccount: false\n"},
		{name: "token attributes incomplete", config: header + good + "  tokenAttributes:\n    cacheType: Forever\n    requiredServiceAccountAnnotationKeys: [a, a, \"b c\"]\n",
			want: []string{"serviceAccountTokenAudience: required", "requireServiceAccount: required", `cacheType: "Forever" not supported`, `"a": duplicate`, `"b c"`}},
		{name: "token attributes in v1beta1", config: strings.Replace(header, "/v1\n", "/v1beta1\n", 1) + good + "  tokenAttributes:\n    serviceAccountTokenAudience: x\n", want: []string{"tokenAttributes: unknown field in kubelet.config.k8s.io/v1beta1"}},
		{name: "no executable", config: header + strings.Replace(good, "name: ecr", "name: gcr", 1), want: []string{`config.yaml:4: provider "gcr": plugin executable: `, "gcr: no such file"}},
		{name: "not executable", config: header + strings.Replace(good, "name: ecr", "name: noexec", 1), want: []string{`provider "noexec": plugin executable: `, "permission denied"}},
	}
	binDir := t.TempDir()
	if err := os.Symlink(pluginBin, filepath.Join(binDir, "ecr")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(binDir, "noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, binDir)
			checkErr(t, err, tt.want)
		})
	}
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
}

func TestLoadEveryProviderNamed(t *testing.T) {
	binDir := t.TempDir()
	config := header + `providers:
- name: one
  matchImages: [a.io]
  defaultCacheDuration: 1m
- name: two
  matchImages: []
  defaultCacheDuration: 1m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
`
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, binDir)
	// Each problem names the line of its provider's entry.
	checkErr(t, err, []string{path + `:4: provider "one": apiVersion: required`, path + `:7: provider "two": matchImages: at least 1 item is required`})
}

func TestLoadDirectory(t *testing.T) {
	binDir := t.TempDir()
	for _, n := range []string{"ecr", "gcr"} {
		if err := os.Symlink(pluginBin, filepath.Join(binDir, n)); err != nil {
			t.Fatal(err)
		}
	}
	gcr := strings.Replace(good, "name: ecr", "name: gcr", 1)
	tests := []struct {
		name  string
		files map[string]string
		want  []string // error substrings
		order string   // String() of the result
	}{
		{name: "merged in lexical order", files: map[string]string{"20-ecr.yaml": header + good, "10-gcr.json": header + gcr, "README.md": "not config"},
			order: "credential providers: gcr (*.dkr.ecr.*.amazonaws.com, registry.example.com:5000/team); ecr (*.dkr.ecr.*.amazonaws.com, registry.example.com:5000/team)"},
		{name: "duplicate across files", files: map[string]string{"a.yaml": header + good, "b.yml": header + good}, want: []string{`b.yml:4: provider "ecr": duplicate name (first in`, "a.yaml:4)"}},
		{name: "no config files", files: map[string]string{"notes.txt": header + good}, want: []string{"no *.json, *.yaml or *.yml file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ps, err := Load(dir, binDir)
			checkErr(t, err, tt.want)
			if err == nil && ps.String() != tt.order {
				t.Errorf("String() = %q, want %q", ps.String(), tt.order)
			}
		})
	}
}

func TestLoadBadArguments(t *testing.T) {
	config := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(config, []byte(header+good), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		config, binDir string
		opts           []Option
		want           string
	}{
		{name: "no bin dir", config: config, binDir: "", want: "bin dir: not set"},
		{name: "missing bin dir", config: config, binDir: filepath.Join(t.TempDir(), "nope"), want: "no such file"},
		{name: "bin dir is a file", config: config, binDir: config, want: "not a directory"},
		{name: "no config", config: "", binDir: t.TempDir(), want: "no path"},
		{name: "missing config", config: config + ".missing", binDir: t.TempDir(), want: "c.yaml.missing"},
		{name: "bad timeout", config: config, binDir: t.TempDir(), opts: []Option{WithTimeout(0)}, want: "must be positive"},
		{name: "nil clock", config: config, binDir: t.TempDir(), opts: []Option{WithClock(nil)}, want: "clock: nil"},
		{name: "nil logger", config: config, binDir: t.TempDir(), opts: []Option{WithLogger(nil)}, want: "logger: nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.config, tt.binDir, tt.opts...)
			checkErr(t, err, []string{tt.want})
		})
	}
}
