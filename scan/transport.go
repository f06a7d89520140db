package scan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/regcheck/regcheck/scan/internal/retry"

	"github.com/regcheck/regcheck/types"
)

// counter is the innermost transport layer: it counts every request that
// goes on the wire, retries included.
type counter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[types.RequestCount]int
}

var _ http.RoundTripper = (*counter)(nil)

func (c *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	status := "error"
	if err == nil {
		status = strconv.Itoa(resp.StatusCode)
	}
	k := types.RequestCount{Host: req.URL.Host, Kind: requestKind(req), Status: status}
	c.mu.Lock()
	c.n[k]++
	c.mu.Unlock()
	return resp, err
}

func (c *counter) counts() []types.RequestCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]types.RequestCount, 0, len(c.n))
	for k, n := range c.n {
		k.Count = n
		out = append(out, k)
	}
	return sortCounts(out)
}

// sortCounts orders counts by host, kind and status.
func sortCounts(out []types.RequestCount) []types.RequestCount {
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Status < b.Status
	})
	return out
}

// requestKind names a registry request from its method and path.
func requestKind(req *http.Request) string {
	p := req.URL.Path
	switch {
	case req.Response != nil:
		return "redirect" // to blob storage or a CDN: counted apart from the registry's own
	case p == "/v2/" || p == "/v2":
		return "ping"
	case strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/manifests/"):
		if req.Method == http.MethodHead {
			return "manifest-head"
		}
		return "manifest-get"
	case strings.HasPrefix(p, "/v2/") && strings.Contains(p, "/blobs/"):
		if req.Method == http.MethodGet {
			return "blob-get" // a blob's first byte, or an image's config
		}
		return "blob-head"
	case strings.HasPrefix(p, "/v2/") && strings.HasSuffix(p, "/tags/list"):
		return "tags-list"
	case !strings.HasPrefix(p, "/v2/"):
		return "token"
	}
	return "other"
}

// tracer logs each request that goes on the wire (retries and redirects
// included) at debug level: method, URL without credentials or query,
// status and time. Below debug it costs one Enabled call.
type tracer struct {
	next http.RoundTripper
	log  *slog.Logger
}

var _ http.RoundTripper = tracer{}

func (t tracer) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.log.Enabled(req.Context(), slog.LevelDebug) {
		return t.next.RoundTrip(req)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	took := time.Since(start).Round(100 * time.Microsecond)
	if err != nil {
		t.log.Debug(req.Method+" "+redactURL(req.URL.String()), "status", "error", "took", took, "err", err)
	} else {
		t.log.Debug(req.Method+" "+redactURL(req.URL.String()), "status", resp.StatusCode, "took", took)
	}
	return resp, err
}

// pingCache answers a registry's version check (GET /v2/) from memory after
// the first time per scheme and host: go-containerregistry pings once per
// repository, and a scan may touch hundreds of repositories on one registry.
// The ping carries no credentials; its answer is the auth challenge. An
// answer other than 200 or 401, or none, is kept only until the client
// forgets its faults (between passes), never for a run.
//
// What a host speaks is kept for the Scanner's life: go-containerregistry
// pings a plain-HTTP registry (a loopback one, or one named insecure) over
// https first, then over http. Once an https ping of a host failed without
// an answer and an http ping of it answered as a registry, every later
// https ping of it fails at once with the first one's error, and only the
// http ping, from memory, is answered: no TLS attempt goes out again.
type pingCache struct {
	next http.RoundTripper
	m    memo[string, pingAnswer]

	mu    sync.Mutex
	noTLS map[string]error // host → the error of its first failed https ping
}

// errPingStatus marks a ping answer that is not a registry's: it is
// served like any answer, but forgotten with the faults.
var errPingStatus = errors.New("ping answered neither 200 nor 401")

type pingAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (p *pingCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || (req.URL.Path != "/v2/" && req.URL.Path != "/v2") || req.Header.Get("Authorization") != "" {
		return p.next.RoundTrip(req)
	}
	if err := p.plainHTTP(req.URL); err != nil {
		return nil, err
	}
	a, err := p.m.do(req.Context(), req.URL.Scheme+"://"+req.URL.Host, func() (pingAnswer, error) {
		resp, err := p.next.RoundTrip(req)
		if err != nil {
			p.failedTLS(req, err)
			return pingAnswer{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if err != nil {
			return pingAnswer{}, err
		}
		a := pingAnswer{status: resp.StatusCode, header: resp.Header.Clone(), body: body}
		if a.status != http.StatusOK && a.status != http.StatusUnauthorized {
			return a, errPingStatus
		}
		return a, nil
	})
	if err != nil && !errors.Is(err, errPingStatus) {
		return nil, err
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", a.status, http.StatusText(a.status)), StatusCode: a.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(a.body)), ContentLength: int64(len(a.body)),
		Request: req,
	}, nil
}

// failedTLS remembers the first https ping of a host that failed without
// an answer, unless the ping was called off (go-containerregistry's http
// ping answered first).
func (p *pingCache) failedTLS(req *http.Request, err error) {
	if req.URL.Scheme != "https" || req.Context().Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.noTLS == nil {
		p.noTLS = map[string]error{}
	}
	if _, ok := p.noTLS[req.URL.Host]; !ok {
		p.noTLS[req.URL.Host] = err
	}
}

// plainHTTP returns, for an https ping of a host known to speak plain HTTP
// (its https ping failed, its http ping answered as a registry), the first
// https ping's error; nil otherwise.
func (p *pingCache) plainHTTP(u *url.URL) error {
	if u.Scheme != "https" {
		return nil
	}
	p.mu.Lock()
	err := p.noTLS[u.Host]
	p.mu.Unlock()
	if err == nil {
		return nil
	}
	if _, done, perr := p.m.peek("http://" + u.Host); !done || perr != nil {
		return nil
	}
	return fmt.Errorf("%s speaks plain HTTP (https was not asked again): %w", u.Host, err)
}

// plainHTTPGuard refuses plain-HTTP requests to hosts other than loopback and
// the ones the user named insecure, so that credentials and pulls never fall
// back to cleartext on their own.
type plainHTTPGuard struct {
	next     http.RoundTripper
	insecure map[string]bool
}

func (g plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.insecure[req.URL.Host] && !isLoopback(req.URL.Host) {
		return nil, fmt.Errorf("refusing plain HTTP to %s: name it as an insecure registry to allow it", req.URL.Host)
	}
	return g.next.RoundTrip(req)
}

// hostTLS sends requests to the hosts named insecure through a transport
// that skips TLS verification, and every other request through next.
type hostTLS struct {
	next, unverified http.RoundTripper
	insecure         map[string]bool
}

func (h hostTLS) RoundTrip(req *http.Request) (*http.Response, error) {
	if h.insecure[req.URL.Host] {
		return h.unverified.RoundTrip(req)
	}
	return h.next.RoundTrip(req)
}

func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// layers is the transport every request goes through, and the layers a
// Scanner reads or resets.
type layers struct {
	rt      http.RoundTripper
	counter *counter
	pings   *pingCache
	limits  *rateLimits
}

// buildTransport layers the transport every request goes through, innermost
// first: base → tracer → counter → rate limits → retry → ping cache →
// plain-HTTP guard → user agent. The registry auth layer
// (go-containerregistry's) goes on top, per repository. The base verifies TLS against the system
// roots plus the CA files given, except for hosts named insecure.
func buildTransport(o *options) layers {
	base := o.transport
	if base == nil {
		base = NewBaseTransport(o.roots, o.insecure, o.concurrency)
	}
	c := &counter{next: tracer{next: base, log: o.logger}, n: map[types.RequestCount]int{}}
	limits := &rateLimits{next: c, maxPulls: o.maxPulls}
	rt := &retry.Transport{Next: limits, Attempts: o.attempts, Base: o.backoff, Max: o.maxBackoff}
	pings := &pingCache{next: rt}
	return layers{rt: transport.NewUserAgent(plainHTTPGuard{next: pings, insecure: o.insecure}, o.userAgent), counter: c, pings: pings, limits: limits}
}

// Transport returns the transport the Scanner's registry requests go
// through (retries and backoff on 429 and 5xx, the pull budget, insecure
// hosts, plain HTTP refused but to loopback and the insecure hosts,
// request counting): for a client that reads the same registries beside
// the Scanner (cosign's verification of the signatures it found), so
// that its requests are retried and counted alike. The auth layer is the
// client's own.
func (s *Scanner) Transport() http.RoundTripper { return s.c.rt }
