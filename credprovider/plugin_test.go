package credprovider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/types"
)

func TestPluginRequest(t *testing.T) {
	tests := []struct {
		name       string
		apiVersion string
		image      string
		wantImage  string
	}{
		{name: "v1", apiVersion: "credentialprovider.kubelet.k8s.io/v1", image: "reg.io/team/app", wantImage: "reg.io/team/app"},
		{name: "v1beta1", apiVersion: "credentialprovider.kubelet.k8s.io/v1beta1", image: "reg.io/app", wantImage: "reg.io/app"},
		{name: "v1alpha1", apiVersion: "credentialprovider.kubelet.k8s.io/v1alpha1", image: "reg.io/app", wantImage: "reg.io/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, apiVersion: tt.apiVersion, args: []string{"get-credentials", "--flag=x"},
				env: map[string]string{"PLUGIN_USERNAME": "alice", "PLUGIN_PASSWORD": "pw-" + tt.name}})
			creds, err := r.load().Lookup(context.Background(), tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if len(creds) != 1 || creds[0].Username != "alice" || creds[0].password != "pw-"+tt.name || creds[0].Provider != "p" || creds[0].Pattern != "reg.io" {
				t.Fatalf("creds = %v", creds)
			}
			runs := r.runs("p")
			if len(runs) != 1 {
				t.Fatalf("%d runs, want 1", len(runs))
			}
			req := runs[0].Request
			if req.APIVersion != tt.apiVersion || req.Kind != "CredentialProviderRequest" || req.Image != tt.wantImage {
				t.Errorf("request = %+v", req)
			}
			if want := []string{"get-credentials", "--flag=x"}; !slices.Equal(runs[0].Args, want) {
				t.Errorf("args = %q, want %q", runs[0].Args, want)
			}
		})
	}
}

// TestPluginEnv: the plugin sees the process's environment with the
// config's env on top.
func TestPluginEnv(t *testing.T) {
	t.Setenv("PLUGIN_USERNAME", "from-process")
	t.Setenv("PLUGIN_PASSWORD", "process-password")
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_USERNAME": "from-config"}})
	creds, err := r.load().Lookup(context.Background(), "reg.io/app")
	if err != nil {
		t.Fatal(err)
	}
	if len(creds) != 1 || creds[0].Username != "from-config" || creds[0].password != "process-password" {
		t.Fatalf("creds = %v", creds)
	}
}

func TestPluginFailures(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		opts    []Option
		want    []string
		wantErr error // besides types.ErrCredentials
		stderr  int   // bytes the plugin wrote to stderr
	}{
		{name: "exit 1", env: map[string]string{"PLUGIN_MODE": "fail"}, stderr: 45,
			want: []string{`credential provider "p" for reg.io/app`, "exit status 1", "the plugin wrote 45 bytes to stderr (not shown"}},
		{name: "timeout", env: map[string]string{"PLUGIN_MODE": "sleep", "PLUGIN_SLEEP": "30s"}, opts: []Option{WithTimeout(300 * time.Millisecond)},
			want: []string{`credential provider "p"`, "timed out after 300ms"}, wantErr: context.DeadlineExceeded},
		{name: "garbage", env: map[string]string{"PLUGIN_MODE": "garbage"}, want: []string{"not a JSON object with apiVersion and kind"}},
		{name: "wrong apiVersion", env: map[string]string{"PLUGIN_MODE": "wrongapi"},
			want: []string{`response apiVersion "credentialprovider.kubelet.k8s.io/v1alpha1", want "credentialprovider.kubelet.k8s.io/v1"`}},
		{name: "wrong kind", env: map[string]string{"PLUGIN_MODE": "wrongkind"}, want: []string{`response kind "CredentialProviderRequest", want CredentialProviderResponse`}},
		{name: "unknown field", env: map[string]string{"PLUGIN_MODE": "unknownfield"}, want: []string{"does not decode"}},
		{name: "bad cacheKeyType", env: map[string]string{"PLUGIN_CACHE_KEY_TYPE": "Forever"}, want: []string{`response cacheKeyType "Forever", want Image, Registry or Global`}},
		{name: "missing cacheKeyType", env: map[string]string{"PLUGIN_CACHE_KEY_TYPE": ""}, want: []string{`response cacheKeyType ""`}},
		{name: "exit 1 after a response", env: map[string]string{"PLUGIN_MODE": "fail-after-response"}, stderr: 32,
			want: []string{"exit status 1", "wrote 32 bytes to stderr"}},
		{name: "stderr counted", env: map[string]string{"PLUGIN_MODE": "bigstderr"}, stderr: 5000, want: []string{"exit status 2", "wrote 5000 bytes to stderr"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, env: tt.env})
			start := time.Now()
			_, err := r.load(tt.opts...).Lookup(context.Background(), "reg.io/app")
			checkErr(t, err, tt.want)
			checkCredentialsError(t, err)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error does not wrap %v", tt.wantErr)
			}
			var pe *PluginError
			if !errors.As(err, &pe) || pe.Provider != "p" || pe.Image != "reg.io/app" {
				t.Fatalf("error %v is not a *PluginError of provider p for reg.io/app", err)
			}
			if pe.StderrBytes != tt.stderr {
				t.Errorf("StderrBytes = %d, want %d", pe.StderrBytes, tt.stderr)
			}
			if strings.Contains(err.Error(), "access denied") || strings.Contains(err.Error(), "xxxx") {
				t.Errorf("error quotes the plugin's stderr: %v", err)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}

