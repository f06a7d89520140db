package faultproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// fixture is a registry with one image (repo/img:v1) and one index
// (repo/idx:v1) on it.
type fixture struct {
	upstream    string
	img, idx    v1.Hash
	blob        v1.Hash
	indexChild0 v1.Hash
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img})
	push := func(ref string, f func(name.Reference) error) {
		r, err := name.ParseReference(host+"/"+ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := f(r); err != nil {
			t.Fatal(err)
		}
	}
	push("repo/img:v1", func(r name.Reference) error { return remote.Write(r, img) })
	push("repo/idx:v1", func(r name.Reference) error { return remote.WriteIndex(r, idx) })
	f := fixture{upstream: host}
	f.img, _ = img.Digest()
	f.idx, _ = idx.Digest()
	f.blob, _ = img.ConfigName()
	f.indexChild0 = f.img
	return f
}

func start(t *testing.T, cfg Config) *Proxy {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// get sends one request through client (a default one if nil) and returns
// the status, headers and body.
func get(t *testing.T, c *http.Client, method, url string, hdr ...string) (int, http.Header, []byte, error) {
	t.Helper()
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body, err
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		path      string
		kind      Kind
		repo, ref string
	}{
		{"/v2/", Ping, "", ""},
		{"/token", Token, "", ""},
		{"/v2/gc/app/manifests/v1", ManifestByTag, "gc/app", "v1"},
		{"/v2/gc/app/manifests/sha256:ab", ManifestByDigest, "gc/app", "sha256:ab"},
		{"/v2/gc/app/blobs/sha256:ab", Blob, "gc/app", "sha256:ab"},
		{"/v2/gc/app/blobs/uploads/123", Other, "", ""},
		{"/v2/gc/app/tags/list", Other, "", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			k, repo, ref := parse(tc.path)
			if k != tc.kind || repo != tc.repo || ref != tc.ref {
				t.Errorf("parse(%q) = %s %q %q, want %s %q %q", tc.path, k, repo, ref, tc.kind, tc.repo, tc.ref)
			}
		})
	}
}

func TestStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no upstream", Config{}},
		{"unknown fault", Config{Upstream: "127.0.0.1:1", Rules: []Rule{{Fault: "nope"}}}},
		{"first and percent", Config{Upstream: "127.0.0.1:1", Rules: []Rule{{Fault: Reset, First: 1, Percent: 10}}}},
		{"percent over 100", Config{Upstream: "127.0.0.1:1", Rules: []Rule{{Fault: Reset, Percent: 101}}}},
		{"negative limit", Config{Upstream: "127.0.0.1:1", Rules: []Rule{{Fault: Reset, Limit: -1}}}},
		{"other host not loopback", Config{Upstream: "127.0.0.1:1", OtherIP: "192.0.2.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := Start(tc.cfg); err == nil {
				p.Close()
				t.Fatal("Start accepted a bad config")
			}
		})
	}
}

func TestPassThrough(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream})
	base := "http://" + p.Host() + "/v2/repo/img/"
	if code, _, _, err := get(t, nil, "GET", "http://"+p.Host()+"/v2/"); err != nil || code != 200 {
		t.Fatalf("ping: %d %v", code, err)
	}
	code, h, _, err := get(t, nil, "HEAD", base+"manifests/v1")
	if err != nil || code != 200 || h.Get("Docker-Content-Digest") != f.img.String() || h.Get("Content-Length") == "0" {
		t.Fatalf("HEAD tag: %d %v %v", code, h, err)
	}
	code, _, body, err := get(t, nil, "GET", base+"manifests/"+f.img.String())
	if err != nil || code != 200 || sha(body) != f.img.String() {
		t.Fatalf("GET digest: %d %v %s", code, err, sha(body))
	}
	if code, _, _, _ := get(t, nil, "HEAD", base+"blobs/"+f.blob.String()); code != 200 {
		t.Fatalf("HEAD blob: %d", code)
	}
	if n := p.Total(); n != 0 {
		t.Errorf("injected %d faults with no rules", n)
	}
}

