package watch

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// walker runs the deep walks: every image in use each Interval, and the
// references that appeared since the last walk soon after they appear
// (debounced), each with a new Scanner. Only the leader walks.
type walker struct {
	w    *Watcher
	kick chan struct{}

	mu     sync.Mutex
	walked map[string]bool // references (spec images and running repo@digests) walked
	fresh  map[string]bool // references not walked yet
	prevs  map[string]record.Transition
	// whole says, for an unplanned upgrade's previous repo@digest, what its
	// walk found: "whole", "not whole" (broken) or "unknown"; wholeIn is
	// the periodic walk (gen) during which it was found. A digest found
	// whole is not walked again before the next periodic walk: during churn
	// the registry is asked about new digests, not about status changes.
	whole   map[string]string
	wholeIn map[string]int
	gen     int           // periodic walks started
	result  *types.Result // every image walked, the last walk's answer for each
	// plat are the indexes of the images walked, by platform manifest.
	plat platforms
	// admit is the admission check the last periodic walk read
	// (Config.Admission), which the partial walks until the next reuse.
	admit *admission
}

// admission is a reading of the cluster's image policies: the check, and
// the policies that could not be read.
type admission struct {
	then   cluster.Then
	unread []types.InputError
}

func newWalker(w *Watcher) *walker {
	return &walker{w: w, kick: make(chan struct{}, 1), walked: map[string]bool{}, fresh: map[string]bool{},
		prevs: map[string]record.Transition{}, whole: map[string]string{}, wholeIn: map[string]int{}}
}

// seen notes the references c uses; a new one starts the debounce.
func (k *walker) seen(c inventory.Container) {
	refs := []string{c.Image}
	if c.RunningDigest != "" {
		refs = append(refs, imageref.RunningOf(c.Image, c.RunningDigest))
	}
	k.mu.Lock()
	added := false
	for _, r := range refs {
		if !k.walked[r] && !k.fresh[r] {
			k.fresh[r], added = true, true
		}
	}
	k.mu.Unlock()
	if added {
		k.poke()
	}
}

// previous asks for the walk of an unplanned upgrade's previous digest,
// unless a walk since the last periodic one found it whole.
func (k *walker) previous(t record.Transition) {
	ref := imageref.RunningOf(t.Image, t.From)
	k.mu.Lock()
	known := k.whole[ref] == "whole" && k.wholeIn[ref] == k.gen
	if !known {
		k.prevs[ref] = t
	}
	k.mu.Unlock()
	if !known {
		k.poke()
	}
}

// wholeOf says what the walks know of t's previous digest: "whole", "not
// whole" or "unknown" as a walk since the last periodic one found it,
// else that a walk of it follows.
func (k *walker) wholeOf(t record.Transition) string {
	ref := imageref.RunningOf(t.Image, t.From)
	k.mu.Lock()
	defer k.mu.Unlock()
	if v, ok := k.whole[ref]; ok && k.wholeIn[ref] == k.gen {
		return v
	}
	return "not walked yet (a walk follows)"
}

func (k *walker) poke() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// run walks until ctx ends: everything each Interval, what is new Debounce
// after the first of it appeared. The delay is not restarted by what
// appears while it runs: under a steady stream of new references (a
// rollout, statuses changing faster than Debounce) they are walked in
// batches, one each Debounce, instead of waiting for the next full walk.
func (k *walker) run(ctx context.Context) {
	var full <-chan time.Time
	if k.w.cfg.Interval > 0 {
		t := time.NewTicker(k.w.cfg.Interval)
		defer t.Stop()
		full = t.C
	}
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
			if !pending {
				debounce.Reset(k.w.cfg.Debounce)
				pending = true
			}
		case <-debounce.C:
			pending = false
			k.once(ctx, false)
		case <-full:
			k.once(ctx, true)
		}
	}
}

