//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/testing/bins"
)

// containerdProc is a real containerd started as root with its own root,
// state and socket, and the ctr that talks to it.
type containerdProc struct {
	root    string
	started time.Time
	// ctr runs ctr in namespace ns; the error carries its output.
	ctr func(ns string, args ...string) ([]byte, error)
}

// startContainerd starts containerd v2.4.2 without its CRI plugins. With
// isolated, content is not shared across namespaces
// (content_sharing_policy = "isolated"): a piece one namespace fetched
// cannot hide a missing piece from another.
func startContainerd(t testing.TB, isolated bool) *containerdProc {
	t.Helper()
	bin, _ := bins.Path("containerd-" + ContainerdVersion)
	ctr, _ := bins.Path("ctr-" + ContainerdVersion)
	// A socket path must be short: not under t.TempDir().
	dir, err := os.MkdirTemp("", "ctrd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "c.sock")
	root := filepath.Join(dir, "root")
	conf := fmt.Sprintf(`version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime", "io.containerd.nri.v1.nri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
`, root, filepath.Join(dir, "state"), sock, sock+".ttrpc")
	if isolated {
		conf += "[plugins.\"io.containerd.metadata.v1.bolt\"]\n  content_sharing_policy = \"isolated\"\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("starting containerd: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	run := func(ns string, args ...string) ([]byte, error) {
		out, err := exec.Command(ctr, append([]string{"--address", sock, "--namespace", ns}, args...)...).CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("ctr %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return out, nil
	}
	for _, err := run("default", "version"); err != nil; _, err = run("default", "version") {
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			t.Fatalf("containerd exited before it was ready:\n%s", b)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("containerd not ready after 30s")
		}
	}
	return &containerdProc{root: root, started: start, ctr: run}
}