func TestStatusFaults(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		fault      Fault
		kind       Kind
		path       string
		want       int
		retryAfter string
	}{
		{NotFound, Ping, "/v2/", 404, ""},
		{TooManyRequests, Blob, "/v2/repo/img/blobs/" + f.blob.String(), 429, ""},
		{TooManyRequestsRetryAfter, Blob, "/v2/repo/img/blobs/" + f.blob.String(), 429, "1"},
		{InternalError, ManifestByTag, "/v2/repo/img/manifests/v1", 500, ""},
		{BadGateway, ManifestByDigest, "/v2/repo/img/manifests/" + f.img.String(), 502, ""},
		{Unavailable, Blob, "/v2/repo/img/blobs/" + f.blob.String(), 503, ""},
		{Redirect301, Blob, "/v2/repo/img/blobs/" + f.blob.String(), 301, ""},
		{Redirect308, ManifestByDigest, "/v2/repo/img/manifests/" + f.img.String(), 308, ""},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: tc.fault, Kinds: []Kind{tc.kind}}}})
			for range 2 { // persistent
				code, h, _, err := get(t, nil, "GET", "http://"+p.Host()+tc.path)
				if err != nil || code != tc.want || h.Get("Retry-After") != tc.retryAfter {
					t.Fatalf("%d Retry-After %q %v, want %d %q", code, h.Get("Retry-After"), err, tc.want, tc.retryAfter)
				}
			}
			// Another kind of request passes.
			other := "/v2/repo/img/manifests/v1"
			if tc.kind == ManifestByTag {
				other = "/v2/repo/img/blobs/" + f.blob.String()
			}
			if code, _, _, _ := get(t, nil, "GET", "http://"+p.Host()+other); code != 200 {
				t.Errorf("an unmatched request got %d", code)
			}
			if got := p.Injected()[tc.fault]; got != 2 {
				t.Errorf("counted %d, want 2", got)
			}
		})
	}
}

func TestServerErrorTakesTurns(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: ServerError}}})
	var got []int
	for range 3 {
		code, _, _, _ := get(t, nil, "GET", "http://"+p.Host()+"/v2/")
		got = append(got, code)
	}
	if !slices.Equal(got, []int{500, 502, 503}) {
		t.Errorf("got %v", got)
	}
}

func TestFirstPerRequest(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: Unavailable, First: 2}}})
	for _, path := range []string{"/v2/repo/img/manifests/v1", "/v2/repo/img/blobs/" + f.blob.String()} {
		var got []int
		for range 3 {
			code, _, _, _ := get(t, nil, "GET", "http://"+p.Host()+path)
			got = append(got, code)
		}
		if !slices.Equal(got, []int{503, 503, 200}) {
			t.Errorf("%s: %v, want 503 503 200", path, got)
		}
	}
	if got := p.InjectedByRepo(); got["repo/img"] != 4 {
		t.Errorf("by repo %v", got)
	}
}

// TestMethods: a rule with Methods faults only those: the blob's GET,
// not the HEAD that checked it was there.
func TestMethods(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: Unavailable, Kinds: []Kind{Blob}, Methods: []string{"GET"}}}})
	blob := "http://" + p.Host() + "/v2/repo/img/blobs/" + f.blob.String()
	var got []int
	for _, method := range []string{"HEAD", "GET", "HEAD"} {
		code, _, _, _ := get(t, nil, method, blob)
		got = append(got, code)
	}
	if !slices.Equal(got, []int{200, 503, 200}) || p.Total() != 1 {
		t.Errorf("%v (%d injected), want 200 503 200 (1)", got, p.Total())
	}
}

func TestLimit(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: Unavailable, Kinds: []Kind{ManifestByTag}, Limit: 2}}})
	var got []int
	for _, repo := range []string{"img", "idx", "img"} {
		code, _, _, _ := get(t, nil, "HEAD", "http://"+p.Host()+"/v2/repo/"+repo+"/manifests/v1")
		got = append(got, code)
	}
	if !slices.Equal(got, []int{503, 503, 200}) {
		t.Errorf("%v, want 503 503 200", got)
	}
}

func TestPercentIsSeeded(t *testing.T) {
	f := newFixture(t)
	run := func(seed uint64) []int {
		p := start(t, Config{Upstream: f.upstream, Seed: seed, Rules: []Rule{{Fault: Unavailable, Percent: 30}}})
		var got []int
		for range 60 {
			code, _, _, _ := get(t, nil, "GET", "http://"+p.Host()+"/v2/")
			got = append(got, code)
		}
		return got
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Error("one seed, two sequences")
	}
	if slices.Equal(a, c) {
		t.Error("two seeds, one sequence")
	}
	if n := count(a, 503); n < 8 || n > 30 {
		t.Errorf("%d of 60 failed, want about 18", n)
	}
}

