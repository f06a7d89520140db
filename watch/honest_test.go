package watch

import (
	"testing"
	"time"

	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/types"
)

const dIndex = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// indexOf is a walk's answer for app:latest: an index whose children are
// the manifests given (amd64, arm64, …).
func indexOf(children ...string) *types.Result {
	root := &types.Node{Kind: "index", Digest: dIndex}
	for _, c := range children {
		root.Children = append(root.Children, &types.Node{Kind: "manifest", Digest: c})
	}
	return &types.Result{Images: []*types.Image{{Reference: "reg.example/app:latest", Digest: dIndex, Tree: root}}}
}

func ifNotPresent(s sighting) sighting { s.c.PullPolicy = "IfNotPresent"; return s }

// histOf is a history where Deployment web/app ran each digest in turn,
// a day apart, the last one newest.
func histOf(image string, digests ...string) *record.History {
	h := record.NewHistory()
	for i, d := range digests {
		h.Merge(recordresult.Snapshot{Cluster: "prod", Time: time.Date(2026, 12, 1+i, 0, 0, 0, 0, time.UTC), Entries: []recordresult.Entry{{
			Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Pod: "old", Container: "app", Image: image, Digest: d}}})
	}
	return h
}

// Honest transitions: two platforms of one index are no upgrade, a pod
// started from its node's older cache is said as that (not high), and a
// tag that moved stays a high unplanned upgrade.
func TestHonestTransitions(t *testing.T) {
	t.Parallel()
	app := slot{"web", "Deployment", "app", "app", ""}
	type hstep struct {
		pod       string
		s         sighting
		want      string // as describe says it
		cached    bool   // the transition is said as a node's cache
		upgrade   string // the standing upgrade: "" none, else "FROM>TO" as describe
		nodeCache bool   // ... said as a node's cache
		severity  types.Severity
	}
	cases := []struct {
		name  string
		index *types.Result // what walks learned; nil none
		hist  *record.History
		steps []hstep
	}{
		{name: "CRI-O: amd64 and arm64 pods run two children of one index", index: indexOf(dA, dB), steps: []hstep{
			{pod: "amd", s: see("amd", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "arm", s: see("arm", "app:latest", dB, 0, "")},
			{pod: "amd", s: see("amd", "app:latest", dA, 1, "")},
		}},
		{name: "a tag moved to another index: still high", index: indexOf(dA, dB), steps: []hstep{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", s: see("p1", "app:latest", dC, 1, ""), want: "a>c unplanned", upgrade: "a>c", severity: types.SeverityHigh},
		}},
		{name: "IfNotPresent pod on a node holding an older digest", hist: histOf("app:latest", dA, dB), steps: []hstep{
			{pod: "p1", s: see("p1", "app:latest", dB, 0, "")},
			{pod: "p2", s: ifNotPresent(see("p2", "app:latest", dA, 0, "")), want: "b>a unplanned", cached: true,
				upgrade: "b>a", nodeCache: true, severity: types.SeverityWarning},
			{pod: "p3", s: ifNotPresent(see("p3", "app:latest", dB, 0, "")), upgrade: "b>a", nodeCache: true, severity: types.SeverityWarning},
		}},
		{name: "a node's cache leaves a tag move standing", steps: []hstep{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", s: see("p1", "app:latest", dB, 1, ""), want: "a>b unplanned", upgrade: "a>b", severity: types.SeverityHigh},
			{pod: "p2", s: ifNotPresent(see("p2", "app:latest", dA, 0, "")), want: "b>a unplanned", cached: true,
				upgrade: "a>b", severity: types.SeverityHigh},
		}},
		{name: "Always pull of a new digest is a moved tag even on a node with the old one", hist: histOf("app:latest", dA, dB), steps: []hstep{
			{pod: "p1", s: see("p1", "app:latest", dB, 0, "")},
			{pod: "p2", s: see("p2", "app:latest", dC, 0, ""), want: "b>c unplanned", upgrade: "b>c", severity: types.SeverityHigh},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var plat platforms
			if tc.index != nil {
				plat.learn(tc.index, true)
			}
			st := newState("prod")
			st.siblings = plat.siblings
			if tc.hist != nil {
				st.reset(tc.hist)
			}
			now := time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC)
			for i, s := range tc.steps {
				now = now.Add(time.Second)
				_, ts := st.observe(now, "web", s.pod, []sighting{s.s})
				if got := describe(ts); got != s.want {
					t.Errorf("step %d: transition %q, want %q", i, got, s.want)
				}
				if len(ts) == 1 && st.nodeCache(ts[0]) != s.cached {
					t.Errorf("step %d: said as a node's cache %v, want %v", i, st.nodeCache(ts[0]), s.cached)
				}
				u, ok := st.upgrades()[app]
				if got := upgradeOf(u, ok); got != s.upgrade || ok && u.NodeCache != s.nodeCache {
					t.Errorf("step %d: upgrade %q node cache %v, want %q node cache %v", i, got, u.NodeCache, s.upgrade, s.nodeCache)
				}
				if ok {
					if got := findingSeverity(t, u, app); got != s.severity {
						t.Errorf("step %d: unplanned-upgrade finding %v, want %v", i, got, s.severity)
					}
				}
			}
		})
	}
}

func upgradeOf(u Upgrade, ok bool) string {
	if !ok {
		return ""
	}
	return describe([]record.Transition{u.Transition})[:3]
}

// findingSeverity is the severity of the unplanned-upgrade finding u
// gives the image slot k uses.
func findingSeverity(t *testing.T, u Upgrade, k slot) types.Severity {
	t.Helper()
	res := &types.Result{Images: []*types.Image{{Reference: "reg.example/app:latest",
		Uses: []types.Use{{Namespace: k.ns, Kind: k.kind, Name: k.name, Container: k.container, Pod: u.Pod}}}}}
	out := withUpgrades(res, map[slot]Upgrade{k: u}, nil, "")
	for _, f := range out.Images[0].Findings {
		if f.Code == types.UnplannedUpgrade {
			return f.Severity
		}
	}
	t.Fatal("no unplanned-upgrade finding")
	return 0
}

// On CRI-O, before a walk has shown the index, a pod of the second
// architecture looks like an upgrade; the walk that learns the index ends
// it, and the upgrade gauge stops saying it.
func TestSiblingsLearnedEndTheUpgrade(t *testing.T) {
	t.Parallel()
	var plat platforms
	st := newState("prod")
	st.siblings = plat.siblings
	now := time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC)
	st.observe(now, "web", "amd", []sighting{see("amd", "app:latest", dA, 0, "")})
	if _, ts := st.observe(now, "web", "arm", []sighting{see("arm", "app:latest", dB, 0, "")}); describe(ts) != "a>b unplanned" {
		t.Fatalf("before the index is known: %q", describe(ts))
	}
	if got := st.dropSiblings(); len(got) != 0 {
		t.Fatalf("dropped %d upgrades with no index known", len(got))
	}
	plat.learn(indexOf(dA, dB), true)
	if got := st.dropSiblings(); len(got) != 1 || got[0].From != dA || got[0].To != dB {
		t.Fatalf("dropped %+v, want the a>b upgrade", got)
	}
	if ups := st.upgrades(); len(ups) != 0 {
		t.Errorf("upgrades stand after the index was learned: %+v", ups)
	}
	plat.learn(indexOf(dC), true) // a walk of everything forgets indexes no longer in use
	if plat.siblings(dA, dB) {
		t.Error("siblings kept after a walk of everything that no longer has them")
	}
}
