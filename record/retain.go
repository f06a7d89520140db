package record

import "slices"

// Retain bounds h by owner container: of each, its newest limit records
// (by LastSeen) and newest limit transitions (by Time) are kept, and
// always what a split store keeps first (Split's rankNewest and rankLast:
// the records last seen at the owner's newest sighting, the digest a
// standing unplanned upgrade left, the last transition), which a reconcile
// after a failover and pinning back read. It returns how many records and
// transitions it dropped; a limit below 1 keeps everything. Like a
// Deployment's revisionHistoryLimit, it keeps a long-running watcher's
// history, and so its memory and each write, from growing with every
// restart of every pod.
func (h *History) Retain(limit int) int {
	if limit < 1 || !h.exceeds(limit) {
		return 0
	}
	recs, trs := map[ownerC]int{}, map[ownerC]int{}
	var gone []aged
	for _, it := range h.ranked() {
		o, n := h.itemOwner(it.aged), trs
		if it.rec >= 0 {
			n = recs
		}
		n[o]++
		if it.rank == rankOlder && n[o] > limit {
			gone = append(gone, it.aged)
		}
	}
	if len(gone) == 0 {
		return 0
	}
	*h = *h.without(gone)
	return len(gone)
}

// exceeds reports whether some owner container has more than limit
// records or more than limit transitions. The common case, a history
// within bounds, costs one pass over each and allocates one counter per
// record: the records are sorted by Key, so an owner's are contiguous and
// a transition's owner is found by binary search (a map of owners would
// be megabytes of garbage at each of the watcher's writes).
func (h *History) exceeds(limit int) bool {
	n := 0
	for i := range h.Records {
		if i == 0 || h.Records[i].owner() != h.Records[i-1].owner() {
			n = 0
		}
		if n++; n > limit {
			return true
		}
	}
	if len(h.Transitions) <= limit {
		return false
	}
	h.sort()
	counts := make([]int32, len(h.Records)+1) // by the owner's first record; the last: owners without one
	var orphans map[ownerC]int
	for _, t := range h.Transitions {
		o := t.owner()
		i, _ := slices.BinarySearchFunc(h.Records, o, func(r Record, o ownerC) int { return compareOwners(r.owner(), o) })
		if i == len(h.Records) || h.Records[i].owner() != o {
			if orphans == nil {
				orphans = map[ownerC]int{}
			}
			if orphans[o]++; orphans[o] > limit {
				return true
			}
			continue
		}
		if counts[i]++; int(counts[i]) > limit {
			return true
		}
	}
	return false
}

// compareOwners orders owner containers as their records' keys are.
func compareOwners(a, b ownerC) int {
	return compareKeys(Key{a.cluster, a.ns, a.kind, a.name, a.container, a.volume, ""}, Key{b.cluster, b.ns, b.kind, b.name, b.container, b.volume, ""})
}

// itemOwner is the owner container of one record or transition of h.
func (h *History) itemOwner(a aged) ownerC {
	if a.rec >= 0 {
		return h.Records[a.rec].owner()
	}
	return h.Transitions[a.tr].owner()
}

// owner is r's owner container.
func (r Record) owner() ownerC {
	return ownerC{r.Cluster, r.Namespace, r.OwnerKind, r.OwnerName, r.Container, r.Volume}
}
