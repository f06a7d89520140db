package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Fault is one way a registry, or what stands in front of it, goes wrong.
type Fault string

// Faults. Those that change a body act on GET (and, for the index ones,
// on HEAD too) of a manifest the registry serves; elsewhere they pass the
// request on and count nothing.
const (
	// NotFound answers 404, as a proxy does on a path it does not route:
	// on the ping, or on the token realm.
	NotFound Fault = "404"
	// TooManyRequests answers 429 without Retry-After.
	TooManyRequests Fault = "429"
	// TooManyRequestsRetryAfter answers 429 with Retry-After: 1.
	TooManyRequestsRetryAfter Fault = "429-retry-after"
	// InternalError, BadGateway and Unavailable answer 500, 502 and 503.
	InternalError Fault = "500"
	BadGateway    Fault = "502"
	Unavailable   Fault = "503"
	// ServerError answers 500, 502 or 503 in turn: the flaky load balancer.
	ServerError Fault = "5xx"
	// Reset closes the connection with a TCP reset, answering nothing.
	Reset Fault = "reset"
	// Stall answers nothing until the client gives up, the proxy closes,
	// or Config.StallFor passes; then it closes the connection.
	Stall Fault = "stall"
	// ShortBody sends the registry's status and headers without
	// Content-Length, half the body, and closes the connection: a body
	// whose end the client cannot tell from the real end.
	ShortBody Fault = "short-body"
	// NotManifest answers a manifest request with 200 and a JSON page that
	// is not a manifest (a portal's, a misrouted API's), with no digest.
	NotManifest Fault = "not-manifest"
	// Oversize pads the manifest with whitespace past 4 MiB (5 MiB).
	Oversize Fault = "oversize"
	// WrongDigest adds an annotation to the manifest: a valid manifest of
	// the same type whose bytes no longer hash to the digest asked for.
	WrongDigest Fault = "wrong-digest"
	// IndexEmptyChild and IndexInvalidChild serve an index whose first
	// child has an empty digest, or one that is not a digest. The altered
	// index is served under its own digest, by tag and by that digest, so
	// that it is a consistent, if wrong, registry state.
	IndexEmptyChild   Fault = "index-empty-child"
	IndexInvalidChild Fault = "index-invalid-child"
	// Redirect301, Redirect302, Redirect303, Redirect307 and Redirect308
	// redirect to the same path on the other host (127.0.0.2), which
	// serves what the registry serves and records whether it received
	// Authorization or Cookie headers.
	Redirect301 Fault = "redirect-301"
	Redirect302 Fault = "redirect-302"
	Redirect303 Fault = "redirect-303"
	Redirect307 Fault = "redirect-307"
	Redirect308 Fault = "redirect-308"
	// RedirectNotFound redirects (307) to the other host, which answers
	// 404 with an HTML page: not the registry saying the object is gone.
	RedirectNotFound Fault = "redirect-404"
	// RedirectLoop redirects to the very same URL on the proxy, forever.
	RedirectLoop Fault = "redirect-loop"
)

// injector answers r with its fault, and reports whether it injected it;
// when the fault does not apply it answers as the registry would.
type injector func(p *Proxy, w http.ResponseWriter, r *http.Request) bool

var injectors = map[Fault]injector{
	NotFound:                  status(http.StatusNotFound, "text/plain", "404 page not found\n", ""),
	TooManyRequests:           status(http.StatusTooManyRequests, "application/json", tooMany, ""),
	TooManyRequestsRetryAfter: status(http.StatusTooManyRequests, "application/json", tooMany, "1"),
	InternalError:             internalError,
	BadGateway:                badGateway,
	Unavailable:               unavailable,
	ServerError:               serverError,
	Reset:                     reset,
	Stall:                     stall,
	ShortBody:                 shortBody,
	NotManifest:               notManifest,
	Oversize:                  rewrite(oversize),
	WrongDigest:               rewrite(annotate),
	IndexEmptyChild:           indexChild(""),
	IndexInvalidChild:         indexChild("sha256:not-a-digest"),
	Redirect301:               redirect(http.StatusMovedPermanently),
	Redirect302:               redirect(http.StatusFound),
	Redirect303:               redirect(http.StatusSeeOther),
	Redirect307:               redirect(http.StatusTemporaryRedirect),
	Redirect308:               redirect(http.StatusPermanentRedirect),
	RedirectNotFound:          redirectNotFound,
	RedirectLoop:              redirectLoop,
}

const tooMany = `{"errors":[{"code":"TOOMANYREQUESTS","message":"rate limit exceeded"}]}`

// status answers code with body; retryAfter, if set, is the Retry-After header.
func status(code int, contentType, body, retryAfter string) injector {
	return func(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		io.WriteString(w, body)
		return true
	}
}

var (
	internalError = status(http.StatusInternalServerError, "text/plain", "internal server error\n", "")
	badGateway    = status(http.StatusBadGateway, "text/html", "<html><body>502 Bad Gateway</body></html>\n", "")
	unavailable   = status(http.StatusServiceUnavailable, "text/html", "<html><body>503 Service Unavailable</body></html>\n", "")
)

// serverError answers 500, 502 or 503 in turn.
func serverError(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
	p.mu.Lock()
	n := p.injected[ServerError]
	p.mu.Unlock()
	return []injector{internalError, badGateway, unavailable}[n%3](p, w, r)
}

// hijack takes r's connection from the HTTP server; nil if it cannot.
func hijack(w http.ResponseWriter) net.Conn {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return nil
	}
	return conn
}

