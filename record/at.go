package record

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Ran is one digest an owner container (or image volume) ran at one time in
// one cluster, as a history tells it.
type Ran struct {
	Cluster string
	Digest  string
	// Pod is the record's last pod; empty when a transition told.
	Pod string
	// Image is the spec's image string it ran under: the record's last, or
	// the transition's (PreviousImage for the From of one after t).
	Image string
	// Transition is true when the watcher's transitions told, false when
	// the records did.
	Transition bool
}

// At returns what q's owner container ran at t, one answer per cluster, or
// several for a cluster whose records cannot tell one digest (a rollout, or
// a digest that came back): sorted by cluster, then digest; nil when the
// history knows nothing of q at t.
//
// regcheck watch's transitions tell first, to the second: the To of the
// last transition at or before t, else the From of the first one after t
// (a history trimmed of older transitions still knows what ran before).
// A cluster whose transitions do not tell (none, or t before the first
// sighting) is told by its records: those with FirstSeen ≤ t ≤ LastSeen,
// else the ones last seen before t, at their greatest LastSeen (what the
// last snapshot before t saw). A record first seen after t tells nothing.
func (h *History) At(q Query, t time.Time) []Ran {
	var out []Ran
	told := map[string]bool{}
	for _, r := range h.transitionsAt(q, t) {
		out = append(out, r)
		told[r.Cluster] = true
	}
	recs := map[string][]Record{}
	for _, r := range h.Find(q) {
		if !told[r.Cluster] {
			recs[r.Cluster] = append(recs[r.Cluster], r)
		}
	}
	for _, rs := range recs {
		out = append(out, recordsAt(rs, t)...)
	}
	slices.SortFunc(out, func(a, b Ran) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Digest, b.Digest), strings.Compare(a.Pod, b.Pod))
	})
	return out
}

// transitionsAt is what the transitions of q tell of t, per cluster.
func (h *History) transitionsAt(q Query, t time.Time) []Ran {
	last := map[string]Transition{}        // the last at or before t, per cluster
	first := map[string]Transition{}       // the first after t
	for _, x := range h.TransitionsOf(q) { // newest first
		if !x.Time.After(t) {
			if _, ok := last[x.Cluster]; !ok {
				last[x.Cluster] = x
			}
			continue
		}
		first[x.Cluster] = x
	}
	var out []Ran
	for c, x := range last {
		if x.To != "" {
			out = append(out, Ran{Cluster: c, Digest: x.To, Image: x.Image, Transition: true})
		}
	}
	for c, x := range first {
		if _, ok := last[c]; !ok && x.From != "" {
			out = append(out, Ran{Cluster: c, Digest: x.From, Image: x.PreviousImage, Transition: true})
		}
	}
	return out
}

// recordsAt is what one cluster's records rs tell of t.
func recordsAt(rs []Record, t time.Time) []Ran {
	var during, before []Ran
	var lastBefore time.Time
	for _, r := range rs {
		ran := Ran{Cluster: r.Cluster, Digest: r.Digest, Pod: r.Pod, Image: r.Image}
		switch {
		case r.FirstSeen.After(t):
		case !r.LastSeen.Before(t):
			during = append(during, ran)
		case r.LastSeen.After(lastBefore):
			lastBefore, before = r.LastSeen, []Ran{ran}
		case r.LastSeen.Equal(lastBefore):
			before = append(before, ran)
		}
	}
	if len(during) > 0 {
		return during
	}
	return before
}