func count(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func TestShortBody(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: ShortBody, Kinds: []Kind{ManifestByDigest}, First: 1}}})
	u := "http://" + p.Host() + "/v2/repo/img/manifests/" + f.img.String()
	code, h, short, err := get(t, nil, "GET", u)
	if err != nil || code != 200 || h.Get("Content-Length") != "" {
		t.Fatalf("%d %v %v", code, h, err)
	}
	_, _, full, _ := get(t, nil, "GET", u)
	if sha(full) != f.img.String() || len(short) != len(full)/2 || string(short) != string(full[:len(short)]) {
		t.Errorf("short %d bytes, full %d bytes", len(short), len(full))
	}
	// A HEAD has no body to cut: it passes, uncounted.
	if code, _, _, _ := get(t, nil, "HEAD", u); code != 200 || p.Total() != 1 {
		t.Errorf("HEAD %d, injected %d", code, p.Total())
	}
}

func TestNotManifest(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: NotManifest, Kinds: []Kind{ManifestByTag}}}})
	base := "http://" + p.Host() + "/v2/repo/img/manifests/"
	code, h, _, _ := get(t, nil, "HEAD", base+"v1")
	if code != 200 || h.Get("Docker-Content-Digest") != "" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("HEAD: %d %v", code, h)
	}
	_, _, page, _ := get(t, nil, "GET", base+"v1")
	var m map[string]any
	if json.Unmarshal(page, &m) != nil || m["mediaType"] != nil || m["schemaVersion"] != nil {
		t.Fatalf("page %s", page)
	}
	if code, _, again, _ := get(t, nil, "GET", base+sha(page)); code != 200 || string(again) != string(page) {
		t.Errorf("by digest: %d", code)
	}
}

func TestRewrites(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		fault Fault
		check func([]byte) bool
	}{
		{Oversize, func(b []byte) bool { return len(b) > 4<<20 && json.Valid(b) }},
		{WrongDigest, func(b []byte) bool {
			var m struct {
				MediaType   string            `json:"mediaType"`
				Annotations map[string]string `json:"annotations"`
			}
			return json.Unmarshal(b, &m) == nil && m.MediaType != "" && m.Annotations["org.example.faultproxy"] == "altered"
		}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: tc.fault, Kinds: []Kind{ManifestByDigest}}}})
			code, h, body, err := get(t, nil, "GET", "http://"+p.Host()+"/v2/repo/img/manifests/"+f.img.String())
			if err != nil || code != 200 || h.Get("Docker-Content-Digest") != f.img.String() {
				t.Fatalf("%d %v %v", code, h, err)
			}
			if sha(body) == f.img.String() || !tc.check(body) {
				t.Errorf("body %.200s", body)
			}
		})
	}
}

func TestIndexChild(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		fault Fault
		want  string
	}{{IndexEmptyChild, ""}, {IndexInvalidChild, "sha256:not-a-digest"}} {
		t.Run(string(tc.fault), func(t *testing.T) {
			p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: tc.fault, Kinds: []Kind{ManifestByTag}}}})
			base := "http://" + p.Host() + "/v2/repo/"
			code, h, _, _ := get(t, nil, "HEAD", base+"idx/manifests/v1")
			d := h.Get("Docker-Content-Digest")
			if code != 200 || d == "" || d == f.idx.String() {
				t.Fatalf("HEAD: %d %s", code, d)
			}
			code, _, body, _ := get(t, nil, "GET", base+"idx/manifests/"+d)
			var idx struct {
				Manifests []struct{ Digest string } `json:"manifests"`
			}
			if code != 200 || sha(body) != d || json.Unmarshal(body, &idx) != nil || idx.Manifests[0].Digest != tc.want {
				t.Errorf("by digest: %d %s", code, body)
			}
			// An image's tag is not an index: it passes, uncounted.
			if code, h, _, _ := get(t, nil, "HEAD", base+"img/manifests/v1"); code != 200 || h.Get("Docker-Content-Digest") != f.img.String() {
				t.Errorf("image tag: %d %v", code, h)
			}
			if got := p.Injected()[tc.fault]; got != 1 {
				t.Errorf("counted %d, want 1", got)
			}
		})
	}
}

