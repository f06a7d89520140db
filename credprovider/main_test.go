package credprovider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
)

// pluginBin is the test plugin (testdata/plugin), built once by TestMain.
var pluginBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "credprovider-plugin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "test-plugin")
	cmd := exec.Command(goTool(), "build", "-o", pluginBin, "./testdata/plugin")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test plugin: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// plugin describes one provider of a test config, run by the test plugin.
type plugin struct {
	name       string
	match      []string
	env        map[string]string
	args       []string
	ttl        *time.Duration // nil: 10m
	apiVersion string         // "": credentialprovider.kubelet.k8s.io/v1
}

// rig is a config file and bin dir under one temp dir, with a log file
// per provider that the test plugin appends each run to.
type rig struct {
	t      *testing.T
	dir    string
	binDir string
	config string
}

func newRig(t *testing.T, plugins ...plugin) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir()}
	r.binDir = filepath.Join(r.dir, "bin")
	r.config = filepath.Join(r.dir, "credential-provider-config.json")
	if err := os.Mkdir(r.binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := kubeletconfigv1.CredentialProviderConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1", Kind: "CredentialProviderConfig"},
	}
	for _, p := range plugins {
		if err := os.Symlink(pluginBin, filepath.Join(r.binDir, p.name)); err != nil {
			t.Fatal(err)
		}
		cfg.Providers = append(cfg.Providers, r.provider(p))
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.config, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) provider(p plugin) kubeletconfigv1.CredentialProvider {
	ttl := 10 * time.Minute
	if p.ttl != nil {
		ttl = *p.ttl
	}
	api := p.apiVersion
	if api == "" {
		api = "credentialprovider.kubelet.k8s.io/v1"
	}
	cp := kubeletconfigv1.CredentialProvider{
		Name: p.name, MatchImages: p.match, APIVersion: api, Args: p.args,
		DefaultCacheDuration: &metav1.Duration{Duration: ttl},
		Env:                  []kubeletconfigv1.ExecEnvVar{{Name: "PLUGIN_LOG", Value: r.logFile(p.name)}},
	}
	for k, v := range p.env {
		cp.Env = append(cp.Env, kubeletconfigv1.ExecEnvVar{Name: k, Value: v})
	}
	return cp
}

func (r *rig) logFile(name string) string { return filepath.Join(r.dir, name+".log") }

func (r *rig) load(opts ...Option) *Providers {
	r.t.Helper()
	ps, err := Load(r.config, r.binDir, opts...)
	if err != nil {
		r.t.Fatalf("Load: %v", err)
	}
	return ps
}

// run is what the test plugin logged of one run.
type run struct {
	Args    []string `json:"args"`
	Request struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Image      string `json:"image"`
	} `json:"request"`
}

// runs returns the runs of the named provider's plugin so far.
func (r *rig) runs(name string) []run {
	r.t.Helper()
	b, err := os.ReadFile(r.logFile(name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	var out []run
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var x run
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			r.t.Fatalf("plugin log line %q: %v", sc.Text(), err)
		}
		out = append(out, x)
	}
	return out
}

func dur(d time.Duration) *time.Duration { return &d }

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// rewrite replaces old with new in the config file.
func (r *rig) rewrite(old, new string) {
	r.t.Helper()
	b, err := os.ReadFile(r.config)
	if err != nil {
		r.t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		r.t.Fatalf("config has no %q: %s", old, b)
	}
	if err := os.WriteFile(r.config, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o644); err != nil {
		r.t.Fatal(err)
	}
}
