package watch

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/internal/testing/heldstore"
	"github.com/regcheck/regcheck/internal/testing/logbuf"
	"github.com/regcheck/regcheck/record"
)

// Two replicas share a Lease: one leads and writes, the other does not;
// when the leader stops, the other takes the Lease and its reconcile
// records the change made meanwhile.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	d, rs := deployment("reg.example/app:latest")
	c := fake.NewClientset(d, rs, pod("app-1-x", "reg.example/app:latest", dA, 0, ""))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	replica := func(id string) (*Watcher, context.CancelFunc, chan error) {
		w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond, Interval: -1,
			Leader: &LeaderConfig{Namespace: "regcheck", Name: "regcheck-watch", Identity: id,
				LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(rctx) }()
		waitFor(t, id+" ready", w.Ready)
		return w, cancel, done
	}
	a, stopA, doneA := replica("a")
	waitFor(t, "a leading", a.Leader)
	b, stopB, doneB := replica("b")
	defer func() { stopB(); <-doneB }()
	waitFor(t, "the first sighting", func() bool { return len(transitionsTo(load(t, st), dA)) == 1 })
	time.Sleep(300 * time.Millisecond)
	if b.Leader() {
		t.Fatal("both replicas lead")
	}

	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, pod("app-1-x", "reg.example/app:latest", dB, 1, ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b leading", b.Leader)
	waitFor(t, "the change made during the failover", func() bool { return len(transitionsTo(load(t, st), dB)) == 1 })
	if tr := transitionsTo(load(t, st), dB)[0]; tr.From != dA || tr.TemplateChanged {
		t.Errorf("transition %+v", tr)
	}
	if n := len(transitionsTo(load(t, st), dA)); n != 1 {
		t.Errorf("the first sighting is in the history %d times", n)
	}
}

// A replica that loses its Lease in the middle of the new leader's
// reconcile (its history Load answered late) or of its first write
// (the Update under way) is not the leader afterwards: it commits no
// write and exports none of the leader's series, and stays so while
// another holds the Lease.
func TestLeaseLostMidReconcile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		after  int32
	}{
		{"during the reconcile", "Load", 1}, // the first Load is Run's, before the campaign
		{"during the first write", "Update", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d, rs := deployment("reg.example/app:latest")
			c := fake.NewClientset(d, rs, pod("app-1-x", "reg.example/app:latest", dA, 0, ""))
			st := heldstore.New(&record.File{Path: filepath.Join(t.TempDir(), "history.json")}, tc.method, tc.after)
			logs := &logbuf.Buffer{}
			w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond, Interval: -1,
				Logger: slog.New(slog.NewTextHandler(logs, nil)),
				Leader: &LeaderConfig{Namespace: "regcheck", Name: "regcheck-watch", Identity: "a",
					LeaseDuration: 1500 * time.Millisecond, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- w.Run(rctx) }()
			defer func() { close(st.Release); cancel(); <-done }()
			select {
			case <-st.Entered:
			case <-time.After(10 * time.Second):
				t.Fatalf("the %s never came:\n%s", tc.method, logs)
			}
			steal(t, c)
			waitFor(t, "the lost Lease noticed", func() bool { return strings.Contains(logs.String(), "not leading: writes stop") })
			st.Release <- struct{}{}           // let the held call answer, then close in the defer
			time.Sleep(300 * time.Millisecond) // many flush intervals
			if w.Leader() {
				t.Fatal("the replica that lost the Lease leads")
			}
			if n := st.Commits.Load(); n != 0 {
				t.Errorf("%d writes committed by the replica that lost the Lease", n)
			}
			if h := load(t, st.Store); len(h.Transitions) != 0 {
				t.Errorf("history written by the replica that lost the Lease: %+v", h.Transitions)
			}
			if got := leaderFamilies(t, w); len(got) > 0 {
				t.Errorf("the replica that lost the Lease exports the leader's series %v", got)
			}
		})
	}
}

// steal makes another replica the Lease's holder, for an hour. The fake
// does not check resourceVersions, so a reactor refuses the old holder's
// renewals with the Conflict the apiserver answers a stale one.
func steal(t *testing.T, c *fake.Clientset) {
	t.Helper()
	ctx := context.Background()
	c.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l, ok := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "thief" {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, errors.New("stolen"))
		}
		return false, nil, nil
	})
	l, err := c.CoordinationV1().Leases("regcheck").Get(ctx, "regcheck-watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	thief, hour := "thief", int32(3600)
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, l.Spec.AcquireTime = &thief, &hour, &now, &now
	if _, err := c.CoordinationV1().Leases("regcheck").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// leaderFamilies are the families w exports now that only a leader
// exports.
func leaderFamilies(t *testing.T, w *Watcher) []string {
	t.Helper()
	health, err := w.metrics.health.Gather()
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{}
	for _, mf := range health {
		own[mf.GetName()] = true
	}
	all, err := w.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range all {
		if !own[mf.GetName()] {
			out = append(out, mf.GetName())
		}
	}
	return out
}

// stillLeads answers while w.mu is held: the walker asks it under its own
// lock, which observe takes under w.mu (walker.previous), and a stillLeads
// that took w.mu deadlocked the two (BenchmarkWatch: the walk, the flush
// loop and every pod event stopped for good after a minute of restarts).
func TestStillLeadsTakesNoLock(t *testing.T) {
	c := fake.NewClientset()
	w, err := New(Config{Client: c, Cluster: "prod", Store: &record.File{Path: filepath.Join(t.TempDir(), "h.json")}, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.mu.Lock()
	if err := w.leadLocked(ctx); err != nil {
		t.Fatal(err)
	}
	cur := w.term
	answer := make(chan bool, 1)
	go func() { answer <- w.stillLeads(cur) }()
	select {
	case ok := <-answer:
		if !ok {
			t.Error("the live term does not lead")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stillLeads waited for w.mu")
	}
	w.mu.Unlock()
	cancel()
	if w.stillLeads(cur) {
		t.Error("a term whose Lease context ended still leads")
	}
	w.follow()
	if w.stillLeads(term{n: cur.n, ctx: context.Background()}) {
		t.Error("an ended term's number still leads after follow")
	}
}