// once runs one walk, of everything (all) or of the references not walked
// yet, on the leader only. A walk that fails, or whose term ended, puts
// what it took back: its new references are walked again, not dropped.
func (k *walker) once(ctx context.Context, all bool) {
	t, ok := k.w.leading()
	if !ok || k.w.cfg.Interval < 0 {
		return
	}
	ctx, done := within(ctx, t) // a walk ends with its term
	defer done()
	inv, taken := k.inventory(), k.w.cfg.Now()
	fresh, prevs, all := k.take(all)
	full := inv
	if all {
		// Queued once the walk has ended, with the time of the inventory:
		// the walk's height does not hold the queue too.
		defer k.w.refreshRecords(full, taken)
	} else {
		inv = only(inv, fresh)
	}
	res, err := k.walk(ctx, inv, prevs, all)
	if err != nil {
		k.w.log.Warn("deep walk interrupted (its references are walked again)", "err", err)
		k.putBack(fresh, prevs)
		return
	}
	k.mu.Lock()
	if !k.w.stillLeads(t) { // the next term walks again, from scratch
		k.result = nil
		k.mu.Unlock()
		return
	}
	k.learnRunning(res)
	k.merge(res, all, inv)
	if !all {
		kept := *k.result // the published one is never changed
		kept.Images = present(k.result.Images, full)
		k.result = &kept
	}
	merged := k.result
	k.mu.Unlock()
	k.publish(merged, all)
	if all {
		collect()
	}
}

// collect runs the collector after a walk of everything: what the walk
// built of every pod (its inventory, the record snapshot, the findings'
// text) is garbage then, and collected at once the heap's next goal is
// GOGC past what the watcher holds, not past the walk's height, which the
// churn that follows would otherwise fill (BenchmarkWatch: about 15 MB
// less peak heap at 10,000 pods, for one collection an --interval).
func collect() { runtime.GC() }

// take empties the references waiting for a walk and returns them, and
// whether the walk is of everything: asked, or no walk answered yet.
func (k *walker) take(all bool) (fresh map[string]bool, prevs map[string]record.Transition, whole bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fresh, prevs = k.fresh, k.prevs
	k.fresh, k.prevs = map[string]bool{}, map[string]record.Transition{}
	if k.result == nil {
		all = true
	}
	if all {
		k.result = nil // replaced: not kept alive through the walk
		k.gen++        // what earlier walks found whole is asked again
	}
	return fresh, prevs, all
}

// putBack returns what a failed walk took to the references waiting, and
// asks for another walk (after the debounce).
func (k *walker) putBack(fresh map[string]bool, prevs map[string]record.Transition) {
	k.mu.Lock()
	for r := range fresh {
		if !k.walked[r] {
			k.fresh[r] = true
		}
	}
	for r, t := range prevs {
		if _, ok := k.prevs[r]; !ok {
			k.prevs[r] = t
		}
	}
	k.mu.Unlock()
	k.poke()
}

// walk checks inv's images with a new Scanner (through the nodes' pull
// path, Config.PullPath, read again), then the unplanned
// upgrades' previous digests.
func (k *walker) walk(ctx context.Context, inv *inventory.Inventory, prevs map[string]record.Transition, all bool) (*types.Result, error) {
	opts := k.w.cfg.ScanOptions
	if pp := k.w.cfg.PullPath; pp != nil {
		cfg, err := pp(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the nodes' pull path: %w", err)
		}
		if cfg != nil {
			opts = append(slices.Clip(opts), scan.WithPullPath(cfg))
		}
	}
	s, err := scan.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("making the scanner: %w", err)
	}
	var res *types.Result
	if len(inv.Containers) > 0 {
		if res, err = k.check(ctx, s, inv, all); err != nil {
			return nil, err
		}
	}
	if err := k.walkPrevious(ctx, s, prevs); err != nil {
		return nil, fmt.Errorf("walking the previous digests of unplanned upgrades: %w", err)
	}
	return res, nil
}

// check walks inv's images with s, or with the pods' pull secrets
// (PullSecrets), then applies Admission.
func (k *walker) check(ctx context.Context, s *scan.Scanner, inv *inventory.Inventory, all bool) (*types.Result, error) {
	a, err := k.policies(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("applying the image policies: %w", err)
	}
	admit, unread := a.then, a.unread
	var res *types.Result
	if k.w.cfg.PullSecrets {
		res, err = cluster.CheckWithPullSecretsThen(ctx, k.w.cfg.Client, inv, admit, k.w.cfg.ScanOptions...)
		if err != nil && admit != nil && ctx.Err() == nil {
			// It fails otherwise only when ctx ends.
			err = fmt.Errorf("applying the image policies: %w", err)
		}
	} else if res, err = cluster.Check(ctx, s, inv); err == nil && admit != nil {
		if err = admit(ctx, s, res); err != nil {
			err = fmt.Errorf("applying the image policies: %w", err)
		}
	}
	if err != nil {
		return nil, err
	}
	res.InputErrors = append(res.InputErrors, unread...)
	return res, nil
}

