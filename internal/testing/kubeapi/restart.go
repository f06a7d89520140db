package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
)

// RestartAPIServer stops kube-apiserver (SIGINT, then SIGKILL after 5
// seconds) and starts it again with the same flags, on the same port and
// against the same etcd, then waits until /readyz answers ok. Every
// client's open watches are cut and must be re-established; one whose
// resource version has been compacted meanwhile gets 410 Gone and relists.
// The restarted server logs to kube-apiserver.N.log in the cluster's folder
// (N counting restarts); Logs still names the first log.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if c.apiserver == nil || c.Config == nil {
		return errors.New("restarting kube-apiserver: the cluster was not started")
	}
	args := c.apiserver.cmd.Args[1:]
	bin := c.apiserver.cmd.Path
	c.apiserver.stop()
	c.restarts++
	logPath := filepath.Join(c.dir, "kube-apiserver."+strconv.Itoa(c.restarts)+".log")
	p, err := startProcess("kube-apiserver", bin, logPath, args...)
	if err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	c.apiserver = p
	if err := c.waitReady(ctx, c.Config.BearerToken); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w\n--- kube-apiserver log (tail) ---\n%s", err, p.tail(8192))
	}
	return nil
}
