//go:build integration

package integration

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/regcheck/regcheck/internal/testing/heldstore"
	"github.com/regcheck/regcheck/internal/testing/logbuf"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/watch"
)

// TestWatchLeaseLostMidReconcile: on the real apiserver, another holder
// takes the Lease while the new leader's reconcile (its history read) or
// its first write is under way. The replica that lost it never leads
// again while the other holds it: no write commits, no history, no
// leader's series, regcheck_watch_leader 0.
func TestWatchLeaseLostMidReconcile(t *testing.T) {
	kc := startCluster(t)
	cs := clientFor(t, kc.Config)
	for i, tc := range []struct {
		name, method string
		after        int32
	}{
		{"during the reconcile", "Load", 1}, // the first Load is Run's, before the campaign
		{"during the first write", "Update", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := []string{"lease-load", "lease-write"}[i]
			if err := createNamespace(t.Context(), cs, ns); err != nil {
				t.Fatal(err)
			}
			workload(t, t.Context(), cs, ns, "api", "127.0.0.1:5000/watch/api:latest", "Always", "node-a",
				"127.0.0.1:5000/watch/api@sha256:"+strings.Repeat("a", 64))
			st := heldstore.New(&record.File{Path: filepath.Join(t.TempDir(), "history.json")}, tc.method, tc.after)
			logs := &logbuf.Buffer{}
			w, err := watch.New(watch.Config{Client: cs, Namespace: ns, Cluster: "prod", Store: st, Interval: -1,
				FlushInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil)),
				Leader: &watch.LeaderConfig{Namespace: ns, Name: "regcheck-watch", Identity: "a",
					LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			released := false
			defer func() {
				if !released {
					close(st.Release)
				}
				cancel()
				<-done
			}()
			select {
			case <-st.Entered:
			case <-time.After(30 * time.Second):
				t.Fatalf("the %s never came:\n%s", tc.method, logs)
			}
			stealLease(t, cs, ns)
			deadline := time.Now().Add(15 * time.Second)
			for !strings.Contains(logs.String(), "not leading: writes stop") {
				if time.Now().After(deadline) {
					t.Fatalf("the lost Lease was never noticed:\n%s", logs)
				}
				time.Sleep(20 * time.Millisecond)
			}
			close(st.Release)
			released = true
			time.Sleep(time.Second) // 20 flush intervals
			if w.Leader() {
				t.Fatalf("the replica that lost the Lease leads:\n%s", logs)
			}
			if n := st.Commits.Load(); n != 0 {
				t.Errorf("%d writes committed by the replica that lost the Lease", n)
			}
			h, err := st.Store.Load(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Transitions) != 0 || len(h.Records) != 0 {
				t.Errorf("history written by the replica that lost the Lease: %d records, %d transitions", len(h.Records), len(h.Transitions))
			}
			mfs, err := w.Metrics().Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				switch name := mf.GetName(); {
				case name == "regcheck_watch_leader" && mf.GetMetric()[0].GetGauge().GetValue() != 0:
					t.Errorf("regcheck_watch_leader %v", mf.GetMetric()[0].GetGauge().GetValue())
				case !strings.HasPrefix(name, "regcheck_watch_"):
					t.Errorf("the replica that lost the Lease exports the leader's %s", name)
				}
			}
		})
	}
}

// stealLease makes "thief" the holder of ns/regcheck-watch for an hour;
// the apiserver then refuses the old holder's renewals (Conflict).
func stealLease(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), "regcheck-watch", metav1.GetOptions{})
		if err != nil {
			return err
		}
		thief, hour := "thief", int32(3600)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime, l.Spec.AcquireTime = &thief, &hour, &now, &now
		_, err = cs.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
