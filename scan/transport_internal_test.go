package scan

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/types"
)

type okTransport struct{ calls int }

func (o *okTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	o.calls++
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func TestPlainHTTPGuard(t *testing.T) {
	tests := []struct {
		url     string
		refused bool
	}{
		{"http://registry.example.com/v2/", true},
		{"http://10.0.0.5:5000/v2/", true},
		{"http://192.168.1.2/v2/", true},
		{"http://reg.internal:5000/v2/", false}, // named insecure
		{"http://reg.internal/v2/", true},       // named with a port only
		{"https://registry.example.com/v2/", false},
		{"https://10.0.0.5:5000/v2/", false},
		{"http://127.0.0.1:5000/v2/", false},
		{"http://127.1.2.3/v2/", false},
		{"http://localhost:5000/v2/", false},
		{"http://[::1]:5000/v2/", false},
		{"http://localhost.example.com/v2/", true},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			next := &okTransport{}
			g := plainHTTPGuard{next: next, insecure: map[string]bool{"reg.internal:5000": true}}
			req, err := http.NewRequest(http.MethodGet, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.RoundTrip(req)
			if refused := err != nil; refused != tc.refused || (next.calls == 0) != tc.refused {
				t.Errorf("err %v after %d requests sent; want refused %t", err, next.calls, tc.refused)
			}
		})
	}
}

// TestBuildTransportGuards checks that the guard is in the chain New builds,
// with the hosts given to WithInsecureRegistries.
func TestBuildTransportGuards(t *testing.T) {
	next := &okTransport{}
	o, err := makeOptions(WithTransport(next), WithInsecureRegistries("reg.internal:5000"))
	if err != nil {
		t.Fatal(err)
	}
	l := buildTransport(o)
	rt, cnt := l.rt, l.counter
	for _, u := range []string{"http://reg.internal:5000/v2/", "http://registry.example.com/v2/"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		rt.RoundTrip(req)
	}
	if next.calls != 1 {
		t.Errorf("%d requests went out, want 1 (the insecure host's)", next.calls)
	}
	if got := cnt.counts(); len(got) != 1 || got[0] != (types.RequestCount{Host: "reg.internal:5000", Kind: "ping", Status: "200", Count: 1}) {
		t.Errorf("counted %+v", got)
	}
}

func TestRequestKind(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"GET", "/v2/", "ping"},
		{"HEAD", "/v2/a/b/manifests/v1", "manifest-head"},
		{"GET", "/v2/a/b/manifests/sha256:00", "manifest-get"},
		{"HEAD", "/v2/a/blobs/sha256:00", "blob-head"},
		{"GET", "/v2/a/blobs/sha256:00", "blob-get"},
		{"GET", "/v2/a/tags/list", "tags-list"},
		{"GET", "/token", "token"},
		{"GET", "/v2/_catalog", "other"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://r"+tc.path, nil)
			if got := requestKind(req); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}

// plainServer answers plain HTTP and fails every https request, as a
// plain-HTTP registry does.
type plainServer struct{ https, http int }

func (p *plainServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "https" {
		p.https++
		return nil, errors.New("http: server gave HTTP response to HTTPS client")
	}
	p.http++
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// TestPingCacheRemembersPlainHTTP: once a host's https ping failed and its
// http ping answered, https pings of it fail from memory, past the faults
// forgotten between passes; an https ping of a host never answered over
// http still goes out.
func TestPingCacheRemembersPlainHTTP(t *testing.T) {
	srv := &plainServer{}
	p := &pingCache{next: srv}
	ping := func(u string) error {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		_, err := p.RoundTrip(req)
		return err
	}
	if ping("https://reg.internal:5000/v2/") == nil || ping("http://reg.internal:5000/v2/") != nil {
		t.Fatal("the first pings did not fail over https and answer over http")
	}
	for range 3 {
		p.m.forget(func(err error) bool { return err != nil }) // a new pass
		if err := ping("https://reg.internal:5000/v2/"); err == nil || !strings.Contains(err.Error(), "server gave HTTP response") {
			t.Fatalf("https ping after the host answered over http: %v", err)
		}
	}
	if srv.https != 1 || srv.http != 1 {
		t.Errorf("%d https and %d http pings sent, want 1 and 1", srv.https, srv.http)
	}
	if ping("https://other:5000/v2/"); srv.https != 2 {
		t.Errorf("an https ping of a host never answered over http was not sent")
	}
}
