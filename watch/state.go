package watch

import (
	"maps"
	"slices"
	"time"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

// slot is one container (or image volume) of one owner: what a transition
// is about.
type slot struct{ ns, kind, name, container, volume string }

func slotOf(c inventory.Container) slot {
	if c.ImageVolume() {
		return slot{c.Namespace, c.OwnerKind, c.OwnerName, "", c.Container}
	}
	return slot{c.Namespace, c.OwnerKind, c.OwnerName, c.Container, ""}
}

func (s slot) query(cluster string) record.Query {
	return record.Query{Cluster: cluster, Namespace: s.ns, OwnerKind: s.kind, OwnerName: s.name, Container: s.container, Volume: s.volume}
}

// podRun is what one pod runs in one slot.
type podRun struct {
	digest, image string
	restarts      int32
}

// podRuns are what each pod of a slot runs, by pod name. Most slots have
// one pod: a slice, searched in order, holds it in a tenth of a map's
// bytes (a watcher has a slot per container of every workload, ten
// thousand and more). A slot of many pods (a DaemonSet, a large
// Deployment) is indexed by pod once it has more than podRunsScan, so that
// no event costs a search of thousands.
type podRuns struct {
	runs []namedRun
	at   map[string]int // index in runs by pod; nil while runs is short
}

// podRunsScan is how many pods a slot searches in order before it keeps
// an index.
const podRunsScan = 16

type namedRun struct {
	pod string
	podRun
}

func (rs *podRuns) find(pod string) int {
	if rs.at != nil {
		if i, ok := rs.at[pod]; ok {
			return i
		}
		return -1
	}
	for i := range rs.runs {
		if rs.runs[i].pod == pod {
			return i
		}
	}
	return -1
}

// get is what pod runs, and whether it runs in the slot.
func (rs *podRuns) get(pod string) (podRun, bool) {
	if i := rs.find(pod); i >= 0 {
		return rs.runs[i].podRun, true
	}
	return podRun{}, false
}

// set records what pod runs.
func (rs *podRuns) set(pod string, r podRun) {
	if i := rs.find(pod); i >= 0 {
		rs.runs[i].podRun = r
		return
	}
	rs.runs = append(rs.runs, namedRun{pod, r})
	switch {
	case rs.at != nil:
		rs.at[pod] = len(rs.runs) - 1
	case len(rs.runs) > podRunsScan:
		rs.at = make(map[string]int, len(rs.runs))
		for i, n := range rs.runs {
			rs.at[n.pod] = i
		}
	}
}

// remove forgets pod: the last pod takes its place.
func (rs *podRuns) remove(pod string) {
	i := rs.find(pod)
	if i < 0 {
		return
	}
	last := len(rs.runs) - 1
	rs.runs[i] = rs.runs[last]
	rs.runs[last] = namedRun{}
	rs.runs = rs.runs[:last]
	if rs.at != nil {
		delete(rs.at, pod)
		if i < last {
			rs.at[rs.runs[i].pod] = i
		}
		if len(rs.runs) == 0 {
			rs.at = nil
		}
	}
}

// len is how many pods run in the slot.
func (rs *podRuns) len() int { return len(rs.runs) }

// slotState is what the watcher knows of one slot: the digest it ran last
// (and the spec image then), what each of its pods runs, and the unplanned
// upgrade that stands, if any.
type slotState struct {
	last, lastImage string
	// recent are the digests the history saw at the slot's last sighting
	// (several during a rollout), until the next transition.
	recent []string
	pods   podRuns
	// upgrade is the unplanned upgrade that stands: the last transition,
	// unplanned, while a pod still runs its To.
	upgrade *Upgrade
	// older are the digests the slot ran before its last (newest last, at
	// most maxOlder): what a node may still hold in its cache.
	older []string
}

// maxOlder bounds a slot's older digests.
const maxOlder = 4

// Upgrade is an unplanned upgrade that stands: the transition, and
// whether the container has crash-looped since.
type Upgrade struct {
	record.Transition
	// CrashLoop is true once the container restarted again after the
	// transition and is in CrashLoopBackOff or last exited non-zero:
	// the crash loop began with this image change.
	CrashLoop bool
	// Restarts is the container's restart count when last seen.
	Restarts int32
	// NodeCache is true when no tag moved: a pod new to the owner, with
	// pull policy IfNotPresent or Never, started on a node that still
	// holds a digest the owner ran before. Nobody needs to pin anything
	// back; the node's cache is behind.
	NodeCache bool
}

// siblings reports whether two digests are manifests of one index (the
// same image for two platforms: on CRI-O a container's imageID is its
// platform manifest's digest). It answers from what walks learned; false
// when it does not know.
type siblings func(a, b string) bool

// sighting is one container (or image volume) of one pod as an event
// showed it, with what the inventory does not keep.
type sighting struct {
	c inventory.Container
	// lastReason and lastExit are the container status's last termination.
	lastReason string
	lastExit   *int32
	// templateImage is the owner's pod template's image for this container
	// now; "" when unknown (a bare pod, a kind with no template).
	templateImage string
}

// state is the per-slot state machine. It is not safe for concurrent use:
// the watcher holds its lock around every call.
type state struct {
	cluster string
	// siblings tells two platforms of one index apart from a moved tag;
	// nil knows none.
	siblings siblings
	slots    map[slot]*slotState
	// podSlots are the slots each pod ("ns/name") runs in.
	podSlots map[string][]slot
	// hist is what a slot with no state starts from, by slot: what the
	// history loaded at the last reconcile held of it, or what the slot
	// knew when its last pod went. A slot takes its entry out when it
	// starts, so that each is held once.
	hist map[slot]histSlot
	// crashed are the upgrades whose crash loop began since the watcher
	// last took them (takeCrashed), to say once.
	crashed []Upgrade
	// seen keeps, per slot, the last transition observed (written or not),
	// so that a reconcile by a new leader records it with the time it was
	// first seen rather than the time of the reconcile. When that
	// transition is the slot's standing upgrade, it is the upgrade's own,
	// held once.
	seen map[slot]*record.Transition
}

// histSlot is what a slot starts from: the digest it ran last and the
// spec image then, the digests seen at its last sighting (several during a
// rollout), the digests it ran before, and its last transition when that
// is an unplanned upgrade of the last digest.
type histSlot struct {
	last, lastImage string
	recent          []string
	older           []string
	upgrade         *record.Transition
}

func newState(cluster string) *state {
	return &state{cluster: cluster, slots: map[slot]*slotState{}, podSlots: map[string][]slot{},
		hist: map[slot]histSlot{}, seen: map[slot]*record.Transition{}}
}

// reset starts over from h: every slot is forgotten (the pods are observed
// again next), and slots seen from now on start from what h holds.
func (s *state) reset(h *record.History) {
	s.slots, s.podSlots = map[slot]*slotState{}, map[string][]slot{}
	s.hist = map[slot]histSlot{}
	records := map[slot][]record.Record{}
	for _, r := range h.Records {
		if r.Digest == "" || r.Cluster != s.cluster {
			continue
		}
		k := slot{r.Namespace, r.OwnerKind, r.OwnerName, r.Container, r.Volume}
		records[k] = append(records[k], r)
	}
	last := map[slot]record.Transition{}
	for _, t := range h.Transitions { // oldest first, as h keeps them
		if t.Cluster == s.cluster {
			last[slot{t.Namespace, t.OwnerKind, t.OwnerName, t.Container, t.Volume}] = t
		}
	}
	for k, rs := range records {
		t, ok := last[k]
		s.hist[k] = compact(rs, t, ok)
	}
}

// compact is what a slot starts from, of its records and last transition
// t (ok false: none).
func compact(rs []record.Record, t record.Transition, ok bool) histSlot {
	slices.SortFunc(rs, func(a, b record.Record) int { // newest first
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		return b.FirstSeen.Compare(a.FirstSeen)
	})
	hs := histSlot{last: rs[0].Digest, lastImage: rs[0].Image}
	for _, r := range rs {
		switch {
		case r.LastSeen.Equal(rs[0].LastSeen):
			hs.recent = append(hs.recent, r.Digest)
		case r.Digest != hs.last && !slices.Contains(hs.older, r.Digest):
			hs.older = append(hs.older, r.Digest)
		}
	}
	slices.Reverse(hs.older) // oldest first, as a slot keeps them
	if ok && !t.TemplateChanged && !t.FirstSeen() && t.To == hs.last {
		hs.upgrade = &t
	}
	return hs
}

// slotFor returns k's state, starting it from hist when new.
func (s *state) slotFor(k slot) *slotState {
	if st, ok := s.slots[k]; ok {
		return st
	}
	st := &slotState{}
	if hs, ok := s.hist[k]; ok {
		st.last, st.lastImage, st.older, st.recent = hs.last, hs.lastImage, hs.older, hs.recent
		if t := hs.upgrade; t != nil {
			st.upgrade = &Upgrade{Transition: *t, Restarts: t.RestartCount}
		}
		delete(s.hist, k)
	}
	s.slots[k] = st
	return st
}

// retire ends the state of slot k, whose last pod went and whose upgrade,
// if any, ended: a bare pod's slot is forgotten (its pod is gone), another
// keeps what it ran in hist, compact, for the owner's next pod.
func (s *state) retire(k slot, st *slotState) {
	delete(s.slots, k)
	delete(s.seen, k)
	if k.kind == inventory.KindPod || st.last == "" {
		return
	}
	s.hist[k] = histSlot{last: st.last, lastImage: st.lastImage, older: st.older}
}

// prune forgets what hist holds of the owners not among those running or
// declared now (owners): a deleted workload's slots.
func (s *state) prune(owners map[owner]bool) {
	for k := range s.hist {
		if !owners[owner{k.ns, k.kind, k.name}] {
			delete(s.hist, k)
		}
	}
}

// owner is a workload: its namespace, kind and name.
type owner struct{ ns, kind, name string }

// observe takes the containers of pod ns/name as they are now. It returns
// the entries to merge into the history (a container whose digest, pod or
// restart count is new) and the transitions it saw.
func (s *state) observe(now time.Time, ns, pod string, ss []sighting) ([]recordresult.Entry, []record.Transition) {
	key := ns + "/" + pod
	var entries []recordresult.Entry
	var ts []record.Transition
	var slots []slot
	for _, x := range ss {
		c := x.c
		if c.RunningDigest == "" {
			continue
		}
		k := slotOf(c)
		slots = append(slots, k)
		st := s.slotFor(k)
		prev, had := st.pods.get(pod)
		if had && prev.digest == c.RunningDigest && prev.restarts == c.RestartCount {
			s.trackCrash(st, x)
			continue
		}
		if t, ok := s.transition(now, k, st, x, prev, had); ok {
			ts = append(ts, t)
		}
		st.pods.set(pod, podRun{c.RunningDigest, c.Image, c.RestartCount})
		s.trackCrash(st, x)
		entries = append(entries, s.entry(now, c))
	}
	s.leave(pod, key, slots)
	return entries, ts
}

// transition decides whether x is a change of k's running digest: the
// same pod running another digest than before, or a pod new to the slot
// running a digest no pod of it runs, that is not the slot's last and that
// the history did not see at its last sighting.
func (s *state) transition(now time.Time, k slot, st *slotState, x sighting, prev podRun, had bool) (record.Transition, bool) {
	d := x.c.RunningDigest
	switch {
	case had && prev.digest == d:
		return record.Transition{}, false
	case !had && (d == st.last || slices.Contains(st.recent, d) || st.runs(d)):
		return record.Transition{}, false
	}
	from, fromImage := st.last, st.lastImage
	if had {
		from, fromImage = prev.digest, prev.image
	}
	if from != "" && s.siblings != nil && s.siblings(from, d) {
		return record.Transition{}, false // another platform of the same index: no change of bits
	}
	t := record.Transition{Cluster: s.cluster, Namespace: k.ns, OwnerKind: k.kind, OwnerName: k.name,
		Container: k.container, Volume: k.volume, Pod: x.c.Pod, Node: x.c.Node,
		Image: x.c.Image, From: from, To: d, Time: now.UTC(),
		RestartCount: x.c.RestartCount, LastTerminationReason: x.lastReason, LastExitCode: x.lastExit}
	if from != "" {
		t.PreviousImage = fromImage
	}
	t.TemplateChanged = from == "" || fromImage != x.c.Image || x.templateImage != "" && x.templateImage != fromImage
	if seen, ok := s.seen[k]; ok && seen.From == t.From && seen.To == t.To {
		t = *seen // seen before a reconcile: keep when it was first seen
	}
	if !had && !t.TemplateChanged && cachedPolicy(x.c.PullPolicy) && s.ranBefore(k, st, d) {
		// A node's cache is behind: the slot's last digest stays what the
		// tag gave last, and an upgrade that stands stays.
		if st.upgrade == nil || !st.runs(st.upgrade.To) {
			st.upgrade = &Upgrade{Transition: t, Restarts: t.RestartCount, NodeCache: true}
		}
		s.see(k, st, t)
		return t, true
	}
	st.remember(from)
	st.last, st.lastImage = d, x.c.Image
	st.recent = nil
	st.upgrade = nil
	if !t.TemplateChanged {
		st.upgrade = &Upgrade{Transition: t, Restarts: t.RestartCount}
	}
	s.see(k, st, t)
	return t, true
}

// see keeps t as the last transition slot k (state st) observed: the
// standing upgrade's own when it is t, else a copy.
func (s *state) see(k slot, st *slotState, t record.Transition) {
	if st.upgrade != nil && st.upgrade.Transition == t {
		s.seen[k] = &st.upgrade.Transition
		return
	}
	s.seen[k] = &t
}

// nodeCache reports whether t, just returned by observe, is a pod started
// from its node's older cached digest: the only unplanned transition
// after which the slot's last digest is not t's To.
func (s *state) nodeCache(t record.Transition) bool {
	st, ok := s.slots[slot{t.Namespace, t.OwnerKind, t.OwnerName, t.Container, t.Volume}]
	return ok && !t.TemplateChanged && !t.FirstSeen() && st.last != t.To
}

// cachedPolicy reports whether a pull policy lets the kubelet start a
// container from the node's cache without asking the registry.
func cachedPolicy(p string) bool { return p == "IfNotPresent" || p == "Never" }

// ranBefore reports whether slot k ran d before its last digest: in this
// process, or in the history it started from.
func (s *state) ranBefore(k slot, st *slotState, d string) bool {
	return slices.Contains(st.older, d) && d != st.last
}

// remember keeps d as one of the slot's older digests.
func (st *slotState) remember(d string) {
	if d == "" {
		return
	}
	st.older = append(slices.DeleteFunc(st.older, func(o string) bool { return o == d }), d)
	if len(st.older) > maxOlder {
		st.older = st.older[len(st.older)-maxOlder:]
	}
}

// dropSiblings ends the standing upgrades whose from and to a walk has
// since shown to be two platforms of one index, and returns them.
func (s *state) dropSiblings() []Upgrade {
	var out []Upgrade
	for _, st := range s.slots {
		if u := st.upgrade; u != nil && s.siblings != nil && s.siblings(u.From, u.To) {
			out = append(out, *u)
			st.upgrade = nil
		}
	}
	return out
}

// runs reports whether a pod of the slot runs d.
func (st *slotState) runs(d string) bool {
	for _, p := range st.pods.runs {
		if p.digest == d {
			return true
		}
	}
	return false
}

// trackCrash marks the standing upgrade of st as crash-looping when the
// container running its To restarted since and is in CrashLoopBackOff or
// last exited non-zero, and notes it in crashed the first time.
func (s *state) trackCrash(st *slotState, x sighting) {
	u := st.upgrade
	if u == nil || x.c.RunningDigest != u.To {
		return
	}
	u.Restarts = max(u.Restarts, x.c.RestartCount)
	failing := x.c.Reason == "CrashLoopBackOff" || x.lastExit != nil && *x.lastExit != 0
	if x.c.RestartCount > u.RestartCount && failing && !u.CrashLoop {
		u.CrashLoop = true
		s.crashed = append(s.crashed, *u)
	}
}

// takeCrashed returns the upgrades whose crash loop began since it was
// last called, and forgets them.
func (s *state) takeCrashed() []Upgrade {
	c := s.crashed
	s.crashed = nil
	return c
}

// leave removes pod from the slots it no longer runs in (all of them when
// slots is empty), and ends the upgrades no pod runs any more.
func (s *state) leave(pod, key string, slots []slot) {
	for _, k := range s.podSlots[key] {
		if slices.Contains(slots, k) {
			continue
		}
		if st, ok := s.slots[k]; ok {
			st.pods.remove(pod)
			if st.upgrade != nil && !st.runs(st.upgrade.To) {
				st.upgrade = nil
			}
			if st.pods.len() == 0 && st.upgrade == nil {
				s.retire(k, st)
			}
		}
	}
	if len(slots) == 0 {
		delete(s.podSlots, key)
		return
	}
	var uniq []slot
	for _, k := range slots {
		if !slices.Contains(uniq, k) {
			uniq = append(uniq, k)
		}
	}
	s.podSlots[key] = uniq
}

// forget is a pod deleted.
func (s *state) forget(ns, pod string) { s.leave(pod, ns+"/"+pod, nil) }

// entry is what the history records of c now.
func (s *state) entry(now time.Time, c inventory.Container) recordresult.Entry {
	e := recordresult.Entry{Cluster: s.cluster, Time: now.UTC(), Namespace: c.Namespace, OwnerKind: c.OwnerKind, OwnerName: c.OwnerName,
		Pod: c.Pod, Container: c.Container, Image: c.Image, Digest: c.RunningDigest, ImageID: c.ImageID,
		Node: c.Node, PullPolicy: c.PullPolicy, StartedAt: c.StartedAt, RestartCount: c.RestartCount}
	if c.ImageVolume() {
		e.Container, e.Volume = "", c.Container
	}
	return e
}

// upgrades returns the unplanned upgrades that stand, by slot.
func (s *state) upgrades() map[slot]Upgrade {
	out := map[slot]Upgrade{}
	for k, st := range s.slots {
		if st.upgrade != nil {
			out[k] = *st.upgrade
		}
	}
	return out
}

// slotsRunning returns how many slots have a pod.
func (s *state) slotsRunning() int {
	n := 0
	for st := range maps.Values(s.slots) {
		if st.pods.len() > 0 {
			n++
		}
	}
	return n
}
