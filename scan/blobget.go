package scan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/types"
)

// frontHeaders are response headers that name a front whose blob HEAD
// answers 200 for blobs its GET then answers 404 (Artifactory:
// gardener/cc-utils#1752): a host that sends one has its blobs proven by
// GET.
var frontHeaders = []string{"X-Artifactory-Id"}

// getHosts are the hosts whose blobs (and, with a manifest cache, cached
// manifests) are proven by GET rather than HEAD: those named with
// WithBlobGetRegistries, and those learned from frontHeaders during the
// Scanner's life. A Scanner's clients share one.
type getHosts struct {
	mu sync.Mutex
	m  map[string]string // host → why ("named", or the header that said so)
}

// has reports whether host's blobs are proven by GET.
func (g *getHosts) has(host string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[host] != ""
}

func (g *getHosts) add(host, why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]string{}
	}
	if g.m[host] == "" {
		g.m[host] = why
	}
}

// learn adds host when h carries one of frontHeaders, and reports whether
// it was new.
func (g *getHosts) learn(host string, h http.Header) (string, bool) {
	for _, k := range frontHeaders {
		if h.Get(k) != "" && !g.has(host) {
			g.add(host, k)
			return k, true
		}
	}
	return "", false
}

// WithBlobGetRegistries proves the blobs of the named hosts (host or
// host:port) with a ranged GET, as a node's pull fetches them, and never
// with a HEAD alone: for a front whose HEAD answers 200 for a blob its GET
// answers 404. A host whose answers carry X-Artifactory-Id is treated so
// without being named. With a manifest cache, a cached manifest of such a
// host is proven by GET too. By default only those hosts are.
func WithBlobGetRegistries(hosts ...string) Option {
	return func(o *options) error {
		for _, h := range hosts {
			h = strings.TrimSpace(h)
			if h == "" || strings.Contains(h, "/") {
				return fmt.Errorf("blob-GET registry %q: want host or host:port", h)
			}
			o.getHosts.add(h, "named")
		}
		return nil
	}
}

// noteFront learns from an answer of host whether it is a front whose
// blob HEAD proves nothing.
func (c *client) noteFront(host string, resp *http.Response) {
	if resp.Request != nil && resp.Request.URL != nil && resp.Request.URL.Host != host {
		return // a redirect's storage or CDN, not the registry
	}
	if header, ok := c.o.getHosts.learn(host, resp.Header); ok {
		c.o.logger.Info("proving blobs by GET: the registry answers as a front whose HEAD says nothing", "host", host, "header", header)
	}
}

// blob says whether a blob is there as the node's GET would be answered.
// A HEAD answered 200 proves it there, unless the host's HEAD proves
// nothing (getHosts), whose blobs are asked with a ranged GET only. A HEAD
// answered 404, 403, 405 or 501, or redirected to a storage that answered
// 404, is asked again as a ranged GET (see firstByte), whose answer is the
// proof: so only what would be a finding or a fault pays the request.
func (c *client) blob(ctx context.Context, repo name.Repository, digest string) error {
	_, err := c.blobs.do(ctx, repo.Name()+"@"+digest, func() (struct{}, error) {
		at, _ := c.where(repo, "blobs", digest)
		host := at.RegistryStr()
		if c.o.getHosts.has(host) {
			return struct{}{}, c.firstByte(ctx, repo, digest)
		}
		_, _, err := c.do(ctx, repo, http.MethodHead, "blobs", digest, 0)
		switch {
		case err == nil && !c.o.getHosts.has(host):
			return struct{}{}, nil
		case err != nil && !headInconclusive(err):
			return struct{}{}, err
		}
		return struct{}{}, c.confirm(ctx, repo, digest, err)
	})
	return err
}

// confirm asks with a ranged GET for a blob whose HEAD answered head (nil
// for a 200 from a host whose HEAD proves nothing), naming the HEAD's
// answer in an error the GET returns.
func (c *client) confirm(ctx context.Context, repo name.Repository, digest string, head error) error {
	err := c.firstByte(ctx, repo, digest)
	if err == nil && head != nil {
		c.o.logger.Debug("a blob's GET served what its HEAD did not", "repository", repo.Name(), "digest", digest, "head", head)
	}
	var re *RegistryError
	if err == nil || !errors.As(err, &re) {
		return err
	}
	if hre, ok := head.(*RegistryError); ok && hre.Status != 0 {
		re.Detail = strings.TrimSpace(fmt.Sprintf("%s (asked with GET after HEAD answered %d)", re.Detail, hre.Status))
	}
	return err
}

// headInconclusive reports whether a blob HEAD's failure is asked again
// as the GET a pull makes: a 404 (a pull-through cache answers it for what
// it has not fetched yet), a 404 from the storage a redirect went to, 403
// (ECR Public refuses HEAD and allows GET), 405 and 501.
func headInconclusive(err error) bool {
	var re *RegistryError
	if !errors.As(err, &re) {
		return false
	}
	return re.storage != "" || errors.Is(re.Err, types.ErrNotFound) || re.Status == http.StatusForbidden || headUnsupported(re)
}
