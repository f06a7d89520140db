package record

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Ranks of a history's items in the head of a split store, most needed
// first: what a reconcile after a failover starts every owner container
// from, then what explains it, then the rest.
const (
	// rankNewest: an owner container's records last seen at its newest
	// lastSeen, and its last transition when that is an unplanned upgrade
	// with the record of the digest it ran before (what pinning back reads).
	rankNewest = iota
	// rankLast: an owner container's last transition otherwise.
	rankLast
	// rankOlder: every other record and transition.
	rankOlder
)

// rankedItem is one record or transition of a history with its rank.
type rankedItem struct {
	aged
	rank int
}

// ranked returns every item of h in the order a head keeps them: by rank,
// then newest first, ties as byAge breaks them (reversed).
func (h *History) ranked() []rankedItem {
	newest := map[ownerC]time.Time{}
	for _, r := range h.Records {
		o := r.owner()
		if t, ok := newest[o]; !ok || r.LastSeen.After(t) {
			newest[o] = r.LastSeen
		}
	}
	last := map[ownerC]int{}
	for i, t := range h.Transitions { // oldest first, as h keeps them
		last[t.owner()] = i
	}
	// The digest before a standing unplanned upgrade: what pinning back
	// (pin --from-records --records-at) reads.
	pinBack := map[ownerC]string{}
	for o, i := range last {
		if t := h.Transitions[i]; !t.TemplateChanged && !t.FirstSeen() {
			pinBack[o] = t.From
		}
	}
	out := make([]rankedItem, 0, len(h.Records)+len(h.Transitions))
	for i, r := range h.Records {
		rank := rankOlder
		o := r.owner()
		if r.LastSeen.Equal(newest[o]) || r.Digest == pinBack[o] {
			rank = rankNewest
		}
		out = append(out, rankedItem{aged{r.LastSeen, i, -1}, rank})
	}
	for i, t := range h.Transitions {
		rank := rankOlder
		if last[t.owner()] == i {
			rank = rankLast
			if !t.TemplateChanged && !t.FirstSeen() {
				rank = rankNewest
			}
		}
		out = append(out, rankedItem{aged{t.Time, -1, i}, rank})
	}
	slices.SortStableFunc(out, func(a, b rankedItem) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), b.t.Compare(a.t), cmp.Compare(b.rec, a.rec), cmp.Compare(a.tr, b.tr))
	})
	return out
}

// Split divides h into a head that encodes in at most max bytes and the
// rest. A history that fits is all head. One that does not keeps in its
// head every owner container's newest records and unplanned last
// transition first, newest first, up to max; then, up to seven eighths of
// max (so that the next writes need not split again), the other last
// transitions, then the rest, newest first; what does not fit is the rest. Nothing is
// dropped: head and rest together are h.
func Split(h *History, max int) (head, rest *History, err error) {
	head, rest, _, err = split(h, max)
	return head, rest, err
}

// split is Split, and says whether the head fell short: rest holds an
// item a reconcile needs (rankNewest), so that who reads the head alone
// (record's Update) must read the archives too.
func split(h *History, max int) (head, rest *History, short bool, err error) {
	b, err := Encode(h, false)
	if err != nil {
		return nil, nil, false, err
	}
	if len(b) <= max {
		return h, NewHistory(), false, nil
	}
	empty, err := Encode(&History{Records: []Record{}, Transitions: []Transition{{}}}, false)
	if err != nil {
		return nil, nil, false, err
	}
	order := h.ranked()
	target := max - max/8
	used, n := len(empty), 0
	for ; n < len(order); n++ {
		s, err := h.size(order[n].aged)
		if err != nil {
			return nil, nil, false, err
		}
		if used+s+1 > target && (order[n].rank != rankNewest || used+s+1 > max) {
			break
		}
		used += s + 1
	}
	kept, gone := make([]aged, 0, n), make([]aged, 0, len(order)-n)
	for i, it := range order {
		if i < n {
			kept = append(kept, it.aged)
		} else {
			gone = append(gone, it.aged)
			short = short || it.rank == rankNewest
		}
	}
	head, rest = h.without(gone), h.without(kept)
	if b, err := Encode(head, false); err != nil || len(b) > max {
		return nil, nil, false, fmt.Errorf("splitting a history for %d bytes: the head is %d bytes (%v)", max, len(b), err)
	}
	return head, rest, short, nil
}

// Absorb merges o into h, so that a history split in parts reads whole
// again: a record h lacks is added; one both hold keeps the earliest
// FirstSeen and the sighting of the latest LastSeen; a transition h lacks
// is added. Absorbing is idempotent and the order of parts does not
// matter, so a part written twice (a write retried) does no harm.
func (h *History) Absorb(o *History) {
	idx := make(map[Key]int, len(h.Records))
	for i, r := range h.Records {
		idx[r.Key] = i
	}
	for _, r := range o.Records {
		i, ok := idx[r.Key]
		if !ok {
			h.Records = append(h.Records, r)
			idx[r.Key] = len(h.Records) - 1
			continue
		}
		cur := &h.Records[i]
		first := cur.FirstSeen
		if r.FirstSeen.Before(first) {
			first = r.FirstSeen
		}
		if r.LastSeen.After(cur.LastSeen) {
			*cur = r
		}
		cur.FirstSeen = first
	}
	h.sort()
	h.AddTransitions(o.Transitions...)
}

// lacks returns the items of o that h does not already hold as they are or
// newer: a record whose key h holds seen over a span that covers o's, and
// a transition h holds, are left out.
func (h *History) lacks(o *History) *History {
	idx := make(map[Key]int, len(h.Records))
	for i, r := range h.Records {
		idx[r.Key] = i
	}
	out := NewHistory()
	for _, r := range o.Records {
		if i, ok := idx[r.Key]; ok && !h.Records[i].FirstSeen.After(r.FirstSeen) && !h.Records[i].LastSeen.Before(r.LastSeen) {
			continue
		}
		out.Records = append(out.Records, r)
	}
	type tkey struct {
		o        ownerC
		from, to string
		t        time.Time
	}
	have := make(map[tkey]bool, len(h.Transitions))
	for _, t := range h.Transitions {
		have[tkey{t.owner(), t.From, t.To, t.Time.UTC()}] = true
	}
	for _, t := range o.Transitions {
		if k := (tkey{t.owner(), t.From, t.To, t.Time.UTC()}); !have[k] {
			have[k] = true
			out.Transitions = append(out.Transitions, t)
		}
	}
	out.sortTransitions()
	return out
}

// items is how many records and transitions h holds.
func (h *History) items() int { return len(h.Records) + len(h.Transitions) }

// clone returns a copy of h that Absorb can change without changing h.
func (h *History) clone() *History {
	return &History{SchemaVersion: SchemaVersion, Records: slices.Clone(h.Records), Transitions: slices.Clone(h.Transitions)}
}