// policies is the admission check of a walk: read (Config.Admission:
// the policies, the TrustRoots and the key Secrets they name) at each
// periodic walk (all) and reused by the partial walks until the next,
// which under churn run every Debounce: a policy changed meanwhile
// applies from the next periodic walk, as it then applies to every image.
func (k *walker) policies(ctx context.Context, all bool) (admission, error) {
	read := k.w.cfg.Admission
	if read == nil {
		return admission{}, nil
	}
	k.mu.Lock()
	last := k.admit
	k.mu.Unlock()
	if last != nil && !all {
		return *last, nil
	}
	then, unread, err := read(ctx)
	if err != nil {
		return admission{}, err
	}
	a := &admission{then: then, unread: unread}
	k.mu.Lock()
	k.admit = a
	k.mu.Unlock()
	return *a, nil
}

// forget drops the last walk's answer and series when a term ends: the
// next term walks everything again before it exports.
func (k *walker) forget() {
	k.mu.Lock()
	k.result = nil
	k.mu.Unlock()
	_ = k.w.metrics.publishWalk(nil)
}

// inventory is what the caches hold, as inventory.List would list it,
// with the nodes of the node informer (none while it has not synced, or
// when listing nodes is forbidden: their image caches are then unknown).
func (k *walker) inventory() *inventory.Inventory {
	o := k.w.caches.objects()
	if nodes, ok := k.w.caches.nodeList(); ok {
		o.Nodes = nodes
	} else {
		k.w.log.Debug("node image caches unknown: the node informer has not synced")
	}
	return inventory.FromObjects(o)
}

// only keeps the containers of every image one of refs touches: the spec
// images of the containers that use one of refs (as spec image or running
// repo@digest), each with all its containers, so that the walk's entry
// for an image holds every use of it and replaces the last one whole (a
// pod starting on a moved tag leaves its image's other uses in place).
func only(inv *inventory.Inventory, refs map[string]bool) *inventory.Inventory {
	touched := map[string]bool{}
	for _, c := range inv.Containers {
		if refs[c.Image] || c.RunningDigest != "" && refs[imageref.RunningOf(c.Image, c.RunningDigest)] {
			touched[c.Image] = true
		}
	}
	out := *inv
	out.Containers = nil
	for _, c := range inv.Containers {
		if touched[c.Image] {
			out.Containers = append(out.Containers, c)
		}
	}
	return &out
}

// walkPrevious walks each unplanned upgrade's previous repo@digest, to
// say whether pinning back to it would pull.
func (k *walker) walkPrevious(ctx context.Context, s *scan.Scanner, prevs map[string]record.Transition) error {
	if len(prevs) == 0 {
		return nil
	}
	var targets []types.Target
	for ref := range prevs {
		targets = append(targets, types.Target{Ref: ref, Uses: []types.Use{{Source: "cluster"}}})
	}
	k.mu.Lock()
	gen := k.gen
	k.mu.Unlock()
	res, err := s.Run(ctx, targets)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, im := range res.Images {
		for ref, t := range prevs {
			if n, _, err := s.Parse(ref); err == nil && n == im.Reference {
				k.whole[ref], k.wholeIn[ref] = wholeness(im.Verdict), gen
				k.w.log.Warn("unplanned upgrade: its previous digest walked", append(upgradeAttrs(t),
					"previous_digest", k.whole[ref], "advice", upgradeAdvice(Upgrade{Transition: t}, k.w.cfg.HistoryHint))...)
			}
		}
	}
	return nil
}

