package scan_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// TestVerdictsUnderFaults is the verdict contract: only the registry's own
// 404 on a manifest or blob proves absence. Every other failure (ping,
// token, a body cut short or not a manifest, a redirect target's 404) is a
// fault, and a fault that passes gives the true verdict.
func TestVerdictsUnderFaults(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	multi := tr.fixture("multiarch")
	amd := multi.Children[0]
	repo := "/v2/" + prefix + "single/"
	other := newBlobStore(t, tr)
	badChild := indexBody(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:nothex","size":1}`)

	tests := []struct {
		name    string
		ref     string
		hook    hook
		options []scan.Option
		verdict types.Verdict
		want    []findingKey
	}{
		{
			name:    "ping answers 404 (a proxy, an outage)",
			ref:     single.Ref,
			hook:    answerPath("/v2/", http.StatusNotFound),
			verdict: types.Unknown,
			want:    []findingKey{{types.PingFailed, "", ""}},
		},
		{
			name:    "token realm answers 404",
			ref:     single.Ref,
			hook:    chain(bearerChallenge(), answerPath("/token", http.StatusNotFound)),
			verdict: types.Unknown,
			want:    []findingKey{{types.TokenFailed, "", ""}},
		},
		{
			name:    "manifest body cut short once",
			ref:     single.Ref,
			hook:    cutShort(manifestPath("single", single.Digest.String()), 1),
			verdict: types.OK,
			want:    []findingKey{},
		},
		{
			name:    "manifest body cut short every time",
			ref:     single.Ref,
			hook:    cutShort(manifestPath("single", single.Digest.String()), -1),
			verdict: types.Unknown,
			want:    []findingKey{{types.BadResponse, single.Digest.String(), ""}},
		},
		{
			name:    "child body cut short every time",
			ref:     multi.Ref,
			hook:    cutShort(manifestPath("multiarch", amd.Digest.String()), -1),
			verdict: types.Unknown,
			want:    []findingKey{{types.BadResponse, amd.Digest.String(), "linux/amd64"}},
		},
		{
			name:    "tag answers a JSON page that is not a manifest",
			ref:     single.Ref,
			hook:    servePage(manifestPath("single", "v1"), `{"status":"ok","items":[]}`),
			verdict: types.Unknown,
			want:    []findingKey{{types.BadResponse, "", ""}},
		},
		{
			name:    "blobs redirected to another host",
			ref:     multi.Ref,
			hook:    other.redirect("/v2/"+prefix+"multiarch/blobs/", http.StatusTemporaryRedirect),
			verdict: types.OK,
			want:    []findingKey{},
		},
		{
			name:    "blobs redirected with 302",
			ref:     single.Ref,
			hook:    other.redirect(repo+"blobs/", http.StatusFound),
			verdict: types.OK,
			want:    []findingKey{},
		},
		{
			name:    "a redirect target's 404 is not the registry's",
			ref:     single.Ref,
			hook:    other.redirectTo(repo+"blobs/"+single.Blobs[0].String(), "/missing"),
			verdict: types.Unknown,
			want:    []findingKey{{types.RegistryFault, single.Blobs[0].String(), ""}},
		},
		{
			name:    "the registry's storage says the object does not exist",
			ref:     single.Ref,
			hook:    other.redirectTo(repo+"blobs/"+single.Blobs[0].String(), "/s3/missing"),
			verdict: types.Broken,
			want:    []findingKey{{types.BlobMissing, single.Blobs[0].String(), ""}},
		},
		{
			name:    "redirected in a loop",
			ref:     single.Ref,
			hook:    redirectLoop(repo + "blobs/" + single.Blobs[0].String()),
			verdict: types.Unknown,
			want:    []findingKey{{types.RegistryFault, single.Blobs[0].String(), ""}},
		},
		{
			name:    "503 past the retries, then well: asked again",
			ref:     single.Ref,
			hook:    failFirst(repo+"manifests/v1", 4, http.StatusServiceUnavailable, nil),
			options: []scan.Option{scan.WithReask(time.Millisecond)},
			verdict: types.OK,
			want:    []findingKey{},
		},
		{
			name:    "ping 404 past the retries, then well: asked again",
			ref:     single.Ref,
			hook:    answerFirst("/v2/", http.StatusNotFound, 1),
			options: []scan.Option{scan.WithReask(time.Millisecond)},
			verdict: types.OK,
			want:    []findingKey{},
		},
		{
			name:    "index child with an invalid digest",
			ref:     tr.ref("synthetic", "bad-child"),
			hook:    serveManifest(prefix+"synthetic", "bad-child", badChild),
			verdict: types.Unknown,
			want:    []findingKey{{types.BadResponse, digestOf(badChild), ""}},
		},
		{
			name:    "index with more children than regcheck walks",
			ref:     tr.ref("synthetic", "huge"),
			hook:    serveManifest(prefix+"synthetic", "huge", indexBody(manyChildren(1001)...)),
			verdict: types.Unknown,
			want:    []findingKey{{types.LimitExceeded, digestOf(indexBody(manyChildren(1001)...)), ""}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr.setHook(tc.hook)
			defer tr.setHook(nil)
			res, err := scan.Run(context.Background(), []types.Target{{Ref: tc.ref}}, opts(tc.options...)...)
			if err != nil {
				t.Fatal(err)
			}
			im := res.Images[0]
			if got := keys(im.Findings); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings %+v\nwant %+v\n(%+v)", got, tc.want, im.Findings)
			}
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", im.Verdict, tc.verdict)
			}
		})
	}
	if n := other.authorized.Load(); n != 0 {
		t.Errorf("the redirect target received credentials %d times", n)
	}
	if other.served.Load() == 0 {
		t.Error("no request was redirected: the redirect cases proved nothing")
	}
}

