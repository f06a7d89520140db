package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/loopback"
)

// Versions the build script (hack/build-bins.sh) produces, by binary name.
const (
	V2 = "registry-v2.8.3" // docker/distribution: GC deletes the children of tagged indexes
	V3 = "registry-v3.1.2" // distribution/distribution v3: GC keeps them
)

// Binary returns the path of a registry binary by name (V2 or V3), or an
// error saying how to build it.
func Binary(name string) (string, error) { return bins.Path(name) }

// Registry is a running registry process.
type Registry struct {
	// Binary is the registry executable.
	Binary string
	// Root is the storage root directory (filesystem driver).
	Root string
	// Addr is host:port on 127.0.0.1.
	Addr string

	dir    string
	config string
	cmd    *exec.Cmd
	done   chan struct{}
	log    *os.File
}

// Option changes the registry's configuration.
type Option func(*config)

type config struct {
	htpasswd  string
	remoteURL string
}

// WithHtpasswd makes the registry require basic auth against an htpasswd
// file (bcrypt entries only, as the registry requires).
func WithHtpasswd(path string) Option { return func(c *config) { c.htpasswd = path } }

// WithProxy runs the registry as a pull-through cache of the registry at
// remoteURL (proxy.remoteurl in its configuration): what it does not hold
// it fetches from there, and keeps.
func WithProxy(remoteURL string) Option { return func(c *config) { c.remoteURL = remoteURL } }

// Start writes a config under dir and starts binary serving on addr
// ("127.0.0.1:0" or "" picks a free port). Storage lives in dir/storage.
func Start(ctx context.Context, binary, dir, addr string, opts ...Option) (*Registry, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if addr == "" || strings.HasSuffix(addr, ":0") {
		free, err := loopback.FreeAddr()
		if err != nil {
			return nil, err
		}
		addr = free
	}
	r := &Registry{Binary: binary, Root: filepath.Join(dir, "storage"), Addr: addr, dir: dir, config: filepath.Join(dir, "config.yml")}
	if err := os.MkdirAll(r.Root, 0o755); err != nil {
		return nil, fmt.Errorf("creating registry storage: %w", err)
	}
	conf := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: regcheck-test-only
`, r.Root, addr)
	if c.htpasswd != "" {
		conf += fmt.Sprintf("auth:\n  htpasswd:\n    realm: regcheck-test\n    path: %s\n", c.htpasswd)
	}
	if c.remoteURL != "" {
		conf += fmt.Sprintf("proxy:\n  remoteurl: %s\n", c.remoteURL)
	}
	if err := os.WriteFile(r.config, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("writing registry config: %w", err)
	}
	return r, r.start(ctx)
}

func (r *Registry) start(ctx context.Context) error {
	logf, err := os.OpenFile(filepath.Join(r.dir, "registry.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening registry log: %w", err)
	}
	cmd := exec.Command(r.Binary, "serve", r.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", r.Binary, err)
	}
	r.cmd, r.log, r.done = cmd, logf, make(chan struct{})
	go func() { cmd.Wait(); close(r.done) }()
	if err := r.waitReady(ctx); err != nil {
		r.Stop()
		return fmt.Errorf("registry %s on %s: %w\n%s", filepath.Base(r.Binary), r.Addr, err, r.logTail())
	}
	return nil
}

func (r *Registry) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr+"/v2/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil // up; a 401 is the auth challenge of a registry with htpasswd
			}
		}
		select {
		case <-r.done:
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Host returns host:port, for image references.
func (r *Registry) Host() string { return r.Addr }

// Stop ends the process and waits for it.
func (r *Registry) Stop() error {
	if r.cmd == nil {
		return nil
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
	r.cmd = nil
	return r.log.Close()
}

// Restart stops the registry and starts it again on the same address and storage.
func (r *Registry) Restart(ctx context.Context) error {
	if err := r.Stop(); err != nil {
		return err
	}
	return r.start(ctx)
}

// GC runs the registry's own `garbage-collect` on its storage; the registry
// should be stopped first, as its documentation asks. It returns the
// command's combined output.
func (r *Registry) GC(ctx context.Context, deleteUntagged, dryRun bool) (string, error) {
	args := []string{"garbage-collect"}
	if deleteUntagged {
		args = append(args, "--delete-untagged=true")
	}
	if dryRun {
		args = append(args, "--dry-run=true")
	}
	args = append(args, r.config)
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(r.Binary), strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func (r *Registry) logTail() string {
	b, _ := os.ReadFile(filepath.Join(r.dir, "registry.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
