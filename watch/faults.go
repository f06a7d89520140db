package watch

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// faultStale is how long a denied LIST or WATCH stands without being
// said again: a reflector retries at most every ~60s (30s backoff, full
// jitter), so a fault not renewed for longer has stopped.
const faultStale = 90 * time.Second

// fault is an informer's standing refusal: the API server denied the
// watcher's service account a verb on a resource.
type fault struct {
	verb    string
	err     string
	at      time.Time
	version string // the informer's last synced resourceVersion when it was denied
}

// faults are the informers' denied LISTs and WATCHes, by resource. A fault
// makes the watcher unready until the informer syncs again (its
// resourceVersion moves) or the denial stops recurring.
type faults struct {
	mu  sync.Mutex
	now func() time.Time
	by  map[string]fault
}

// cannot is the verb in the API server's Forbidden message: `User "x"
// cannot list resource "cronjobs" in API group "batch"`.
var cannot = regexp.MustCompile(`cannot (\w+) resource`)

// deniedVerb is the verb err denies: the one the API server names, else
// list when the reflector failed to list, else watch.
func deniedVerb(err error) string {
	if m := cannot.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	if strings.Contains(err.Error(), "failed to list") {
		return "list"
	}
	return "watch"
}

// watchErrors hands each informer's list and watch errors to the watcher:
// a Forbidden or Unauthorized one is logged at once, naming the resource
// and verb, and keeps /readyz failing while it stands; the others go to
// client-go's default handler.
func (w *Watcher) watchErrors() {
	for res, inf := range w.caches.informers {
		err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
				cache.DefaultWatchErrorHandler(ctx, r, err)
				return
			}
			w.denied(res, inf.LastSyncResourceVersion(), err)
		})
		if err != nil {
			w.log.Error("setting the watch error handler", "resource", res, "err", err)
		}
	}
	w.nodeErrors()
}

// nodeWait bounds the wait for the node informer at start: the nodes are
// optional (their image caches), and the first walk should see them.
const nodeWait = 10 * time.Second

// waitNodes waits at most timeout for the node informer's first sync.
func (w *Watcher) waitNodes(ctx context.Context, timeout time.Duration) {
	nctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(nctx.Done(), w.caches.nodeSynced) && ctx.Err() == nil {
		w.log.Info("the nodes are not cached yet: walks know no node's image cache until they are", "waited", timeout)
	}
}

// nodeErrors hands the node informer's errors to the watcher: a denied
// LIST or WATCH of nodes is logged once (walks then know no node's image
// cache), and does not make the watcher unready.
func (w *Watcher) nodeErrors() {
	var once sync.Once
	err := w.caches.nodeInformer().SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
			cache.DefaultWatchErrorHandler(ctx, r, err)
			return
		}
		once.Do(func() {
			w.log.Info(fmt.Sprintf("the API server denies the watcher %s on nodes: walks know no node's image cache (grant list and watch on nodes for them)", deniedVerb(err)),
				"resource", "nodes", "verb", deniedVerb(err), "err", err)
		})
	})
	if err != nil {
		w.log.Error("setting the watch error handler", "resource", "nodes", "err", err)
	}
}

// denied records that res was refused, logging it when the fault is new
// (not on each of the reflector's retries).
func (w *Watcher) denied(res, version string, err error) {
	f := fault{verb: deniedVerb(err), err: err.Error(), at: w.cfg.Now(), version: version}
	w.faults.mu.Lock()
	old, ok := w.faults.by[res]
	w.faults.by[res] = f
	w.faults.mu.Unlock()
	if ok && old.verb == f.verb && f.at.Sub(old.at) < faultStale {
		return
	}
	w.log.Error(fmt.Sprintf("the API server denies the watcher %s on %s: grant the verb to its service account (not ready until then)", f.verb, res),
		"resource", res, "verb", f.verb, "err", err)
}

// standing describes the faults that still stand ("" when none), and
// forgets those whose informer has synced since or that stopped recurring.
func (w *Watcher) standing() string {
	w.faults.mu.Lock()
	defer w.faults.mu.Unlock()
	now := w.cfg.Now()
	var out []string
	for res, f := range w.faults.by {
		inf := w.caches.informers[res]
		if now.Sub(f.at) > faultStale || (inf != nil && inf.LastSyncResourceVersion() != f.version) {
			delete(w.faults.by, res)
			w.log.Info("the API server no longer denies the watcher", "resource", res, "verb", f.verb)
			continue
		}
		out = append(out, fmt.Sprintf("%s %s denied: %s", f.verb, res, f.err))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// waitSynced waits for every informer's first sync, at most timeout: an
// informer that has not synced by then is named with its fault, and Run
// stops with that error rather than wait forever unready.
func (w *Watcher) waitSynced(ctx context.Context, timeout time.Duration) error {
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var late []string
	for res, ok := range w.caches.factory.WaitForCacheSync(sctx.Done()) {
		if !ok {
			late = append(late, res.String())
		}
	}
	if len(late) == 0 || ctx.Err() != nil {
		return nil
	}
	sort.Strings(late)
	why := w.standing()
	if why == "" {
		why = "no error reported by the API server"
	}
	return fmt.Errorf("watch: the %s informers did not sync within %v (%s)", strings.Join(late, ", "), timeout, why)
}
