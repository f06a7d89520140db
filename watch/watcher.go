package watch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// Config is what a Watcher watches, where it writes, and how often.
type Config struct {
	// Client reads the cluster, through informers only.
	Client kubernetes.Interface
	// Cluster names the cluster in the history (as regcheck record does).
	Cluster string
	// Namespace limits the watch to one namespace; "" watches all.
	Namespace string
	// Store keeps the history (record's file or ConfigMap).
	Store record.Store
	// FlushInterval spaces history writes: at most one per interval.
	// Default 1s: under a stream of changes none waits more than it and
	// one write (at 10,000 pods a write is about 0.4 s).
	FlushInterval time.Duration
	// HistoryLimit is how many records and transitions of each owner
	// container the history keeps (record.History.Retain), so that it
	// does not grow with every restart; 0 keeps everything.
	HistoryLimit int
	// Interval spaces deep walks of every image in use; 0 means 1h, and a
	// negative one walks never.
	Interval time.Duration
	// Debounce is how long a new image reference waits for others before
	// the walk of the new ones; default 10s.
	Debounce time.Duration
	// ScanOptions make the Scanner of each walk (a new one each, so that a
	// walk never answers from the last one's memory; the manifest cache and
	// the rate-limit budget apply as in scan).
	ScanOptions []scan.Option
	// PullPath, when set, is asked before each walk for the nodes' pull
	// path (an OpenShift cluster's mirror sets, read again each time so
	// that a set created or changed since is followed); nil walks the
	// registries themselves. An error fails that walk.
	PullPath func(ctx context.Context) (*pullpath.Config, error)
	// PullSecrets makes each walk use the pods' imagePullSecrets and their
	// service accounts', as the kubelet does (cluster.CheckWithPullSecretsThen;
	// Client needs get on secrets and serviceaccounts), as scan --cluster
	// --pull-secrets does.
	PullSecrets bool
	// Admission, when set, is asked at each periodic walk for the check
	// to apply (the cluster's image policies, read again each time, as
	// scan --cluster applies them; nil applies none), which the partial
	// walks until the next reuse, and the input errors
	// the walk's result carries (policies that could not be read): the
	// check is applied to the walk's result with the walk's Scanner, or
	// with PullSecrets to each credentials group's result with the
	// group's Scanner, so that signatures are read with the pods' pull
	// secrets too. An error fails the walk, whose references are then
	// walked again.
	Admission func(ctx context.Context) (cluster.Then, []types.InputError, error)
	// Leader, when set, makes the watcher write only while it holds the
	// lease; nil means it always writes.
	Leader *LeaderConfig
	// Logger gets what the watcher does; nil discards it.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// HistoryHint names the history in advice (a file, or how to get the
	// ConfigMap's); "" says HISTORY.
	HistoryHint string
	// OwnerWait is how long a pod whose ReplicaSet or Job is not in the
	// caches yet waits for it before it is attributed to that controller
	// itself; default 30s.
	OwnerWait time.Duration
	// SyncTimeout bounds the informers' first sync: Run fails naming the
	// informers that did not sync (and what the API server denied them)
	// rather than wait unready forever; default 2m.
	SyncTimeout time.Duration
}

// Watcher records every running digest of a cluster into a history as
// it changes, exports metrics and walks the images in use. Make one with
// New, then Run it.
type Watcher struct {
	cfg     Config
	log     *slog.Logger
	caches  *caches
	metrics *Metrics

	mu      sync.Mutex
	st      *state
	batch   batch
	synced  bool
	waiting map[string]time.Time // pods ("ns/name") whose owner is not in the caches yet, since when
	// term is the leadership held now (see term), guarded by mu.
	term term
	// termN is term.n, also readable without mu: stillLeads is asked
	// under the walker's lock, which observe takes under mu (walker.
	// previous), so taking mu there would deadlock the two.
	termN atomic.Uint64

	walks *walker
	// faults are the LISTs and WATCHes the API server denies now.
	faults faults
	// campaignDone is closed when the leader election has given up the lease.
	campaignDone chan struct{}
	// pending is poked when the batch gains something.
	pending chan struct{}
}