func checkCredentialsError(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, types.ErrCredentials) {
		t.Errorf("error %v does not wrap types.ErrCredentials", err)
	}
	if got := types.FaultCode(err); got != types.CredentialsError {
		t.Errorf("FaultCode = %q, want %q", got, types.CredentialsError)
	}
}

func TestPluginGone(t *testing.T) {
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}})
	ps := r.load()
	if err := os.Remove(filepath.Join(r.binDir, "p")); err != nil {
		t.Fatal(err)
	}
	_, err := ps.Lookup(context.Background(), "reg.io/app")
	checkErr(t, err, []string{`credential provider "p" for reg.io/app: plugin`, "no such file"})
	checkCredentialsError(t, err)
}

// TestPluginNoAuth: a response with no auth map gives no credential and no
// error: the image is pulled anonymously, as by the kubelet.
func TestPluginNoAuth(t *testing.T) {
	tests := map[string]string{"no auth map": "-", "no matching key": "other.io,reg.io/elsewhere"}
	for name, keys := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_AUTH_KEYS": keys}})
			creds, err := r.load().Lookup(context.Background(), "reg.io/app")
			if err != nil || len(creds) != 0 {
				t.Fatalf("Lookup = %v, %v; want none, nil", creds, err)
			}
			if n := len(r.runs("p")); n != 1 {
				t.Errorf("%d runs, want 1", n)
			}
		})
	}
}

func TestCappedWriter(t *testing.T) {
	c := &capped{max: 4}
	for _, s := range []string{"ab", "cde", "fgh"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if !strings.HasPrefix(string(c.Bytes()), "abcd") || c.dropped != 4 {
		t.Errorf("Bytes() = %q, dropped %d", c.Bytes(), c.dropped)
	}
}

// TestPluginChildHoldsStdout: a plugin that answers and exits 0 while a
// child of its keeps stdout open still gives its answer, as the kubelet,
// which waits for stdout's EOF, gets it.
func TestPluginChildHoldsStdout(t *testing.T) {
	t.Parallel()
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_MODE": "child-holds-stdout"}})
	start := time.Now()
	creds, err := r.load().Lookup(context.Background(), "reg.io/app")
	if err != nil || len(creds) != 1 || creds[0].Username != "user" {
		t.Fatalf("Lookup = %v, %v; want the plugin's credential", creds, err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %s: waited for the child", d)
	}
}

// TestPluginFailureCached: a plugin that fails runs once per matchImages
// pattern in a run, not once per image: the other images it matches get
// the same failure at once.
func TestPluginFailureCached(t *testing.T) {
	t.Parallel()
	r := newRig(t, plugin{name: "p", match: []string{"reg.io", "other.io"}, env: map[string]string{"PLUGIN_MODE": "sleep", "PLUGIN_SLEEP": "30s"}})
	ps := r.load(WithTimeout(500 * time.Millisecond))
	start := time.Now()
	for _, image := range []string{"reg.io/a", "reg.io/b", "reg.io/c", "other.io/a", "other.io/b"} {
		_, err := ps.Lookup(context.Background(), image)
		checkCredentialsError(t, err)
		var pe *PluginError
		if !errors.As(err, &pe) || pe.Image != image || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lookup(%s) = %v, want the plugin's timeout for this image", image, err)
		}
	}
	if n := len(r.runs("p")); n != 2 {
		t.Errorf("%d runs, want 2 (one per pattern)", n)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %s, want about two timeouts", d)
	}
}