// TestRedirectKeepsCredentialsHome scans a registry that demands basic
// auth and redirects blobs to another host: the registry gets the
// credentials, the other host never does.
func TestRedirectKeepsCredentialsHome(t *testing.T) {
	tr := newRegistry(t)
	other := newBlobStore(t, tr)
	multi := tr.fixture("multiarch")
	var authorized atomic.Int64
	tr.setHook(chain(
		func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
			if user, pass, ok := r.BasicAuth(); ok && user == "u" && pass == "secret-pass" {
				authorized.Add(1)
				return false
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			registryError(w, http.StatusUnauthorized, "UNAUTHORIZED")
			return true
		},
		other.redirect("/v2/"+prefix+"multiarch/blobs/", http.StatusTemporaryRedirect),
	))
	host, _ := name.NewRegistry(tr.host)
	kc := staticKeychain{host.RegistryStr(): authn.FromConfig(authn.AuthConfig{Username: "u", Password: "secret-pass"})}
	im, err := scan.Check(context.Background(), multi.Ref, opts(scan.WithKeychain(kc))...)
	if err != nil {
		t.Fatal(err)
	}
	if im.Verdict != types.OK || len(im.Findings) != 0 {
		t.Fatalf("verdict %s, findings %+v; want ok", im.Verdict, im.Findings)
	}
	if authorized.Load() == 0 || other.served.Load() == 0 {
		t.Fatalf("registry saw %d authorized requests, the other host %d: the test proved nothing", authorized.Load(), other.served.Load())
	}
	if n := other.authorized.Load(); n != 0 {
		t.Errorf("the redirect target received credentials %d times", n)
	}
}

// TestTLS scans a registry served over TLS by a certificate no system root
// signs: without its CA a tls-error fault, with WithCAFiles the truth.
func TestTLS(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewUnstartedServer(reg)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes this test fails on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	ctx := context.Background()
	// Push over the test server's own client, which trusts its certificate.
	imgs, err := fixture.Push(ctx, host, prefix, fixture.WithTransport(srv.Client().Transport))
	if err != nil {
		t.Fatal(err)
	}
	ref := imgs[0].Ref
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		options []scan.Option
		verdict types.Verdict
		want    []findingKey
	}{
		{"no CA", nil, types.Unknown, []findingKey{{types.TLSError, "", ""}}},
		{"with its CA", []scan.Option{scan.WithCAFiles(ca)}, types.OK, []findingKey{}},
		{"named insecure", []scan.Option{scan.WithInsecureRegistries(host)}, types.OK, []findingKey{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := scan.Check(ctx, ref, opts(tc.options...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(im.Findings); im.Verdict != tc.verdict || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("verdict %s, findings %+v; want %s, %+v", im.Verdict, im.Findings, tc.verdict, tc.want)
			}
		})
	}
}

