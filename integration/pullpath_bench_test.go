//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
)

// countingProxy is a reverse proxy on 127.0.0.1 that counts the requests
// it passes to a registry.
type countingProxy struct {
	srv *httptest.Server
	n   atomic.Int64
}

func startCountingProxy(tb testing.TB, host string) *countingProxy {
	tb.Helper()
	target, _ := url.Parse("http://" + host)
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.n.Add(1)
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(p.srv.Close)
	return p
}

func (p *countingProxy) host() string { return p.srv.Listener.Addr().String() }

// BenchmarkPullPathRequests counts, at the registries, the requests of a
// walk of the node's pull path (scan --registries-config --platform
// linux/amd64) beside those of containerd's own fetch of the same images
// (ctr content fetch --skip-metadata --platform linux/amd64 --hosts-dir),
// 7 fixtures, upstream after its GC, for three configurations.
func BenchmarkPullPathRequests(b *testing.B) {
	if why := containerdReason(); why != "" {
		b.Skip(why)
	}
	up := startEmpty(b, registry.V2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := fixture.Push(ctx, up.Host(), "gc/")
	if err != nil {
		b.Fatal(err)
	}
	collect(b, up)
	mirror := startEmpty(b, registry.V3)
	if _, err := fixture.Push(ctx, mirror.Host(), "gc/"); err != nil {
		b.Fatal(err)
	}
	empty := startEmpty(b, registry.V3)
	upP, mP, eP := startCountingProxy(b, up.Host()), startCountingProxy(b, mirror.Host()), startCountingProxy(b, empty.Host())
	var refs []string
	for _, im := range imgs {
		refs = append(refs, upP.host()+im.Ref[len(up.Host()):])
	}
	cd := startContainerd(b, true)
	for _, c := range []struct{ name, mirror string }{{"no mirror", ""}, {"mirror whole", mP.host()}, {"mirror empty", eP.host()}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			hosts := fmt.Sprintf("server = %q\n", "http://"+upP.host())
			if c.mirror != "" {
				hosts += fmt.Sprintf("\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+c.mirror)
			}
			if err := os.MkdirAll(filepath.Join(dir, upP.host()), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, upP.host(), "hosts.toml"), []byte(hosts), 0o644); err != nil {
				b.Fatal(err)
			}
			count := func() int64 { return upP.n.Load() + mP.n.Load() + eP.n.Load() }
			var walk, fetch int64
			for i := 0; i < b.N; i++ {
				before := count()
				var out, errs bytes.Buffer
				args := append([]string{"scan", "-o", "json", "--no-cache", "--platform", "linux/amd64", "--registries-config", dir}, refs...)
				if code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errs}, args); code == cli.ExitUsage {
					b.Fatalf("scan: exit 2\n%s", errs.String())
				}
				walk += count() - before
				if i == 0 {
					var doc report.Document
					if err := json.Unmarshal(out.Bytes(), &doc); err == nil {
						b.Logf("%s: regcheck's requests by kind %v", c.name, doc.Summary.Requests)
					}
				}
				before = count()
				for _, ref := range refs {
					cd.ctr(fmt.Sprintf("bench-%s-%d", sanitize(c.name), i), "content", "fetch", "--skip-metadata", "--platform", "linux/amd64", "--hosts-dir", dir, ref)
				}
				fetch += count() - before
			}
			b.ReportMetric(float64(walk)/float64(b.N), "walk-requests/op")
			b.ReportMetric(float64(fetch)/float64(b.N), "containerd-requests/op")
			b.ReportMetric(float64(walk)/float64(fetch), "walk/containerd")
		})
	}
}

func sanitize(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == ' ' {
			r = '-'
		}
		out = append(out, r)
	}
	return string(out)
}
