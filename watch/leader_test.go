package watch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