func reset(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
	conn := hijack(w)
	if conn == nil {
		return false
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // close sends RST, not FIN
	}
	conn.Close()
	return true
}

func stall(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
	t := time.NewTimer(p.cfg.StallFor)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-p.done:
	case <-t.C:
	}
	if conn := hijack(w); conn != nil {
		conn.Close()
	}
	return true
}

func shortBody(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		p.serve(w, r)
		return false
	}
	resp, err := p.fetch(r, http.MethodGet)
	if err != nil || resp.status != http.StatusOK || len(resp.body) < 2 {
		p.answer(w, r, resp, err)
		return false
	}
	conn := hijack(w)
	if conn == nil {
		return false
	}
	defer conn.Close()
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\nConnection: close\r\n")
	for k, vs := range resp.header {
		if k == "Content-Length" || k == "Connection" || k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	b.Write(resp.body[:len(resp.body)/2])
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	conn.Write(b.Bytes())
	return true
}

// notManifestPage is what NotManifest serves.
const notManifestPage = `{"page":"welcome","message":"This is the Example Corp artifact portal. Sign in to browse repositories.","links":[{"rel":"login","href":"/login"}]}`

func notManifest(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
	kind, repo, _ := parse(r.URL.Path)
	if kind != ManifestByTag && kind != ManifestByDigest {
		p.serve(w, r)
		return false
	}
	// A client that hashes the page and asks for it by digest gets it again.
	p.serveAs(repo, []byte(notManifestPage), "application/json")
	p.writeManifest(w, manifestAt{body: []byte(notManifestPage), contentType: "application/json"}, "")
	return true
}

// rewrite serves the registry's manifest changed by f, under the
// registry's headers (Docker-Content-Digest included).
func rewrite(f func([]byte) ([]byte, bool)) injector {
	return func(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet {
			p.serve(w, r)
			return false
		}
		resp, err := p.fetch(r, http.MethodGet)
		if err != nil || resp.status != http.StatusOK {
			p.answer(w, r, resp, err)
			return false
		}
		body, ok := f(resp.body)
		if ok {
			resp.body = body
		} else {
			pass(w)
		}
		p.write(w, r, resp)
		return ok
	}
}

// oversize pads a manifest with whitespace to 5 MiB: still JSON.
func oversize(body []byte) ([]byte, bool) {
	const size = 5 << 20
	return append(bytes.Clone(body), bytes.Repeat([]byte(" "), size-len(body))...), len(body) < size
}

// annotate adds an annotation: still a valid manifest of the same type.
func annotate(body []byte) ([]byte, bool) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	ann, _ := m["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann["org.example.faultproxy"] = "altered"
	m["annotations"] = ann
	out, err := json.Marshal(m)
	return out, err == nil
}

// indexChild serves an index whose first child's digest is digest, under
// the altered index's own digest, by tag and by that digest.
func indexChild(digest string) injector {
	return func(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
		kind, repo, _ := parse(r.URL.Path)
		if kind != ManifestByTag && kind != ManifestByDigest {
			p.serve(w, r)
			return false
		}
		resp, err := p.fetch(r, http.MethodGet)
		if err != nil || resp.status != http.StatusOK {
			p.answer(w, r, resp, err)
			return false
		}
		var m map[string]any
		json.Unmarshal(resp.body, &m)
		children, _ := m["manifests"].([]any)
		first := firstOf(children)
		if first == nil { // not an index
			p.answer(w, r, resp, nil)
			return false
		}
		first["digest"] = digest
		body, err := json.Marshal(m)
		if err != nil {
			p.answer(w, r, resp, nil)
			return false
		}
		ct := resp.header.Get("Content-Type")
		d := p.serveAs(repo, body, ct)
		p.writeManifest(w, manifestAt{body: body, contentType: ct}, d)
		return true
	}
}

func firstOf(children []any) map[string]any {
	if len(children) == 0 {
		return nil
	}
	m, _ := children[0].(map[string]any)
	return m
}

// redirect sends the client to the same path on the other host.
func redirect(code int) injector {
	return func(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
		p.redirectTo(w, code, "http://"+p.OtherHost()+r.URL.RequestURI())
		return true
	}
}

func redirectNotFound(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
	u := *r.URL
	u.Scheme, u.Host = "http", p.OtherHost()
	q := u.Query()
	q.Set(notFoundFlag, "1")
	u.RawQuery = q.Encode()
	p.redirectTo(w, http.StatusTemporaryRedirect, u.String())
	return true
}

// redirectTo answers code with Location to; with Config.Auth it sets a
// cookie as well, which must not follow either.
func (p *Proxy) redirectTo(w http.ResponseWriter, code int, to string) {
	if p.cfg.Auth {
		http.SetCookie(w, &http.Cookie{Name: "faultproxy-session", Value: "secret", Path: "/"})
	}
	w.Header().Set("Location", to)
	w.WriteHeader(code)
}

func redirectLoop(p *Proxy, w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("Location", "http://"+r.Host+r.URL.RequestURI())
	w.WriteHeader(http.StatusTemporaryRedirect)
	return true
}

// answer writes the registry's answer, or a 502 when there was none.
func (p *Proxy) answer(w http.ResponseWriter, r *http.Request, resp *response, err error) {
	pass(w)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if r.Method == http.MethodHead {
		resp.header.Set("Content-Length", fmt.Sprint(len(resp.body)))
	}
	p.write(w, r, resp)
}
