package watch

import (
	"testing"
	"time"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// see is one container of Deployment web/app as a pod shows it.
func see(pod, image, digest string, restarts int32, reason string) sighting {
	return sighting{c: inventory.Container{Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Pod: pod,
		Container: "app", Field: inventory.FieldContainers, Image: image, RunningDigest: digest, RestartCount: restarts, Reason: reason}}
}

type step struct {
	pod     string
	s       sighting
	delete  bool
	want    string // "" no transition; else "FROM>TO planned|unplanned"
	upgrade bool   // an unplanned upgrade stands after the step
	crash   bool   // ... and crash-loops
}

func describe(ts []record.Transition) string {
	if len(ts) == 0 {
		return ""
	}
	t := ts[0]
	kind := "unplanned"
	if t.TemplateChanged {
		kind = "planned"
	}
	short := func(d string) string {
		if d == "" {
			return "-"
		}
		return d[7:8]
	}
	return short(t.From) + ">" + short(t.To) + " " + kind
}

func TestStateTransitions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		hist  *record.History
		steps []step
	}{
		{name: "the owner's last pod goes; its next, on a moved tag, is an unplanned upgrade", steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", delete: true},
			{pod: "p2", s: see("p2", "app:latest", dB, 0, ""), want: "a>b unplanned", upgrade: true},
		}},
		{name: "the owner's last pod goes; its next runs the same digest", steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", delete: true},
			{pod: "p2", s: see("p2", "app:latest", dA, 0, "")},
		}},
		{name: "first seen, then the same digest again", steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", s: see("p1", "app:latest", dA, 0, "")},
			{pod: "p2", s: see("p2", "app:latest", dA, 0, "")},
		}},
		{name: "a restart pulls other bits under the same tag", steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", s: see("p1", "app:latest", dB, 1, ""), want: "a>b unplanned", upgrade: true},
			{pod: "p1", s: see("p1", "app:latest", dB, 2, "CrashLoopBackOff"), upgrade: true, crash: true},
		}},
		{name: "a rollout is one planned transition", steps: []step{
			{pod: "p1", s: see("p1", "app:v1", dA, 0, ""), want: "->a planned"},
			{pod: "p2", s: see("p2", "app:v2", dB, 0, ""), want: "a>b planned"},
			{pod: "p3", s: see("p3", "app:v2", dB, 0, "")},
			{pod: "p1", delete: true},
		}},
		{name: "a new pod pulls other bits under the same tag", steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", delete: true},
			{pod: "p2", s: see("p2", "app:latest", dB, 0, ""), want: "a>b unplanned", upgrade: true},
			{pod: "p2", delete: true},
		}},
		{name: "history already holds what runs", hist: hist(dA, "app:latest"), steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, "")},
		}},
		{name: "history lacks what runs: reconciled as a transition", hist: hist(dA, "app:latest"), steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dC, 3, ""), want: "a>c unplanned", upgrade: true},
		}},
		{name: "a template change seen in the owner is planned", steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p1", s: withTemplate(see("p1", "app:latest", dB, 1, ""), "app:v2"), want: "a>b planned"},
		}},
		{name: "a pod still on the old digest crash-loops: not the change's crash loop", steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dA, 0, ""), want: "->a planned"},
			{pod: "p2", s: see("p2", "app:latest", dA, 0, "")},
			{pod: "p1", s: see("p1", "app:latest", dB, 1, ""), want: "a>b unplanned", upgrade: true},
			{pod: "p2", s: see("p2", "app:latest", dA, 4, "CrashLoopBackOff"), upgrade: true},
			{pod: "p1", s: see("p1", "app:latest", dB, 2, "CrashLoopBackOff"), upgrade: true, crash: true},
		}},
		// The history the watcher starts from, as a restart of it finds it.
		{name: "a history holding two digests mid-rollout: a pod on either is no transition", hist: midRollout(), steps: []step{
			{pod: "old-2", s: see("old-2", "app:v1", dA, 0, "")},
			{pod: "new-2", s: see("new-2", "app:v2", dB, 0, "")},
		}},
		{name: "a history's unplanned upgrade stands; the crash loop counts restarts after it", hist: upgraded(2), steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dB, 2, "CrashLoopBackOff"), upgrade: true},
			{pod: "p1", s: see("p1", "app:latest", dB, 3, "CrashLoopBackOff"), upgrade: true, crash: true},
		}},
		{name: "a history whose slot moved on after its unplanned upgrade: none stands", hist: movedOn(), steps: []step{
			{pod: "p1", s: see("p1", "app:latest", dC, 0, "")},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newState("prod")
			if tc.hist != nil {
				st.reset(tc.hist)
			}
			now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
			for i, s := range tc.steps {
				now = now.Add(time.Second)
				var ts []record.Transition
				if s.delete {
					st.forget("web", s.pod)
				} else {
					_, ts = st.observe(now, "web", s.pod, []sighting{s.s})
				}
				if got := describe(ts); got != s.want {
					t.Errorf("step %d: transition %q, want %q", i, got, s.want)
				}
				ups := st.upgrades()
				u, ok := ups[slot{"web", "Deployment", "app", "app", ""}]
				if ok != s.upgrade || ok && u.CrashLoop != s.crash {
					t.Errorf("step %d: upgrade %v %+v, want %v crash %v", i, ok, u, s.upgrade, s.crash)
				}
			}
		})
	}
}

