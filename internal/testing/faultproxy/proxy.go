package faultproxy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is what a registry request asks for, as a Rule matches it.
type Kind string

// Request kinds.
const (
	Ping             Kind = "ping"               // GET /v2/
	Token            Kind = "token"              // the token realm the proxy serves itself (/token)
	ManifestByTag    Kind = "manifest-by-tag"    // /v2/<name>/manifests/<tag>
	ManifestByDigest Kind = "manifest-by-digest" // /v2/<name>/manifests/<algorithm>:<hex>
	Blob             Kind = "blob"               // /v2/<name>/blobs/<digest>
	Other            Kind = "other"              // anything else (tag lists, uploads)
)

// Rule says which requests get which fault. A request gets the fault of
// the first rule that matches it; the others go to the registry.
type Rule struct {
	// Fault is what the matching requests get.
	Fault Fault
	// Kinds are the request kinds the rule applies to; none means every kind.
	Kinds []Kind
	// Path, if set, is a substring the request's path must contain.
	Path string
	// Methods, if set, are the HTTP methods the rule applies to (a GET
	// of a blob, not the HEAD that checked it was there); none means
	// every method.
	Methods []string
	// First, if positive, injects the fault only into the first First
	// requests of each method and path: a transient fault that a retry passes.
	First int
	// Percent, if positive, injects the fault into that share of the
	// requests, decided by a hash of Config.Seed, the method, the path and
	// how many times that method and path were asked before: the same
	// requests get the same faults on every run, whatever their order.
	Percent int
	// Neither First nor Percent: every matching request gets the fault.

	// Limit, if positive, stops the fault after Limit requests in all got
	// it: a registry that misbehaves for a moment, then recovers.
	Limit int
}

// Config is what Start needs.
type Config struct {
	// Upstream is the registry's host:port; it is spoken to in plain HTTP.
	Upstream string
	// Rules are tried in order.
	Rules []Rule
	// Seed makes Rule.Percent's choices; runs with one seed choose alike.
	Seed uint64
	// Auth makes the proxy ask for a Bearer token as a registry with a
	// token service does: GET /v2/ and requests without the token get a
	// 401 challenge whose realm is the proxy's own /token, which issues
	// the token and sets a cookie. The registry behind is asked without
	// either.
	Auth bool
	// StallFor bounds how long the Stall fault holds a request; default 5s.
	StallFor time.Duration
	// OtherIP is the loopback address of the other host the redirects
	// point at; default 127.0.0.2, another host name. 127.0.0.1 makes it
	// the proxy's host on another port.
	OtherIP string
}

// Visits is what the other host (the target of the Redirect faults) received.
type Visits struct {
	// Requests is how many requests it served.
	Requests int
	// Authorization and Cookie count the requests that carried that header.
	Authorization int
	Cookie        int
}

// Proxy is a running fault-injecting proxy on 127.0.0.1, with a second
// listener, the other host (127.0.0.2 by default), that redirects point at.
type Proxy struct {
	cfg      Config
	ln       net.Listener
	otherLn  net.Listener
	srv      *http.Server
	otherSrv *http.Server
	upstream *http.Transport
	done     chan struct{}
	handlers sync.WaitGroup

	mu       sync.Mutex
	seen     map[string]int        // rule index, method and path → requests matched so far
	fired    map[int]int           // rule index → requests given its fault
	injected map[Fault]int         // faults injected, by fault
	byRepo   map[string]int        // faults injected, by repository
	served   map[string]manifestAt // repo@digest → a manifest the proxy made up and serves itself
	visits   Visits
}

type manifestAt struct {
	body        []byte
	contentType string
}

// token is the Bearer token the proxy issues with Config.Auth.
const token = "faultproxy-token"

// Start validates cfg and starts the proxy and its other host.
func Start(cfg Config) (*Proxy, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("faultproxy: no upstream")
	}
	for i, r := range cfg.Rules {
		if injectors[r.Fault] == nil {
			return nil, fmt.Errorf("faultproxy: rule %d: unknown fault %q", i, r.Fault)
		}
		if r.First < 0 || r.Percent < 0 || r.Percent > 100 || r.First > 0 && r.Percent > 0 || r.Limit < 0 {
			return nil, fmt.Errorf("faultproxy: rule %d: want First >= 0 or Percent in 0..100, not both, and Limit >= 0", i)
		}
	}
	if cfg.StallFor <= 0 {
		cfg.StallFor = 5 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	if cfg.OtherIP == "" {
		cfg.OtherIP = "127.0.0.2"
	}
	if ip := net.ParseIP(cfg.OtherIP); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("faultproxy: OtherIP %q is not a loopback address", cfg.OtherIP)
	}
	otherLn, err := net.Listen("tcp", net.JoinHostPort(cfg.OtherIP, "0"))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("faultproxy: the other host: %w", err)
	}
	p := &Proxy{
		cfg: cfg, ln: ln, otherLn: otherLn,
		upstream: &http.Transport{ResponseHeaderTimeout: 10 * time.Second, MaxIdleConnsPerHost: 8},
		done:     make(chan struct{}),
		seen:     map[string]int{}, fired: map[int]int{}, injected: map[Fault]int{}, byRepo: map[string]int{}, served: map[string]manifestAt{},
	}
	p.srv = &http.Server{Handler: p.track(p.serveProxy), ReadHeaderTimeout: 10 * time.Second}
	p.otherSrv = &http.Server{Handler: p.track(p.serveOther), ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	go p.otherSrv.Serve(otherLn)
	return p, nil
}

