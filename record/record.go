package record

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/results/recordresult"
)

// SchemaVersion is the history format this package reads and writes.
const SchemaVersion = 1

// FromInventory makes a snapshot of the containers and image volumes inv
// saw in pods. Template entries (no pod) are left out: nothing runs them.
// cluster names the cluster (kubeconfig context name, or server URL); now
// is the snapshot time.
func FromInventory(cluster string, now time.Time, inv *inventory.Inventory) recordresult.Snapshot {
	now = now.UTC()
	s := recordresult.Snapshot{Cluster: cluster, Time: now}
	if n := len(inv.Containers); n > 0 {
		s.Entries = make([]recordresult.Entry, 0, n) // a watcher makes one of every container each walk
	}
	for _, c := range inv.Containers {
		if c.Template() {
			continue
		}
		e := recordresult.Entry{
			Cluster: cluster, Time: now,
			Namespace: c.Namespace, OwnerKind: c.OwnerKind, OwnerName: c.OwnerName,
			Pod: c.Pod, Container: c.Container, Image: c.Image,
			Digest: c.RunningDigest, ImageID: c.ImageID, Node: c.Node, PullPolicy: c.PullPolicy,
			StartedAt: c.StartedAt, RestartCount: c.RestartCount,
		}
		if c.ImageVolume() {
			e.Container, e.Volume = "", c.Container
		}
		s.Entries = append(s.Entries, e)
	}
	return s
}

// Key identifies a Record: one digest run by one container (or mounted by
// one image volume: Volume set, Container empty) of one owner.
type Key struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	OwnerKind string `json:"ownerKind"`
	OwnerName string `json:"ownerName"`
	Container string `json:"container"`
	Volume    string `json:"volume,omitempty"`
	Digest    string `json:"digest"`
}

// Record is a Key's history: when it was first and last seen, and what the
// last sighting looked like.
type Record struct {
	Key
	FirstSeen    time.Time `json:"firstSeen"`
	LastSeen     time.Time `json:"lastSeen"`
	Pod          string    `json:"pod"`
	Node         string    `json:"node,omitempty"`
	Image        string    `json:"image"`
	ImageID      string    `json:"imageID,omitempty"`
	PullPolicy   string    `json:"pullPolicy,omitempty"`
	StartedAt    time.Time `json:"startedAt,omitzero"`
	RestartCount int32     `json:"restartCount"`
}

// History is the merged record of every snapshot. Records are kept sorted by Key.
type History struct {
	SchemaVersion int      `json:"schemaVersion"`
	Records       []Record `json:"records"`
	// Transitions are the changes of running digest regcheck watch saw,
	// oldest first; readers that predate them ignore them.
	Transitions []Transition `json:"transitions,omitempty"`
}

// NewHistory returns an empty history.
func NewHistory() *History { return &History{SchemaVersion: SchemaVersion} }

// keyOf is the key of the record an entry merges into.
func keyOf(e recordresult.Entry) Key {
	return Key{e.Cluster, e.Namespace, e.OwnerKind, e.OwnerName, e.Container, e.Volume, e.Digest}
}

func compareKeys(a, b Key) int {
	return cmp.Or(
		strings.Compare(a.Cluster, b.Cluster),
		strings.Compare(a.Namespace, b.Namespace),
		strings.Compare(a.OwnerKind, b.OwnerKind),
		strings.Compare(a.OwnerName, b.OwnerName),
		strings.Compare(a.Container, b.Container),
		strings.Compare(a.Volume, b.Volume),
		strings.Compare(a.Digest, b.Digest),
	)
}