func withTemplate(s sighting, image string) sighting { s.templateImage = image; return s }

func hist(digest, image string) *record.History {
	h := record.NewHistory()
	h.Merge(recordresult.Snapshot{Cluster: "prod", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Entries: []recordresult.Entry{{
		Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Pod: "old", Container: "app", Image: image, Digest: digest}}})
	return h
}

// A transition seen before a reconcile keeps the time it was first seen.
func TestStateReconcileKeepsFirstSeenTime(t *testing.T) {
	t.Parallel()
	st := newState("prod")
	st.reset(hist(dA, "app:latest"))
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	_, ts := st.observe(t0, "web", "p1", []sighting{see("p1", "app:latest", dB, 1, "")})
	if len(ts) != 1 {
		t.Fatalf("transitions %+v", ts)
	}
	st.reset(hist(dA, "app:latest")) // the write was lost; a new leader reconciles
	_, ts = st.observe(t0.Add(time.Minute), "web", "p1", []sighting{see("p1", "app:latest", dB, 1, "")})
	if len(ts) != 1 || !ts[0].Time.Equal(t0) {
		t.Fatalf("after the reconcile: %+v, want the transition at %v", ts, t0)
	}
}

// historyAt is a history of Deployment web/app's container: each entry
// (pod, image, digest) seen at day.
func historyAt(h *record.History, day int, entries ...[3]string) *record.History {
	if h == nil {
		h = record.NewHistory()
	}
	s := recordresult.Snapshot{Cluster: "prod", Time: time.Date(2026, 12, day, 0, 0, 0, 0, time.UTC)}
	for _, e := range entries {
		s.Entries = append(s.Entries, recordresult.Entry{Namespace: "web", OwnerKind: "Deployment", OwnerName: "app",
			Pod: e[0], Container: "app", Image: e[1], Digest: e[2]})
	}
	h.Merge(s)
	return h
}

// midRollout: app:v1 (dA) ran alone, then its last sighting caught a
// rollout to app:v2 (dB) half done, both digests running.
func midRollout() *record.History {
	h := historyAt(nil, 1, [3]string{"old-1", "app:v1", dA})
	return historyAt(h, 2, [3]string{"old-1", "app:v1", dA}, [3]string{"new-1", "app:v2", dB})
}

// upgraded: app:latest moved from dA to dB under a running pod, which
// had restarted restarts times when the watcher saw it.
func upgraded(restarts int32) *record.History {
	h := historyAt(nil, 1, [3]string{"p1", "app:latest", dA})
	h = historyAt(h, 2, [3]string{"p1", "app:latest", dB})
	h.AddTransitions(record.Transition{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Container: "app",
		Pod: "p1", Image: "app:latest", PreviousImage: "app:latest", From: dA, To: dB, Time: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		RestartCount: restarts})
	return h
}

// movedOn: upgraded, then a nightly record (which writes no transitions)
// saw the slot run dC.
func movedOn() *record.History {
	return historyAt(upgraded(1), 3, [3]string{"p1", "app:latest", dC})
}

// What runs no more is not held: a slot whose last pod went keeps only its
// last digests, compact, for the owner's next pod (a bare pod's slot not
// even that), and a workload gone from the cluster is forgotten at the
// next periodic walk.
func TestStateForgetsWhatRunsNoMore(t *testing.T) {
	t.Parallel()
	bare := func(pod string) sighting {
		s := see(pod, "app:latest", dA, 0, "")
		s.c.OwnerKind, s.c.OwnerName = inventory.KindPod, pod
		return s
	}
	st := newState("prod")
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	st.observe(now, "web", "p1", []sighting{see("p1", "app:latest", dA, 0, "")})
	st.observe(now, "web", "p1", []sighting{see("p1", "app:latest", dB, 1, "")})
	st.observe(now, "web", "solo", []sighting{bare("solo")})
	if len(st.slots) != 2 || len(st.seen) != 2 {
		t.Fatalf("slots %d, seen %d, want 2 each", len(st.slots), len(st.seen))
	}
	st.forget("web", "p1")
	st.forget("web", "solo")
	if len(st.slots) != 0 || len(st.seen) != 0 || len(st.podSlots) != 0 {
		t.Errorf("after every pod went: slots %d, seen %d, pods %d, want none", len(st.slots), len(st.seen), len(st.podSlots))
	}
	k := slot{"web", "Deployment", "app", "app", ""}
	if hs, ok := st.hist[k]; !ok || hs.last != dB || len(hs.older) != 1 || hs.older[0] != dA || len(st.hist) != 1 {
		t.Errorf("hist %+v, want only the Deployment's, last b, older a", st.hist)
	}
	st.prune(map[owner]bool{{"web", "Deployment", "app"}: true})
	if len(st.hist) != 1 {
		t.Errorf("pruned a workload that is still declared: %+v", st.hist)
	}
	st.prune(map[owner]bool{})
	if len(st.hist) != 0 {
		t.Errorf("a workload gone is still held: %+v", st.hist)
	}
}