// Host is the proxy's host:port, for image references.
func (p *Proxy) Host() string { return p.ln.Addr().String() }

// OtherHost is the host:port the Redirect faults point at.
func (p *Proxy) OtherHost() string { return p.otherLn.Addr().String() }

// Close stops both listeners, ends stalled requests, and waits (a few
// seconds at most) for the requests under way.
func (p *Proxy) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	err := errors.Join(p.srv.Close(), p.otherSrv.Close())
	waited := make(chan struct{})
	go func() { p.handlers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		err = errors.Join(err, errors.New("faultproxy: requests still under way after 5s"))
	}
	p.upstream.CloseIdleConnections()
	return err
}

// Injected returns how many faults were injected, by fault.
func (p *Proxy) Injected() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.injected)
}

// Total returns how many faults were injected in all.
func (p *Proxy) Total() int {
	n := 0
	for _, v := range p.Injected() {
		n += v
	}
	return n
}

// InjectedByRepo returns how many faults were injected into requests for
// each repository ("gc/single"); faults on the ping or the token are not
// counted here.
func (p *Proxy) InjectedByRepo() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.byRepo)
}

// Visits returns what the other host received.
func (p *Proxy) Visits() Visits {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.visits
}

// track counts the handlers under way, for Close.
func (p *Proxy) track(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.handlers.Add(1)
		defer p.handlers.Done()
		h(w, r)
	})
}

// serveProxy answers one request: a fault if a rule matches, else what the
// registry (or the proxy's auth, or a manifest it made up) answers.
func (p *Proxy) serveProxy(w http.ResponseWriter, r *http.Request) {
	kind, repo, ref := parse(r.URL.Path)
	if kind == ManifestByDigest {
		p.mu.Lock()
		m, ok := p.served[repo+"@"+ref]
		p.mu.Unlock()
		if ok {
			p.writeManifest(w, m, ref)
			return
		}
	}
	if rule, ok := p.match(r, kind); ok {
		fw := &faultWriter{ResponseWriter: w, count: func() {
			p.mu.Lock()
			p.injected[rule.Fault]++
			if repo != "" {
				p.byRepo[repo]++
			}
			p.mu.Unlock()
		}}
		if injectors[rule.Fault](p, fw, r) {
			fw.commit()
		}
		return
	}
	p.serve(w, r)
}

// faultWriter counts its fault when the answer is committed (its header
// written or its connection taken), before the client can have it: a test
// that asks Total after its request sees the fault it met. An answer
// passed through as the registry's (pass) is not counted.
type faultWriter struct {
	http.ResponseWriter
	count func()
	done  bool
}

func (f *faultWriter) commit() {
	if !f.done {
		f.done = true
		f.count()
	}
}

// WriteHeader commits the fault, then writes the header.
func (f *faultWriter) WriteHeader(code int) {
	f.commit()
	f.ResponseWriter.WriteHeader(code)
}

// Write commits the fault, then writes b.
func (f *faultWriter) Write(b []byte) (int, error) {
	f.commit()
	return f.ResponseWriter.Write(b)
}

// Hijack commits the fault, then takes the connection.
func (f *faultWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := f.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("faultproxy: %T cannot be hijacked", f.ResponseWriter)
	}
	f.commit()
	return hj.Hijack()
}

// pass marks w's answer as the registry's own, not a fault: it is not
// counted. It does nothing to a writer that carries no fault.
func pass(w http.ResponseWriter) {
	if f, ok := w.(*faultWriter); ok {
		f.done = true
	}
}

// serve answers a request as the proxy does without faults.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	pass(w)
	kind, _, _ := parse(r.URL.Path)
	if p.cfg.Auth {
		http.SetCookie(w, &http.Cookie{Name: "faultproxy-session", Value: "secret", Path: "/"})
		switch {
		case kind == Token:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"token":%q,"access_token":%q,"expires_in":300}`, token, token)
			return
		case r.Header.Get("Authorization") != "Bearer "+token:
			p.challenge(w, r)
			return
		case kind == Ping:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
			return
		}
	}
	resp, err := p.fetch(r, r.Method)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.write(w, r, resp)
}

// challenge answers 401 with a Bearer challenge whose realm is the proxy.
func (p *Proxy) challenge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="faultproxy"`, r.Host))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
}

