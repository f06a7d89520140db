package watch

import (
	"context"
	"errors"
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
			w.walks.poke() // what appeared while following is walked now
			return
		}
		if ctx.Err() != nil {
			w.log.Info("the Lease was lost while reconciling as the new leader: not leading", "err", err)
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
	w.follow()
	w.walks.forget()
	w.log.Info("not leading: writes stop")
}

// term is one leadership: its number, counted from one at each start
// and each end of leading, and the context the elector gave it, live
// while the Lease is held (nil when following). What a leader starts
// (a write, a walk) is committed only while its term is the current one
// and its context is live: a replica that lost the Lease, even in the
// middle of a reconcile or a write, never writes history or exports the
// leader's series again until it wins a new term.
type term struct {
	n   uint64
	ctx context.Context
}

// live reports whether t leads now.
func (t term) live() bool { return t.ctx != nil && t.ctx.Err() == nil }

// errNotLeading is what a commit started by a term that ended returns.
var errNotLeading = errors.New("no longer the leader (the Lease was lost)")

// leadLocked starts a term with ctx, the elector's context; w.mu is held.
// It refuses (errNotLeading) when ctx already ended: the Lease was lost
// while the new leader reconciled.
func (w *Watcher) leadLocked(ctx context.Context) error {
	if ctx.Err() != nil {
		return errNotLeading
	}
	w.setTerm(term{n: w.term.n + 1, ctx: ctx})
	w.metrics.leader.WithLabelValues().Set(1)
	return nil
}

// follow ends the term, if any: writes, walks and the leader's series stop.
func (w *Watcher) follow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.setTerm(term{n: w.term.n + 1})
	w.metrics.leader.WithLabelValues().Set(0)
}

// leading returns the current term when it leads now.
func (w *Watcher) leading() (term, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.term, w.term.live()
}

// setTerm makes t the current term; w.mu is held.
func (w *Watcher) setTerm(t term) {
	w.term = t
	w.termN.Store(t.n)
}

// stillLeads reports whether t is the current term and leads now. It
// takes no lock: a term's number changes only with a new term, and its
// context ends when its Lease is lost.
func (w *Watcher) stillLeads(t term) bool {
	return t.live() && w.termN.Load() == t.n
}

// within is ctx, also ended when t's term ends.
func within(ctx context.Context, t term) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(t.ctx, cancel)
	return c, func() { stop(); cancel() }
}