// Merge adds s to h. A record whose key the snapshot saw again gets its
// LastSeen and last pod, node, image and restart count updated (when the
// snapshot is newer) and its FirstSeen moved back (when the snapshot is
// older); new keys get a new record. Merge never removes a record.
//
// The records held are found by binary search (they are sorted by Key),
// so that a merge allocates for what it adds, not for what h holds: the
// watcher merges each batch into a history of every container.
func (h *History) Merge(s recordresult.Snapshot) {
	h.sort()
	held := h.Records[:len(h.Records):len(h.Records)]
	added := map[Key]int{}
	for _, e := range s.Entries {
		if e.Cluster == "" {
			e.Cluster = s.Cluster
		}
		if e.Time.IsZero() {
			e.Time = s.Time
		}
		e.Time = e.Time.UTC()
		k := keyOf(e)
		i, ok := slices.BinarySearchFunc(held, k, func(r Record, k Key) int { return compareKeys(r.Key, k) })
		if !ok {
			i, ok = added[k]
		}
		if !ok {
			h.Records = append(h.Records, Record{Key: k, FirstSeen: e.Time})
			i = len(h.Records) - 1
			added[k] = i
		}
		r := &h.Records[i]
		if e.Time.Before(r.FirstSeen) {
			r.FirstSeen = e.Time
		}
		if !e.Time.Before(r.LastSeen) {
			r.LastSeen = e.Time
			r.Pod, r.Node, r.Image, r.ImageID = e.Pod, e.Node, e.Image, e.ImageID
			r.PullPolicy, r.StartedAt, r.RestartCount = e.PullPolicy, e.StartedAt, e.RestartCount
		}
	}
	h.mergeAdded(len(held))
}

// mergeAdded sorts the records added after the first n (which are
// sorted) and merges them in, in place from the end: the watcher adds a
// few hundred records to tens of thousands at each write, which a sort of
// them all made most of its Merge.
func (h *History) mergeAdded(n int) {
	byKey := func(a, b Record) int { return compareKeys(a.Key, b.Key) }
	added := slices.Clone(h.Records[n:])
	if len(added) == 0 {
		return
	}
	slices.SortFunc(added, byKey)
	i, j := n-1, len(added)-1
	for k := len(h.Records) - 1; j >= 0; k-- {
		if i >= 0 && byKey(h.Records[i], added[j]) > 0 {
			h.Records[k] = h.Records[i]
			i--
		} else {
			h.Records[k] = added[j]
			j--
		}
	}
}

func (r Record) entry(t time.Time) recordresult.Entry {
	return recordresult.Entry{
		Cluster: r.Cluster, Time: t, Namespace: r.Namespace, OwnerKind: r.OwnerKind, OwnerName: r.OwnerName,
		Pod: r.Pod, Container: r.Container, Volume: r.Volume, Image: r.Image, Digest: r.Digest, ImageID: r.ImageID,
		Node: r.Node, PullPolicy: r.PullPolicy, StartedAt: r.StartedAt, RestartCount: r.RestartCount,
	}
}

func (h *History) sort() {
	byKey := func(a, b Record) int { return compareKeys(a.Key, b.Key) }
	if !slices.IsSortedFunc(h.Records, byKey) {
		slices.SortFunc(h.Records, byKey)
	}
}

// Latest returns the most recent snapshot of cluster that h holds: the
// records last seen at the cluster's latest LastSeen, with their last pod.
// It holds one entry per (owner, container, digest), not per pod. ok is
// false when h has nothing for cluster. Save compares with Previous instead:
// a run limited to one namespace is not the previous snapshot of another.
func (h *History) Latest(cluster string) (s recordresult.Snapshot, ok bool) {
	var last time.Time
	for _, r := range h.Records {
		if r.Cluster == cluster && r.LastSeen.After(last) {
			last = r.LastSeen
		}
	}
	if last.IsZero() {
		return recordresult.Snapshot{}, false
	}
	s = recordresult.Snapshot{Cluster: cluster, Time: last}
	for _, r := range h.Records {
		if r.Cluster == cluster && r.LastSeen.Equal(last) {
			s.Entries = append(s.Entries, r.entry(last))
		}
	}
	return s, true
}

// Previous returns what h held, before cur, for the owner containers in
// cur: for each (cluster, namespace, owner kind, owner name, container) of
// cur, the records of that owner container with the greatest LastSeen
// earlier than cur.Time (any LastSeen when cur.Time is zero), each as an
// entry at its LastSeen with its last pod. Owner containers are compared
// with their own last sighting, not with a cluster-wide latest snapshot, so
// runs limited to different namespaces do not hide each other's changes;
// the result is what Diff(prev, cur) needs.
//
// The returned snapshot's Cluster is cur's, and its Time the earliest
// LastSeen among the records it holds (every change Diff finds happened
// after it); Time is zero and Entries empty when no owner container of cur
// has earlier records.
func (h *History) Previous(cur recordresult.Snapshot) recordresult.Snapshot {
	want := map[ownerC]bool{}
	for _, e := range cur.Entries {
		want[ownerOf(e, cur.Cluster)] = true
	}
	before := func(t time.Time) bool { return cur.Time.IsZero() || t.Before(cur.Time) }
	last := map[ownerC]time.Time{}
	for _, r := range h.Records {
		o := r.owner()
		if want[o] && before(r.LastSeen) && r.LastSeen.After(last[o]) {
			last[o] = r.LastSeen
		}
	}
	prev := recordresult.Snapshot{Cluster: cur.Cluster}
	for _, r := range h.Records {
		t, ok := last[r.owner()]
		if !ok || !r.LastSeen.Equal(t) {
			continue
		}
		prev.Entries = append(prev.Entries, r.entry(t))
		if prev.Time.IsZero() || t.Before(prev.Time) {
			prev.Time = t
		}
	}
	return prev
}

