package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubeconfigFor writes a kubeconfig whose one context points at server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: test, context: {cluster: c, user: u, namespace: web}}]
current-context: test
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWatchUsageErrors(t *testing.T) {
	kc := kubeconfigFor(t, "http://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"out and configmap", []string{"--out", "h.json", "--configmap", "a/b"}, "cannot be used together"},
		{"bad configmap", []string{"--configmap", "nope"}, "NAMESPACE/NAME"},
		{"zero flush interval", []string{"--flush-interval", "0s"}, "must be positive"},
		{"negative history limit", []string{"--history-limit", "-1"}, "cannot be negative"},
		{"lease order", []string{"--leader-elect", "--renew-deadline", "20s"}, "--retry-period < --renew-deadline < --lease-duration"},
		{"lease namespace alone", []string{"--leader-election-namespace", "x"}, "goes with --leader-elect"},
		{"an argument", []string{"extra"}, "unknown command"},
		{"both -n and -A", []string{"-n", "a", "-A"}, "cannot be used together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"watch", "--kubeconfig", kc, "--metrics-bind-address", "0"}, tc.args...)
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
			if code != ExitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), ExitUsage, tc.want)
			}
		})
	}
}

// The metrics address is served while watch runs, and taken already is a
// configuration error.
func TestWatchMetricsAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	kc := kubeconfigFor(t, "http://127.0.0.1:1")
	var errb bytes.Buffer
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb},
		[]string{"watch", "--kubeconfig", kc, "--out", filepath.Join(t.TempDir(), "h.json"), "--metrics-bind-address", ln.Addr().String()})
	if code != ExitUsage || !strings.Contains(errb.String(), "--metrics-bind-address") {
		t.Errorf("exit %d, stderr %q; want 2 naming --metrics-bind-address", code, errb.String())
	}
}

// Stopped (SIGTERM cancels the context) before its informers could sync,
// watch still exits 0, and answers /healthz but not /readyz meanwhile.
func TestWatchStopsCleanly(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer api.Close()
	kc := kubeconfigFor(t, api.URL)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard},
			[]string{"watch", "--kubeconfig", kc, "--out", filepath.Join(t.TempDir(), "h.json"), "--metrics-bind-address", addr, "--no-cache"})
	}()
	get := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second)
	for get("/healthz") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/healthz never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d before the informers synced, want 503", code)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitClean {
			t.Errorf("exit %d after the context ended, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop within 10s")
	}
}
