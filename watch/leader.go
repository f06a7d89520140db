package watch

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

)

// LeaderConfig is leader election on a Lease (client-go's leaderelection):
// only the holder writes the history, walks images and exports their
// series; a new holder reconciles first.
type LeaderConfig struct {
	// Client makes and renews the Lease; nil uses Config.Client.
	Client kubernetes.Interface
	// Namespace and Name are the Lease's.
	Namespace, Name string
	// Identity is this replica's name in the Lease (its pod name).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are leaderelection's;
	// defaults 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// elector makes the leader election of lc for w.
func (w *Watcher) elector(lc LeaderConfig) (*leaderelection.LeaderElector, error) {
	c := lc.Client
	if c == nil {
		c = w.cfg.Client
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, lc.Namespace, lc.Name, c.CoreV1(), c.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: lc.Identity})
	if err != nil {
		return nil, fmt.Errorf("making the lease lock %s/%s: %w", lc.Namespace, lc.Name, err)
	}
	or := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		Name:          lc.Name,
		LeaseDuration: or(lc.LeaseDuration, 15*time.Second),
		RenewDeadline: or(lc.RenewDeadline, 10*time.Second),
		RetryPeriod:   or(lc.RetryPeriod, 2*time.Second),
		// Run writes what is pending before it cancels ctx: the lease is
		// then given up at once, and the next leader need not wait it out.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { w.startLeading(ctx) },
			OnStoppedLeading: func() { w.stopLeading() },
			OnNewLeader: func(id string) {
				w.log.Info("leader", "identity", id, "self", id == lc.Identity)
			},
		},
	})
}

// campaign runs for the lease until ctx ends, again after each loss.
func (w *Watcher) campaign(ctx context.Context) {
	defer close(w.campaignDone)
	for ctx.Err() == nil {
		le, err := w.elector(*w.cfg.Leader)
		if err != nil {
			w.log.Error("leader election", "err", err)
			return
		}
		le.Run(ctx)
	}
}

// startLeading reconciles the history with what runs, as the new leader,
// then writes from then on.
func (w *Watcher) startLeading(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.reconcileAs(ctx, true)
		if err == nil {
			w.log.Info("leading: history reconciled, writing")
			w.metrics.leader.WithLabelValues().Set(1)
			w.walks.poke() // what appeared while following is walked now
			return
		}
		w.log.Error("reconciling as the new leader (retrying)", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(w.cfg.FlushInterval):
		}
	}
}

func (w *Watcher) stopLeading() {
	w.leader.Store(false)
	w.metrics.leader.WithLabelValues().Set(0)
	w.log.Info("not leading: writes stop")
}
