package record

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
// records or more than limit transitions: the common case, a history
// within bounds, costs one pass and no sort.
func (h *History) exceeds(limit int) bool {
	recs, trs := map[ownerC]int{}, map[ownerC]int{}
	for _, r := range h.Records {
		o := r.owner()
		if recs[o]++; recs[o] > limit {
			return true
		}
	}
	for _, t := range h.Transitions {
		o := t.owner()
		if trs[o]++; trs[o] > limit {
			return true
		}
	}
	return false
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