// New checks cfg and makes a Watcher; nothing is contacted yet.
func New(cfg Config) (*Watcher, error) {
	if cfg.Client == nil || cfg.Store == nil {
		return nil, errors.New("watch: a client and a store are required")
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = time.Second
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Hour
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 10 * time.Second
	}
	if cfg.OwnerWait <= 0 {
		cfg.OwnerWait = 30 * time.Second
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &Watcher{cfg: cfg, log: log, st: newState(cfg.Cluster), waiting: map[string]time.Time{}}
	w.metrics = newMetrics(w)
	w.caches = newCaches(cfg.Client, cfg.Namespace, 0)
	w.walks = newWalker(w)
	w.st.siblings = w.walks.plat.siblings
	w.faults = faults{by: map[string]fault{}}
	w.campaignDone = make(chan struct{})
	w.pending = make(chan struct{}, 1)
	if cfg.Leader == nil {
		w.mu.Lock()
		w.leadLocked(context.Background())
		w.mu.Unlock()
		close(w.campaignDone)
	}
	return w, nil
}

// Metrics is what the watcher exports: serve its Handler.
func (w *Watcher) Metrics() *Metrics { return w.metrics }

// Leader reports whether this watcher writes the history now: its term
// started and its Lease context is live (false as soon as the elector
// cancels it, before the elector's stop callback runs).
func (w *Watcher) Leader() bool {
	_, ok := w.leading()
	return ok
}

// Ready reports whether the informers have synced, the history was
// reconciled with what runs, and the API server denies no informer its
// LIST or WATCH.
func (w *Watcher) Ready() bool { return w.unready() == "" }

// unready says why the watcher is not ready; "" when it is.
func (w *Watcher) unready() string {
	if why := w.standing(); why != "" {
		return why
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.synced {
		return "informers not synced"
	}
	return ""
}

// Run watches until ctx ends, then writes what is pending and returns nil;
// it returns an error only when it cannot start (the history cannot be
// read, the informers do not sync within SyncTimeout).
func (w *Watcher) Run(ctx context.Context) error {
	w.handle()
	w.watchErrors()
	ictx, stopInformers := context.WithCancel(ctx) // stopped before Shutdown waits for them, on every return
	w.caches.factory.Start(ictx.Done())
	w.caches.nodeFactory.Start(ictx.Done())
	defer w.caches.factory.Shutdown()
	defer w.caches.nodeFactory.Shutdown()
	defer stopInformers()
	if err := w.waitSynced(ctx, w.cfg.SyncTimeout); err != nil {
		return err
	}
	w.waitNodes(ctx, nodeWait)
	if ctx.Err() != nil {
		return nil
	}
	if err := w.reconcile(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	w.metrics.synced(w.cfg.Now())
	lctx, stopLeading := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLeading()
	if w.cfg.Leader != nil {
		go w.campaign(lctx)
	}
	go w.walks.run(ctx)
	w.flushLoop(ctx)
	w.finalFlush()
	stopLeading()
	select { // the lease given up, for the next leader
	case <-w.campaignDone:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// handle registers the event handlers: pods are observed as they change;
// a ReplicaSet or Job arriving lets the pods waiting for it be observed.
func (w *Watcher) handle() {
	for res, inf := range w.caches.informers {
		events := w.metrics.events.WithLabelValues(res)
		h := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { events.Inc(); w.metrics.synced(w.cfg.Now()) },
			UpdateFunc: func(_, obj any) { events.Inc(); w.metrics.synced(w.cfg.Now()) },
			DeleteFunc: func(obj any) { events.Inc(); w.metrics.synced(w.cfg.Now()) },
		}
		if res == "pods" {
			h.AddFunc = func(obj any) { events.Inc(); w.metrics.synced(w.cfg.Now()); w.podChanged(obj) }
			h.UpdateFunc = func(_, obj any) { events.Inc(); w.metrics.synced(w.cfg.Now()); w.podChanged(obj) }
			h.DeleteFunc = func(obj any) { events.Inc(); w.metrics.synced(w.cfg.Now()); w.podDeleted(obj) }
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			w.log.Error("adding an event handler", "resource", res, "err", err)
		}
	}
}

// podChanged observes a pod added or updated, once the caches synced (the
// reconcile observes every pod before that).
func (w *Watcher) podChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.synced {
		return
	}
	w.observeLocked(p)
}

func (w *Watcher) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting, p.Namespace+"/"+p.Name)
	w.st.forget(p.Namespace, p.Name)
}

// observeLocked turns p into the containers inventory.List would list for
// it and feeds the state machine; a pod whose owner is not cached yet
// waits (up to OwnerWait) for it.
func (w *Watcher) observeLocked(p *corev1.Pod) {
	key := p.Namespace + "/" + p.Name
	now := w.cfg.Now()
	if !w.caches.ownerKnown(p) {
		since, ok := w.waiting[key]
		if !ok {
			w.waiting[key] = now
			return
		}
		if now.Sub(since) < w.cfg.OwnerWait {
			return
		}
	}
	delete(w.waiting, key)
	kind, name := inventory.TopOwner(p, w.caches.ownerRefs)
	cs := inventory.PodContainers(p, kind, name)
	ss := make([]sighting, 0, len(cs))
	for _, c := range cs {
		x := sighting{c: c}
		x.lastReason, x.lastExit = lastTermination(p, c)
		if c.RunningDigest != "" {
			x.templateImage = w.caches.templateImage(slotOf(c))
		}
		ss = append(ss, x)
	}
	entries, ts := w.st.observe(now, p.Namespace, p.Name, ss)
	w.batch.add(entries, ts)
	if len(entries) > 0 || len(ts) > 0 {
		w.added()
	}
	for _, t := range ts {
		w.metrics.transition(t)
		w.noteTransition(t, w.st.nodeCache(t))
	}
	for _, u := range w.st.takeCrashed() {
		w.log.Warn("unplanned upgrade: the container crash-loops since (the crash loop began with this image change)",
			append(upgradeAttrs(u.Transition), "restarts", u.Restarts, "advice", upgradeAdvice(u, w.cfg.HistoryHint))...)
	}
	for _, c := range cs {
		w.walks.seen(c)
	}
}

// noteTransition logs a transition, and starts the walk of an unplanned
// upgrade's previous digest; a pod started from its node's older cached
// digest (cached) is said as that, at info.
func (w *Watcher) noteTransition(t record.Transition, cached bool) {
	attrs := upgradeAttrs(t)
	switch {
	case t.FirstSeen():
		w.log.Debug("first seen", attrs...)
	case t.TemplateChanged:
		w.log.Info("running digest changed with the template", attrs...)
	case cached:
		w.log.Info("a new pod runs an older digest its node still holds (pull policy IfNotPresent or Never): the node's cache, not a moved tag", attrs...)
	default:
		// Logged once, here (and once its previous digest is walked, and
		// once a crash loop begins); the periodic walk's summary counts
		// those that stand.
		attrs = append(attrs, "previous_digest", w.walks.wholeOf(t), "advice", upgradeAdvice(Upgrade{Transition: t}, w.cfg.HistoryHint))
		w.log.Warn("unplanned upgrade: the running digest changed while the image string did not", attrs...)
		w.walks.previous(t)
	}
}

// upgradeAttrs are the log attributes that name a transition.
func upgradeAttrs(t record.Transition) []any {
	return []any{"namespace", t.Namespace, "owner", t.OwnerKind + "/" + t.OwnerName, "container", t.Container + t.Volume,
		"from", t.From, "to", t.To, "image", t.Image, "pod", t.Pod}
}

// retryWaiting observes again the pods that wait for their owner.
func (w *Watcher) retryWaiting() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key := range w.waiting {
		ns, name := splitKey(key)
		p, err := w.caches.pods.Pods(ns).Get(name)
		if err != nil {
			delete(w.waiting, key)
			continue
		}
		w.observeLocked(p)
	}
}

func splitKey(key string) (ns, name string) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// lastTermination is how the container before this one ended: its
// status's lastTerminationState, or the state itself when terminated.
func lastTermination(p *corev1.Pod, c inventory.Container) (reason string, exit *int32) {
	var all []corev1.ContainerStatus
	switch c.Field {
	case inventory.FieldContainers:
		all = p.Status.ContainerStatuses
	case inventory.FieldInitContainers:
		all = p.Status.InitContainerStatuses
	case inventory.FieldEphemeralContainers:
		all = p.Status.EphemeralContainerStatuses
	}
	for i := range all {
		if all[i].Name != c.Container {
			continue
		}
		t := all[i].LastTerminationState.Terminated
		if t == nil {
			t = all[i].State.Terminated
		}
		if t != nil {
			code := t.ExitCode
			return t.Reason, &code
		}
	}
	return "", nil
}
