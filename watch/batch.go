package watch

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

// batch is what waits for the next history write: the newest entry of each
// pod's container and digest, and the transitions in the order seen.
type batch struct {
	entries     map[entryKey]recordresult.Entry
	transitions []record.Transition
}

type entryKey struct {
	record.Key
	pod string
}

func (b *batch) add(es []recordresult.Entry, ts []record.Transition) {
	if b.entries == nil {
		b.entries = map[entryKey]recordresult.Entry{}
	}
	for _, e := range es {
		k := entryKey{record.Key{Cluster: e.Cluster, Namespace: e.Namespace, OwnerKind: e.OwnerKind, OwnerName: e.OwnerName,
			Container: e.Container, Volume: e.Volume, Digest: e.Digest}, e.Pod}
		if old, ok := b.entries[k]; !ok || !e.Time.Before(old.Time) {
			b.entries[k] = e
		}
	}
	b.transitions = append(b.transitions, ts...)
}

// added tells the flush loop that the batch holds something new.
func (w *Watcher) added() {
	select {
	case w.pending <- struct{}{}:
	default:
	}
}

func (b *batch) empty() bool { return len(b.entries) == 0 && len(b.transitions) == 0 }

// take empties the batch and returns what it held.
func (b *batch) take() ([]recordresult.Entry, []record.Transition) {
	es := make([]recordresult.Entry, 0, len(b.entries))
	for _, e := range b.entries {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b recordresult.Entry) int { return a.Time.Compare(b.Time) })
	ts := b.transitions
	b.entries, b.transitions = nil, nil
	return es, ts
}

// flushLoop writes the batch while ctx lasts: at once when something new
// is pending and the last write began at least FlushInterval ago, else
// FlushInterval after it began, so that there is at most one write per
// interval, a lone change waits for none, and under a stream of changes
// none waits more than the interval and one write (the interval counted
// from the end of the write made each wait two writes). Only the leader writes;
// a replica that is not discards the batch, since the leader it may
// become reconciles. Each tick also retries the pods waiting for their
// owner and refreshes the unplanned-upgrade series.
func (w *Watcher) flushLoop(ctx context.Context) {
	tick := time.NewTicker(w.cfg.FlushInterval)
	defer tick.Stop()
	var last time.Time
	soon := time.NewTimer(time.Hour)
	soon.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// Also what a failed write, a reconcile or a walk's refresh left.
			w.retryWaiting()
			if time.Since(last) < w.cfg.FlushInterval {
				w.metrics.refresh()
				continue
			}
		case <-w.pending:
			if wait := w.cfg.FlushInterval - time.Since(last); wait > 0 {
				soon.Reset(wait)
				continue
			}
		case <-soon.C:
		}
		began := time.Now()
		if w.flush(ctx) {
			last = began
		}
		w.metrics.refresh()
	}
}

// finalFlush writes what is pending once ctx ended (SIGTERM), within a
// few seconds.
func (w *Watcher) finalFlush() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.flush(ctx)
}

// flush writes the batch in one Update of the store, if this watcher is
// the leader; what a failed write held goes back in the batch, for the
// next flush.
func (w *Watcher) flush(ctx context.Context) (wrote bool) {
	w.mu.Lock()
	t := w.term
	if !t.live() {
		w.batch = batch{}
		w.mu.Unlock()
		return false
	}
	if w.batch.empty() {
		w.mu.Unlock()
		return false
	}
	es, ts := w.batch.take()
	w.mu.Unlock()
	now := w.cfg.Now().UTC()
	wctx, done := within(ctx, t)
	defer done()
	expired := 0
	res, err := w.cfg.Store.Update(wctx, func(h *record.History) error {
		// Under the store's lock: the commit is the term's only while
		// it leads; else the next leader's reconcile records this.
		if !w.stillLeads(t) {
			return errNotLeading
		}
		h.Merge(recordresult.Snapshot{Cluster: w.cfg.Cluster, Time: now, Entries: es})
		h.AddTransitions(ts...)
		expired = h.Retain(w.cfg.HistoryLimit)
		return nil
	})
	if err != nil && !w.stillLeads(t) {
		w.log.Info("the Lease was lost during a write: not written, the next leader reconciles", "entries", len(es),
			"transitions", len(ts), "err", err)
		return true
	}
	if err != nil {
		w.metrics.writeErrors.WithLabelValues().Inc()
		w.log.Error("writing the history (kept for the next flush)", "entries", len(es), "transitions", len(ts), "err", err)
		w.mu.Lock()
		pending := w.batch
		w.batch = batch{}
		w.batch.add(es, ts)
		w.batch.add(pending.take())
		w.mu.Unlock()
		return true // a try: the next waits an interval
	}
	w.metrics.wrote(now)
	if res.Trimmed > 0 {
		w.metrics.trim(res.Trimmed)
		w.log.Warn(res.Message, "trimmed", res.Trimmed)
	}
	w.log.Debug("history written", "entries", len(es), "transitions", len(ts), "expired", expired)
	return true
}

// reconcile reads the history and observes every pod the caches hold
// against it: a digest running now that the history lacks is recorded
// now, first seen or a transition from the history's last digest. It runs
// at start and when this watcher becomes the leader (lead true, ctx the
// elector's): the term starts only if ctx is still live once the
// reconcile is done, under the same lock, so a Lease lost meanwhile
// leaves this replica following.
func (w *Watcher) reconcile(ctx context.Context) error {
	return w.reconcileAs(ctx, false)
}

func (w *Watcher) reconcileAs(ctx context.Context, lead bool) error {
	h, err := w.cfg.Store.Load(ctx)
	if err != nil {
		return err
	}
	pods, err := w.caches.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st.reset(h)
	w.batch = batch{}
	w.waiting = map[string]time.Time{}
	w.synced = true
	for _, p := range pods {
		w.observeLocked(p)
	}
	if lead {
		if err := w.leadLocked(ctx); err != nil {
			w.batch = batch{}
			return err
		}
	}
	if !w.batch.empty() {
		w.added()
	}
	w.log.Info("reconciled with the history", "pods", len(pods), "records", len(h.Records), "transitions", len(h.Transitions),
		"new transitions", len(w.batch.transitions))
	return nil
}