// learnRunning notes how whole each running digest the walk walked was
// (k.mu held): a container that moves off one of them needs no walk of
// its previous digest before the next periodic walk, so that during churn
// the registry is asked about new digests only, not about each status
// change (BenchmarkWatch: 602 requests in a minute of restarts between
// digests walked already, before).
func (k *walker) learnRunning(res *types.Result) {
	if res == nil {
		return
	}
	for ref, v := range res.Running {
		k.whole[ref], k.wholeIn[ref] = wholeness(v), k.gen
	}
}

func wholeness(v types.Verdict) string {
	switch v {
	case types.Broken:
		return "not whole"
	case types.Unknown:
		return "unknown"
	}
	return "whole"
}

// merge folds a walk's result into the last one: a whole walk replaces it,
// a walk of new references replaces the images it walked.
func (k *walker) merge(res *types.Result, all bool, inv *inventory.Inventory) {
	if all { // what runs no more is forgotten: walked again should it return
		k.walked = make(map[string]bool, len(k.walked))
	}
	for _, c := range inv.Containers {
		k.walked[c.Image] = true
		if c.RunningDigest != "" {
			k.walked[imageref.RunningOf(c.Image, c.RunningDigest)] = true
		}
	}
	if res == nil {
		if k.result == nil {
			k.result = &types.Result{Started: time.Now()}
		}
		return
	}
	textless(res)
	if all || k.result == nil {
		k.result = res
		return
	}
	// A new Result and Images, never the last one changed: a scrape may
	// be reading the last one (the per-use series are made from it).
	merged := *k.result
	merged.Images = slices.Clone(k.result.Images)
	byRef := map[string]int{}
	for i, im := range merged.Images {
		byRef[im.Reference] = i
	}
	for _, im := range res.Images {
		if i, ok := byRef[im.Reference]; ok {
			merged.Images[i] = im
		} else {
			merged.Images = append(merged.Images, im)
		}
	}
	merged.Requests = types.SumRequests(append(slices.Clone(k.result.Requests), res.Requests...))
	merged.RateLimits = res.RateLimits
	k.result = &merged
}

// textless drops the text of a fresh walk's findings (not yet read by a
// scrape): the watcher shows them only as series, by code and severity,
// and the alerts carry each code's advice; at 10,000 pods a message and
// advice per use were megabytes held for the life of the walk.
func textless(res *types.Result) {
	for _, im := range res.Images {
		for i := range im.Findings {
			im.Findings[i].Message, im.Findings[i].Advice = "", ""
		}
	}
}

// useKey is one use of an image by an owner's container or image volume,
// in one pod ("" for a template's).
type useKey struct{ ns, kind, name, pod, container, volume string }

// present keeps, of each image, the uses inv still holds, and the images
// with one left: a series goes when its pod or workload goes, at the next
// walk, and not before.
func present(ims []*types.Image, inv *inventory.Inventory) []*types.Image {
	have := make(map[useKey]bool, len(inv.Containers))
	for _, c := range inv.Containers {
		k := useKey{c.Namespace, c.OwnerKind, c.OwnerName, c.Pod, c.Container, ""}
		if c.ImageVolume() {
			k.container, k.volume = "", c.Container
		}
		have[k] = true
	}
	out := make([]*types.Image, 0, len(ims)) // ims may be read by a scrape: not changed
	for _, im := range ims {
		gone := func(u types.Use) bool {
			return u.Source == "cluster" && !have[useKey{u.Namespace, u.Kind, u.Name, u.Pod, u.Container, u.Volume}]
		}
		if slices.ContainsFunc(im.Uses, gone) {
			cp := *im
			cp.Uses = slices.DeleteFunc(slices.Clone(im.Uses), gone)
			if len(cp.Uses) == 0 {
				continue
			}
			im = &cp
		}
		out = append(out, im)
	}
	return out
}