// Query selects the records of one container (or image volume) of one owner.
type Query struct {
	Cluster                         string // "" matches every cluster
	Namespace, OwnerKind, OwnerName string
	Container                       string
	Volume                          string // an image volume's name; Container is then ""
}

// Running returns the record of the digest most recently seen running for
// q: the greatest LastSeen, and among records last seen at the same time
// (an owner whose pods ran different digests at the last snapshot) the one
// first seen most recently, the newest rollout. Records without a digest are
// skipped. Use Find to see whether the choice was ambiguous (regcheck pin
// --from-records does, and pins nothing when it is).
func (h *History) Running(q Query) (Record, bool) {
	rs := h.Find(q)
	if len(rs) == 0 {
		return Record{}, false
	}
	return rs[0], true
}

// Find returns every record with a digest for q, newest first: by
// LastSeen, then FirstSeen, both descending, then by digest.
func (h *History) Find(q Query) []Record {
	var out []Record
	for _, r := range h.Records {
		if r.Digest == "" || q.Cluster != "" && r.Cluster != q.Cluster ||
			r.Namespace != q.Namespace || r.OwnerKind != q.OwnerKind || r.OwnerName != q.OwnerName ||
			r.Container != q.Container || r.Volume != q.Volume {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(b.LastSeen.Compare(a.LastSeen), b.FirstSeen.Compare(a.FirstSeen), strings.Compare(a.Digest, b.Digest), strings.Compare(a.Cluster, b.Cluster))
	})
	return out
}

// Diff reports the containers of cur running a different digest than at
// prev, which should be the previous snapshot of the same cluster, or the
// previous sighting of each owner container as History.Previous returns it.
// A pod present in both is compared with itself; a pod new in cur is
// compared with every digest its owner's container ran in prev, and
// reported only if its digest is not among them. Containers with no digest on either side, and
// owners absent from prev, are not changes.
func Diff(prev, cur recordresult.Snapshot) []recordresult.Change {
	type podC struct {
		ownerC
		pod string
	}
	byPod := map[podC]string{}
	byOwner := map[ownerC][]string{}
	for _, e := range prev.Entries {
		if e.Digest == "" {
			continue
		}
		o := ownerOf(e, prev.Cluster)
		byPod[podC{o, e.Pod}] = e.Digest
		if !slices.Contains(byOwner[o], e.Digest) {
			byOwner[o] = append(byOwner[o], e.Digest)
		}
	}
	var out []recordresult.Change
	for _, e := range cur.Entries {
		if e.Digest == "" {
			continue
		}
		o := ownerOf(e, cur.Cluster)
		var from []string
		if d, ok := byPod[podC{o, e.Pod}]; ok {
			if d == e.Digest {
				continue
			}
			from = []string{d}
		} else {
			ds := byOwner[o]
			if len(ds) == 0 || slices.Contains(ds, e.Digest) {
				continue
			}
			from = slices.Sorted(slices.Values(ds))
		}
		out = append(out, recordresult.Change{
			Cluster: o.cluster, Namespace: e.Namespace, OwnerKind: e.OwnerKind, OwnerName: e.OwnerName, Container: e.Container,
			Volume: e.Volume, Pod: e.Pod, Node: e.Node, Image: e.Image, From: from, To: e.Digest,
		})
	}
	return out
}

// ownerC is one container, or image volume, of one owner in one cluster.
type ownerC struct{ cluster, ns, kind, name, container, volume string }

// ownerOf is e's owner container; cluster is the snapshot's, for an entry
// that names none.
func ownerOf(e recordresult.Entry, cluster string) ownerC {
	return ownerC{cmp.Or(e.Cluster, cluster), e.Namespace, e.OwnerKind, e.OwnerName, e.Container, e.Volume}
}
