package scan_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// pullCounter makes the test registry count pulls as Docker Hub does: each
// manifest GET is one, a HEAD is free. With a limit it answers every
// manifest request with RateLimit-Limit and RateLimit-Remaining, and a GET
// past the limit with 429.
type pullCounter struct {
	limit int // 0: no headers, no limit

	mu     sync.Mutex
	spent  int             // pulls counted in the window, others' included
	gets   int             // manifest GETs this scan sent
	pulled map[string]bool // manifest paths GET
}

func (p *pullCounter) hook(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
	if !strings.Contains(r.URL.Path, "/manifests/") {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	over := false
	if r.Method == http.MethodGet {
		p.gets++
		p.pulled[r.URL.Path] = true
		over = p.limit > 0 && p.spent >= p.limit
		if !over {
			p.spent++
		}
	}
	if p.limit > 0 {
		w.Header().Set("RateLimit-Limit", fmt.Sprintf("%d;w=21600", p.limit))
		w.Header().Set("RateLimit-Remaining", fmt.Sprintf("%d;w=21600", max(p.limit-p.spent, 0)))
		w.Header().Set("Docker-RateLimit-Source", "203.0.113.7")
	}
	if over {
		registryError(w, http.StatusTooManyRequests, "TOOMANYREQUESTS")
		return true
	}
	return false
}

// TestPullBudget scans every fixture against a registry that counts pulls:
// the manifest GETs sent never exceed what its RateLimit headers leave
// above the reserve, nor the cap; tags are still HEADed; an image is ok
// when every manifest it needs was GET, and else unknown with
// rate-limit-budget on a manifest that was not.
func TestPullBudget(t *testing.T) {
	tests := []struct {
		name         string
		limit, spent int // the registry's limit (0: it says none) and the pulls others spent
		maxPulls     int
		concurrency  int
		runs         int
		// budget is the most GETs allowed; exact says the scan spends all of it.
		budget int
		exact  bool
	}{
		{name: "no limit said, no cap", concurrency: 1, budget: -1},
		{name: "14 of 100 left: 4 above the reserve of 10", limit: 100, spent: 86, concurrency: 1, budget: 4, exact: true},
		{name: "14 of 100 left, 8 requests at once", limit: 100, spent: 86, concurrency: 8, budget: 4},
		{name: "3 of 10 left: 2 above the reserve of 1", limit: 10, spent: 7, concurrency: 1, budget: 2, exact: true},
		{name: "only the reserve left: no GET", limit: 100, spent: 90, concurrency: 1, budget: 0, exact: true},
		{name: "none left", limit: 100, spent: 100, concurrency: 8, budget: 0, exact: true},
		{name: "a cap of 5, no limit said", maxPulls: 5, concurrency: 1, budget: 5, exact: true},
		{name: "a cap of 5, 8 requests at once", maxPulls: 5, concurrency: 8, budget: 5, exact: true},
		{name: "a cap of 3 under a budget of 4", limit: 100, spent: 86, maxPulls: 3, concurrency: 1, budget: 3, exact: true},
		{name: "a cap counted across runs", maxPulls: 5, concurrency: 4, runs: 2, budget: 5, exact: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newRegistry(t)
			pc := &pullCounter{limit: tc.limit, spent: tc.spent, pulled: map[string]bool{}}
			tr.setHook(pc.hook)
			var targets []types.Target
			byRef := map[string]fixture.Image{}
			demand := 0
			for _, im := range tr.images {
				targets = append(targets, types.Target{Ref: im.Ref})
				byRef[im.Ref] = im
				demand += 1 + len(im.Children)
			}
			sort.Slice(targets, func(i, j int) bool { return targets[i].Ref < targets[j].Ref })
			budget, withholds := tc.budget, tc.budget >= 0
			if !withholds {
				budget = demand
			} else if budget >= demand {
				t.Fatalf("budget %d covers all %d manifests: the case proves nothing", budget, demand)
			}
			s, err := scan.New(opts(scan.WithConcurrency(tc.concurrency), scan.WithMaxPulls(tc.maxPulls))...)
			if err != nil {
				t.Fatal(err)
			}
			var res *types.Result
			for range max(tc.runs, 1) {
				if res, err = s.Run(context.Background(), targets); err != nil {
					t.Fatal(err)
				}
			}
			pc.mu.Lock()
			gets := pc.gets
			pc.mu.Unlock()
			if gets > budget || (tc.exact && gets != budget) {
				t.Errorf("%d manifest GETs, want %s %d", gets, map[bool]string{true: "exactly", false: "at most"}[tc.exact], budget)
			}
			if n := requests(res.Requests, "manifest-get", ""); n != gets {
				t.Errorf("%d manifest GETs counted, the registry saw %d", n, gets)
			}
			if n := requests(res.Requests, "manifest-head", ""); n != len(tr.images) {
				t.Errorf("%d tags HEADed, want every one of %d: a HEAD is free", n, len(tr.images))
			}
			unknown := 0
			for _, im := range res.Images {
				fx, ok := byRef[im.Reference]
				if !ok {
					t.Fatalf("%s is no fixture", im.Reference)
				}
				need := []string{fx.Digest.String()}
				for _, c := range fx.Children {
					need = append(need, c.Digest.String())
				}
				all := true
				for _, d := range need {
					all = all && pc.pulled[manifestPath(fx.Name, d)]
				}
				switch {
				case im.Verdict == types.OK && all:
				case im.Verdict == types.Unknown && !all:
					unknown++
					for _, f := range im.Findings {
						if f.Code != types.RateLimitBudget || pc.pulled[manifestPath(fx.Name, f.Digest)] {
							t.Errorf("%s: finding %s on %s (GET: %v), want rate-limit-budget on a manifest not GET", im.Reference, f.Code, f.Digest, pc.pulled[manifestPath(fx.Name, f.Digest)])
						}
					}
				default:
					t.Errorf("%s is %s with every manifest GET %v: %+v", im.Reference, im.Verdict, all, im.Findings)
				}
			}
			if withholds != (unknown > 0) {
				t.Errorf("%d images left unknown", unknown)
			}
			if c := res.Count(); c[types.OK]+c[types.Unknown] != len(res.Images) {
				t.Errorf("verdicts %v", c)
			}
			want := []types.RateLimit{}
			if tc.limit > 0 {
				want = append(want, types.RateLimit{Host: tr.host, Reported: true, Limit: tc.limit,
					Remaining: tc.limit - min(tc.spent+gets, tc.limit), WindowSeconds: 21600, Reserve: max(1, (tc.limit+9)/10)})
			} else if tc.maxPulls > 0 {
				want = append(want, types.RateLimit{Host: tr.host})
			}
			for i := range want {
				want[i].MaxPulls, want[i].Pulls = tc.maxPulls, gets
			}
			got := append([]types.RateLimit{}, res.RateLimits...)
			for i := range got {
				if got[i].Withheld == 0 {
					t.Errorf("%s: no GET counted as withheld", got[i].Host)
				}
				got[i].Withheld = 0
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rate limits %+v\nwant %+v", got, want)
			}
		})
	}
}