func TestRedirectToOtherHost(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: Redirect307, Kinds: []Kind{Blob}}}})
	u := "http://" + p.Host() + "/v2/repo/img/blobs/" + f.blob.String()
	code, h, _, _ := get(t, nil, "HEAD", u)
	if loc := h.Get("Location"); code != 307 || !strings.HasPrefix(loc, "http://127.0.0.2:") {
		t.Fatalf("%d Location %q", code, loc)
	}
	// Go's client drops both headers on the way to another host.
	follow := &http.Client{Timeout: 5 * time.Second}
	if code, _, _, err := get(t, follow, "GET", u, "Authorization", "Bearer x", "Cookie", "a=b"); code != 200 || err != nil {
		t.Fatalf("followed: %d %v", code, err)
	}
	if v := p.Visits(); v != (Visits{Requests: 1}) {
		t.Errorf("visits after a followed redirect %+v", v)
	}
	// A redirect to a host that answers 404.
	p404 := start(t, Config{Upstream: f.upstream, OtherIP: "127.0.0.1", Rules: []Rule{{Fault: RedirectNotFound, Kinds: []Kind{Blob}}}})
	if !strings.HasPrefix(p404.OtherHost(), "127.0.0.1:") {
		t.Errorf("OtherHost %s, want 127.0.0.1:port", p404.OtherHost())
	}
	if code, _, _, _ := get(t, follow, "GET", "http://"+p404.Host()+"/v2/repo/img/blobs/"+f.blob.String()); code != 404 || p404.Visits().Requests != 1 {
		t.Errorf("redirect-404: %d, visits %+v", code, p404.Visits())
	}
	// The other host records them when they do come.
	get(t, nil, "HEAD", "http://"+p.OtherHost()+"/v2/repo/img/blobs/"+f.blob.String(), "Authorization", "Bearer x", "Cookie", "a=b")
	if v := p.Visits(); v != (Visits{Requests: 2, Authorization: 1, Cookie: 1}) {
		t.Errorf("visits %+v", v)
	}
}

func TestAuth(t *testing.T) {
	f := newFixture(t)
	p := start(t, Config{Upstream: f.upstream, Auth: true})
	base := "http://" + p.Host()
	code, h, _, _ := get(t, nil, "GET", base+"/v2/")
	if code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `realm="http://`+p.Host()+`/token"`) {
		t.Fatalf("ping: %d %v", code, h)
	}
	_, h, body, _ := get(t, nil, "GET", base+"/token?scope=repository:repo/img:pull")
	if !strings.Contains(string(body), token) || h.Get("Set-Cookie") == "" {
		t.Fatalf("token: %s %v", body, h)
	}
	if code, _, _, _ := get(t, nil, "HEAD", base+"/v2/repo/img/manifests/v1"); code != 401 {
		t.Errorf("without the token: %d", code)
	}
	if code, _, _, _ := get(t, nil, "HEAD", base+"/v2/repo/img/manifests/v1", "Authorization", "Bearer "+token); code != 200 {
		t.Errorf("with the token: %d", code)
	}

	bad := start(t, Config{Upstream: f.upstream, Auth: true, Rules: []Rule{{Fault: NotFound, Kinds: []Kind{Token}}}})
	if code, _, _, _ := get(t, nil, "GET", "http://"+bad.Host()+"/token"); code != 404 {
		t.Errorf("token realm: %d, want 404", code)
	}
}

func TestConnectionFaults(t *testing.T) {
	f := newFixture(t)
	t.Run("reset", func(t *testing.T) {
		p := start(t, Config{Upstream: f.upstream, Rules: []Rule{{Fault: Reset}}})
		if _, _, _, err := get(t, nil, "GET", "http://"+p.Host()+"/v2/"); err == nil {
			t.Error("no error")
		}
	})
	t.Run("stall", func(t *testing.T) {
		p := start(t, Config{Upstream: f.upstream, StallFor: 2 * time.Second, Rules: []Rule{{Fault: Stall}}})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.Host()+"/v2/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatal("a stalled request answered")
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if p.Total() != 1 {
			t.Errorf("injected %d", p.Total())
		}
	})
	t.Run("stall ends on its own", func(t *testing.T) {
		p := start(t, Config{Upstream: f.upstream, StallFor: 100 * time.Millisecond, Rules: []Rule{{Fault: Stall}}})
		if _, _, _, err := get(t, nil, "GET", "http://"+p.Host()+"/v2/"); err == nil {
			t.Error("a stalled request answered")
		}
	})
}