// serveOther is the other host: it records the headers that must not
// follow a redirect to it, and serves what the registry serves.
func (p *Proxy) serveOther(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.visits.Requests++
	if r.Header.Get("Authorization") != "" {
		p.visits.Authorization++
	}
	if r.Header.Get("Cookie") != "" {
		p.visits.Cookie++
	}
	p.mu.Unlock()
	if r.URL.Query().Has(notFoundFlag) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<html><body>404 Not Found</body></html>\n")
		return
	}
	resp, err := p.fetch(r, r.Method)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.write(w, r, resp)
}

// notFoundFlag, in the query of a redirect to the other host, makes it
// answer 404 as a CDN or a misconfigured bucket does.
const notFoundFlag = "faultproxy-404"

// match returns the first rule that applies to r, counting r against it.
func (p *Proxy) match(r *http.Request, kind Kind) (Rule, bool) {
	for i, rule := range p.cfg.Rules {
		if len(rule.Kinds) > 0 && !contains(rule.Kinds, kind) || !strings.Contains(r.URL.Path, rule.Path) ||
			len(rule.Methods) > 0 && !slices.Contains(rule.Methods, r.Method) {
			continue
		}
		key := fmt.Sprintf("%d %s %s", i, r.Method, r.URL.Path)
		p.mu.Lock()
		defer p.mu.Unlock()
		n := p.seen[key]
		p.seen[key]++
		fire := true
		switch {
		case rule.First > 0:
			fire = n < rule.First
		case rule.Percent > 0:
			fire = p.roll(key, n) < rule.Percent
		}
		if rule.Limit > 0 && p.fired[i] >= rule.Limit {
			fire = false
		}
		if fire {
			p.fired[i]++
		}
		return rule, fire
	}
	return Rule{}, false
}

// roll is a number in 0..99 fixed by the seed, the request and its count.
func (p *Proxy) roll(key string, n int) int {
	h := fnv.New64a()
	binary.Write(h, binary.LittleEndian, p.cfg.Seed)
	io.WriteString(h, key)
	binary.Write(h, binary.LittleEndian, int64(n))
	return int(h.Sum64() % 100)
}

func contains(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// parse names a request by its path: its kind, and for manifests and
// blobs the repository and the tag or digest.
func parse(path string) (kind Kind, repo, ref string) {
	switch {
	case path == "/v2/" || path == "/v2":
		return Ping, "", ""
	case path == "/token":
		return Token, "", ""
	case !strings.HasPrefix(path, "/v2/"):
		return Other, "", ""
	}
	rest := strings.TrimPrefix(path, "/v2/")
	if i := strings.LastIndex(rest, "/manifests/"); i > 0 {
		repo, ref = rest[:i], rest[i+len("/manifests/"):]
		if strings.Contains(ref, ":") {
			return ManifestByDigest, repo, ref
		}
		return ManifestByTag, repo, ref
	}
	if i := strings.LastIndex(rest, "/blobs/"); i > 0 && !strings.Contains(rest, "/blobs/uploads") {
		return Blob, rest[:i], rest[i+len("/blobs/"):]
	}
	return Other, "", ""
}

// response is a registry's answer, body read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// maxBody bounds what the proxy reads from the registry.
const maxBody = 64 << 20

// fetch asks the registry what r asks, with method, without the
// credentials and cookies meant for the proxy.
func (p *Proxy) fetch(r *http.Request, method string) (*response, error) {
	req, err := http.NewRequestWithContext(r.Context(), method, "http://"+p.cfg.Upstream+r.URL.RequestURI(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Accept", "Range", "User-Agent"} {
		if v := r.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	resp, err := p.upstream.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// hopHeaders are not copied from the registry's answer.
var hopHeaders = []string{"Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length", "Trailer", "Upgrade"}

// write sends resp as the answer to r. A HEAD's Content-Length is the
// registry's unless the caller set one; a GET's is the body's.
func (p *Proxy) write(w http.ResponseWriter, r *http.Request, resp *response) {
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	if r.Method == http.MethodHead {
		if cl := resp.header.Get("Content-Length"); cl != "" {
			w.Header().Set("Content-Length", cl)
		}
	} else {
		w.Header().Set("Content-Length", fmt.Sprint(len(resp.body)))
	}
	w.WriteHeader(resp.status)
	w.Write(resp.body)
}

// writeManifest answers with a manifest the proxy serves itself.
func (p *Proxy) writeManifest(w http.ResponseWriter, m manifestAt, digest string) {
	w.Header().Set("Content-Type", m.contentType)
	if digest != "" {
		w.Header().Set("Docker-Content-Digest", digest)
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(m.body)))
	w.WriteHeader(http.StatusOK)
	w.Write(m.body)
}

// serveAs makes body the manifest of repo@sha256(body) as well, so that a
// client that resolved a made-up tag can fetch what it resolved to.
func (p *Proxy) serveAs(repo string, body []byte, contentType string) string {
	sum := sha256.Sum256(body)
	d := "sha256:" + hex.EncodeToString(sum[:])
	p.mu.Lock()
	p.served[repo+"@"+d] = manifestAt{body: bytes.Clone(body), contentType: contentType}
	p.mu.Unlock()
	return d
}
