package scan_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// bearerAuth is a token service on the test registry's own host, as
// distribution's token auth is deployed: the ping and every repository
// request without that repository's token get a Bearer challenge naming
// its scope; /token issues one token per scope and counts them.
type bearerAuth struct {
	mu     sync.Mutex
	tokens map[string]int // by scope
}

func newBearerAuth() *bearerAuth { return &bearerAuth{tokens: map[string]int{}} }

func (b *bearerAuth) hook(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
	realm := fmt.Sprintf(`Bearer realm="http://%s/token",service="test"`, r.Host)
	switch {
	case r.URL.Path == "/token":
		scope := r.URL.Query().Get("scope")
		b.mu.Lock()
		b.tokens[scope]++
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"token": "t:" + scope, "expires_in": 300})
		return true
	case r.URL.Path == "/v2/" || r.URL.Path == "/v2":
		w.Header().Set("WWW-Authenticate", realm)
		registryError(w, http.StatusUnauthorized, "UNAUTHORIZED")
		return true
	case strings.HasPrefix(r.URL.Path, "/v2/"):
		rest := strings.TrimPrefix(r.URL.Path, "/v2/")
		i := strings.LastIndex(rest, "/manifests/")
		if j := strings.LastIndex(rest, "/blobs/"); j > i {
			i = j
		}
		if i < 0 {
			return false
		}
		scope := "repository:" + rest[:i] + ":pull"
		if r.Header.Get("Authorization") == "Bearer t:"+scope {
			return false
		}
		w.Header().Set("WWW-Authenticate", realm+`,scope="`+scope+`"`)
		registryError(w, http.StatusUnauthorized, "UNAUTHORIZED")
		return true
	}
	return false
}

// failFirstQuery answers status to the first n requests for path whose
// query has key=value.
func failFirstQuery(path, key, value string, n, status int) hook {
	var mu sync.Mutex
	seen := 0
	return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Path != path || r.URL.Query().Get(key) != value {
			return false
		}
		mu.Lock()
		seen++
		fail := seen <= n
		mu.Unlock()
		if fail {
			registryError(w, status, "INJECTED")
		}
		return fail
	}
}

func (b *bearerAuth) issued() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for k, v := range b.tokens {
		out[k] = v
	}
	return out
}

// TestNoWastedConnection scans every fixture, as the demo does, on a
// loopback plain-HTTP registry with token auth: twice with one Scanner,
// the first run asking one image again after a transient fault. The only
// request that fails is the very first https version check (a loopback
// host may speak TLS, so it is asked first); after it the host is known to
// speak plain HTTP and no https attempt goes out. Each repository gets one
// token, however many passes and runs.
func TestNoWastedConnection(t *testing.T) {
	tr := newRegistry(t)
	auth := newBearerAuth()
	single := tr.fixture("single")
	// The first pass cannot get a token for single: its client is made
	// again, with a new version check, in the second.
	tr.setHook(chain(failFirstQuery("/token", "scope", "repository:"+prefix+single.Name+":pull", 3, http.StatusServiceUnavailable), auth.hook))
	var targets []types.Target
	scopes := map[string]int{}
	for _, im := range tr.images {
		targets = append(targets, types.Target{Ref: im.Ref})
		scopes["repository:"+prefix+im.Name+":pull"] = 1
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Ref < targets[j].Ref })
	s, err := scan.New(opts(scan.WithReask(time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		given := targets
		if run == 1 {
			given = targets[1:] // the second run makes one repository's client anew
		}
		res, err := s.Run(context.Background(), given)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range res.Images {
			if im.Verdict != types.OK {
				t.Errorf("run %d: %s is %s: %+v", run, im.Reference, im.Verdict, im.Findings)
			}
		}
		if run == 1 && res.Reasked != 1 {
			t.Errorf("run 1 asked %d images again, want 1: the second pass was not exercised", res.Reasked)
		}
		t.Logf("run %d: ping errors %d, ping 401 %d, tokens %d", run, requests(res.Requests, "ping", "error"), requests(res.Requests, "ping", "401"), requests(res.Requests, "token", ""))
	}
	rs := s.Requests()
	if n := requests(rs, "ping", "error"); n != 1 {
		t.Errorf("%d version checks failed, want 1 (the first https attempt): %+v", n, rs)
	}
	if got := auth.issued(); fmt.Sprint(got) != fmt.Sprint(scopes) {
		t.Errorf("tokens issued by scope %v, want one per repository %v", got, scopes)
	}
	if n := requests(rs, "token", "200"); n != len(scopes) {
		t.Errorf("%d tokens counted, want %d", n, len(scopes))
	}
}