// publish adds the findings of the unplanned upgrades that stand to a copy
// of the result and swaps in its series. Each upgrade was logged once, at
// its transition; a walk of everything (all) logs how many stand.
func (k *walker) publish(res *types.Result, all bool) {
	if res == nil {
		return
	}
	k.plat.learn(res, all)
	k.w.mu.Lock()
	dropped := k.w.st.dropSiblings()
	ups := k.w.st.upgrades()
	k.w.mu.Unlock()
	for _, u := range dropped {
		k.w.log.Info("not an upgrade: the two digests are two platforms of one index", "namespace", u.Namespace,
			"owner", u.OwnerKind+"/"+u.OwnerName, "container", u.Container+u.Volume, "from", u.From, "to", u.To)
	}
	k.mu.Lock()
	if all {
		k.trimWhole(ups)
	}
	whole := make(map[string]string, len(k.whole))
	for r, v := range k.whole {
		whole[r] = v
	}
	k.mu.Unlock()
	out := withUpgrades(res, ups, whole, k.w.cfg.HistoryHint)
	if err := k.w.metrics.publishWalk(out); err != nil {
		k.w.log.Error("gathering the deep walk's series (kept the last)", "err", err)
	}
	if all && len(ups) > 0 {
		k.w.log.Warn("unplanned upgrades stand (see regcheck_unplanned_upgrade)", "count", len(ups), "owners", upgradeOwners(ups, 10))
	}
}

// trimWhole forgets what was found of the previous digests of upgrades
// that no longer stand and were not found during this periodic walk, so
// that whole holds no more than what runs needs.
func (k *walker) trimWhole(ups map[slot]Upgrade) {
	standing := make(map[string]bool, len(ups))
	for _, u := range ups {
		standing[imageref.RunningOf(u.Image, u.From)] = true
	}
	for r := range k.whole {
		if !standing[r] && k.wholeIn[r] != k.gen {
			delete(k.whole, r)
			delete(k.wholeIn, r)
		}
	}
}

// withUpgrades returns res with an unplanned-upgrade finding on each image
// an owner container with a standing unplanned upgrade uses.
func withUpgrades(res *types.Result, ups map[slot]Upgrade, whole map[string]string, hint string) *types.Result {
	if len(ups) == 0 {
		return res
	}
	out := *res
	out.Images = make([]*types.Image, len(res.Images))
	made := map[slot]types.Finding{} // an upgrade's finding, made once for every image its slot uses
	for i, im := range res.Images {
		cp := *im
		cp.Findings = append([]types.Finding(nil), im.Findings...)
		if cp.Reference != "" {
			for _, k := range upgradedSlots(im, ups) {
				f, ok := made[k]
				if !ok {
					f = upgradeFinding(ups[k], whole, hint)
					made[k] = f
				}
				cp.Findings = append(cp.Findings, f)
			}
		}
		cp.UpdateVerdict()
		out.Images[i] = &cp
	}
	return &out
}

// upgradedSlots are the slots with an upgrade that use im with a pod,
// each once, looked up by use (not by upgrade: at 10,000 pods, 10,000
// upgrades times every use of every image was seconds of each publish).
func upgradedSlots(im *types.Image, ups map[slot]Upgrade) []slot {
	var out []slot
	for _, u := range im.Uses {
		k := slot{u.Namespace, u.Kind, u.Name, u.Container, u.Volume}
		if _, ok := ups[k]; ok && u.Pod != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// upgradeFinding is the unplanned-upgrade finding of u.
func upgradeFinding(u Upgrade, whole map[string]string, hint string) types.Finding {
	f := types.NewAdvisedFinding(types.UnplannedUpgrade, u.To, "",
		upgradeMessage(u, whole[imageref.RunningOf(u.Image, u.From)]), upgradeAdvice(u, hint))
	if u.NodeCache {
		f.Severity = types.SeverityWarning // nothing to pin back: a node's cache is behind
	}
	return f
}

// refreshRecords queues every running container of inv, the cluster at
// taken, as a sighting then, so that the history's lastSeen stays within
// one Interval of now, as a nightly record keeps it within a day; and
// forgets the slots of workloads gone. A change seen since taken is newer
// than the sighting: the sighting never makes a digest the pod left look
// like its last.
func (w *Watcher) refreshRecords(inv *inventory.Inventory, taken time.Time) {
	snap := record.FromInventory(w.cfg.Cluster, taken, inv)
	owners := map[owner]bool{}
	for _, c := range inv.Containers {
		owners[owner{c.Namespace, c.OwnerKind, c.OwnerName}] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.batch.add(snap.Entries, nil)
	w.st.prune(owners)
}