// TestReaskCounts checks that the second pass is counted, and that a
// lasting fault stays unknown after it.
func TestReaskCounts(t *testing.T) {
	tr := newRegistry(t)
	single, app := tr.fixture("single"), tr.fixture("app-a")
	tr.setHook(chain(
		failFirst(manifestPath("single", "v1"), 3, http.StatusServiceUnavailable, nil),
		failFirst(manifestPath("app-a", ""), -1, http.StatusBadGateway, nil),
	))
	res, err := scan.Run(context.Background(), []types.Target{{Ref: single.Ref}, {Ref: app.Ref}}, opts(scan.WithReask(time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Images[0].Verdict != types.OK || res.Images[1].Verdict != types.Unknown {
		t.Errorf("verdicts %s and %s, want ok and unknown", res.Images[0].Verdict, res.Images[1].Verdict)
	}
	if res.Reasked != 2 || res.Recovered != 1 {
		t.Errorf("asked again %d, recovered %d; want 2 and 1", res.Reasked, res.Recovered)
	}
}

// blobStore is another host that serves what the registry serves, for
// redirects, and counts the requests that carried credentials.
type blobStore struct {
	srv                *httptest.Server
	served, authorized atomic.Int64
}

func newBlobStore(t *testing.T, tr *testRegistry) *blobStore {
	b := &blobStore{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.served.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
			b.authorized.Add(1)
		}
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
			return
		case "/s3/missing":
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			if r.Method == http.MethodGet {
				io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
			}
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/store")
		resp, err := http.DefaultTransport.RoundTrip(withURL(r2, tr.srv.URL))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func withURL(r *http.Request, base string) *http.Request {
	out, _ := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.Path, nil)
	out.Header.Set("Accept", r.Header.Get("Accept"))
	out.Header.Set(bypassHook, "1")
	return out
}

// redirect sends every request under prefix to the same path on the store,
// with a signed-URL style query, as S3 and CDNs do.
func (b *blobStore) redirect(pathPrefix string, status int) hook {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if !strings.HasPrefix(r.URL.Path, pathPrefix) {
			return false
		}
		http.Redirect(w, r, b.srv.URL+"/store"+r.URL.Path+"?X-Amz-Signature=abc", status)
		return true
	}
}

// redirectTo sends the one path to target on the store.
func (b *blobStore) redirectTo(path, target string) hook {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != path {
			return false
		}
		http.Redirect(w, r, b.srv.URL+target, http.StatusTemporaryRedirect)
		return true
	}
}

// redirectLoop redirects path to itself.
func redirectLoop(path string) hook {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != path {
			return false
		}
		http.Redirect(w, r, path, http.StatusTemporaryRedirect)
		return true
	}
}

// answerPath answers status to every request for path.
func answerPath(path string, status int) hook { return answerFirst(path, status, -1) }

// answerFirst answers status to the first n requests for path (n < 0: all).
func answerFirst(path string, status, n int) hook {
	var mu sync.Mutex
	seen := 0
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != path {
			return false
		}
		mu.Lock()
		seen++
		fail := n < 0 || seen <= n
		mu.Unlock()
		if fail {
			w.WriteHeader(status)
		}
		return fail
	}
}

// bearerChallenge answers the ping with a Bearer challenge whose realm is
// /token on the same host.
func bearerChallenge() hook {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != "/v2/" {
			return false
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="test"`, r.Host))
		registryError(w, http.StatusUnauthorized, "UNAUTHORIZED")
		return true
	}
}

// cutShort serves the first n GETs of path (n < 0: all) with half the body
// and closes the connection, with no Content-Length to tell the client.
func cutShort(path string, n int) hook {
	var mu sync.Mutex
	seen := 0
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
		if r.Method != http.MethodGet || r.URL.Path != path {
			return false
		}
		mu.Lock()
		seen++
		cut := n < 0 || seen <= n
		mu.Unlock()
		if !cut {
			return false
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nConnection: close\r\n\r\n", rec.Header().Get("Content-Type"))
		buf.Write(body[:len(body)/2])
		buf.Flush()
		return true
	}
}

// servePage answers HEAD and GET of path with 200 and a JSON page.
func servePage(path, page string) hook {
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != path {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(page)))
		if r.Method == http.MethodGet {
			io.WriteString(w, page)
		}
		return true
	}
}

// serveManifest serves body as an OCI index at repo:tag and repo@digest.
func serveManifest(repo, tag, body string) hook {
	d := digestOf(body)
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		base := "/v2/" + repo + "/manifests/"
		if r.URL.Path != base+tag && r.URL.Path != base+d {
			return false
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Docker-Content-Digest", d)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodGet {
			io.WriteString(w, body)
		}
		return true
	}
}

func indexBody(children ...string) string {
	return `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + strings.Join(children, ",") + `]}`
}

func manyChildren(n int) []string {
	out := make([]string, n)
	for i := range out {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		out[i] = fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%x","size":100,"platform":{"os":"linux","architecture":"arch%d"}}`, sum, i)
	}
	return out
}

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// staticKeychain hands out fixed credentials by registry host.
type staticKeychain map[string]authn.Authenticator

func (k staticKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if a, ok := k[r.RegistryStr()]; ok {
		return a, nil
	}
	return authn.Anonymous, nil
}
