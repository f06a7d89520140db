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
	if limit < 1 {
		return 0
	}
	over := h.overLimit(limit)
	if len(over) == 0 {
		return 0
	}
	// Only the owners over the limit are ranked: an owner's ranks depend
	// on its own items alone, and under churn few owners changed since
	// the last write, while the history holds every container's.
	sub, recAt, trAt := h.of(over)
	recs, trs := map[ownerC]int{}, map[ownerC]int{}
	dropRec, dropTr := map[int]bool{}, map[int]bool{}
	for _, it := range sub.ranked() {
		o, n := sub.itemOwner(it.aged), trs
		if it.rec >= 0 {
			n = recs
		}
		n[o]++
		if it.rank != rankOlder || n[o] <= limit {
			continue
		}
		if it.rec >= 0 {
			dropRec[recAt[it.rec]] = true
		} else {
			dropTr[trAt[it.tr]] = true
		}
	}
	h.Records = deleteAt(h.Records, dropRec)
	h.Transitions = deleteAt(h.Transitions, dropTr)
	return len(dropRec) + len(dropTr)
}

// of is the part of h that owners hold, and for each of its records and
// transitions its index in h.
func (h *History) of(owners map[ownerC]bool) (sub *History, recAt, trAt []int) {
	sub = NewHistory()
	for i, r := range h.Records {
		if owners[r.owner()] {
			sub.Records, recAt = append(sub.Records, r), append(recAt, i)
		}
	}
	for i, t := range h.Transitions {
		if owners[t.owner()] {
			sub.Transitions, trAt = append(sub.Transitions, t), append(trAt, i)
		}
	}
	return sub, recAt, trAt
}

// deleteAt removes the elements at the indexes drop names, in place.
func deleteAt[T any](s []T, drop map[int]bool) []T {
	if len(drop) == 0 {
		return s
	}
	i := 0
	return slices.DeleteFunc(s, func(T) bool {
		d := drop[i]
		i++
		return d
	})
}

// overLimit returns the owner containers that have more than limit
// records or more than limit transitions; nil when none has. The common
// case, a history within bounds, costs one pass over each and allocates
// one counter per record: the records are sorted by Key, so an owner's are
// contiguous and a transition's owner is found by binary search (a map of
// every owner would be megabytes of garbage at each of the watcher's
// writes).
func (h *History) overLimit(limit int) map[ownerC]bool {
	var over map[ownerC]bool
	add := func(o ownerC) {
		if over == nil {
			over = map[ownerC]bool{}
		}
		over[o] = true
	}
	n := 0
	for i := range h.Records {
		if i == 0 || h.Records[i].owner() != h.Records[i-1].owner() {
			n = 0
		}
		if n++; n > limit {
			add(h.Records[i].owner())
		}
	}
	if len(h.Transitions) <= limit {
		return over
	}
	h.sort()
	counts := make([]int32, len(h.Records)) // by the owner's first record
	var orphans map[ownerC]int              // owners with no record
	for _, t := range h.Transitions {
		o := t.owner()
		i, _ := slices.BinarySearchFunc(h.Records, o, func(r Record, o ownerC) int { return compareOwners(r.owner(), o) })
		if i == len(h.Records) || h.Records[i].owner() != o {
			if orphans == nil {
				orphans = map[ownerC]int{}
			}
			if orphans[o]++; orphans[o] > limit {
				add(o)
			}
			continue
		}
		if counts[i]++; int(counts[i]) > limit {
			add(o)
		}
	}
	return over
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
