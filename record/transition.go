package record

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Transition is one change of the digest one owner container (or image
// volume) runs, as regcheck watch saw it happen: From is the digest it ran
// before ("" when the owner container is seen for the first time), To the
// one it runs now.
type Transition struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	OwnerKind string `json:"ownerKind"`
	OwnerName string `json:"ownerName"`
	Container string `json:"container"`        // empty for an image volume
	Volume    string `json:"volume,omitempty"` // an image volume's name
	// Pod and Node are where To was seen first.
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Image is the spec's image string now; PreviousImage the spec's image
	// string when From ran (empty when first seen).
	Image         string `json:"image"`
	PreviousImage string `json:"previousImage"`
	From          string `json:"from"`
	To            string `json:"to"`
	// Time is when the watcher saw To running, in UTC.
	Time time.Time `json:"time"`
	// RestartCount, LastTerminationReason and LastExitCode are the
	// container status's when the change was seen: the restart that pulled
	// To, and how the container before it ended.
	RestartCount          int32  `json:"restartCount"`
	LastTerminationReason string `json:"lastTerminationReason,omitempty"`
	LastExitCode          *int32 `json:"lastExitCode,omitempty"`
	// TemplateChanged is false when the spec's image string did not change
	// with the digest (a tag moved and a restart pulled it): an unplanned
	// upgrade. A first sighting is not an upgrade: it is true then.
	TemplateChanged bool `json:"templateChanged"`
}

// FirstSeen reports whether t is the first sighting of its owner container.
func (t Transition) FirstSeen() bool { return t.From == "" }

// Query is the selection of t's owner container.
func (t Transition) Query() Query {
	return Query{Cluster: t.Cluster, Namespace: t.Namespace, OwnerKind: t.OwnerKind, OwnerName: t.OwnerName, Container: t.Container, Volume: t.Volume}
}

func (t Transition) owner() ownerC {
	return ownerC{t.Cluster, t.Namespace, t.OwnerKind, t.OwnerName, t.Container, t.Volume}
}

func compareTransitions(a, b Transition) int {
	return cmp.Or(a.Time.Compare(b.Time),
		strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Namespace, b.Namespace),
		strings.Compare(a.OwnerKind, b.OwnerKind), strings.Compare(a.OwnerName, b.OwnerName),
		strings.Compare(a.Container, b.Container), strings.Compare(a.Volume, b.Volume),
		strings.Compare(a.From, b.From), strings.Compare(a.To, b.To))
}

// AddTransitions adds ts to h, oldest first, and returns how many were new:
// a transition h already holds (same owner container, from, to and time),
// or whose owner container h already saw change from the same digest to the
// same one at the same time, is not added twice. It never removes one.
func (h *History) AddTransitions(ts ...Transition) int {
	type tkey struct {
		o        ownerC
		from, to string
		t        time.Time
	}
	owners := make(map[ownerC]bool, len(ts))
	for _, t := range ts {
		owners[t.owner()] = true
	}
	have := map[tkey]bool{}
	for _, t := range h.Transitions {
		if o := t.owner(); owners[o] {
			have[tkey{o, t.From, t.To, t.Time.UTC()}] = true
		}
	}
	added := 0
	for _, t := range ts {
		t.Time = t.Time.UTC()
		k := tkey{t.owner(), t.From, t.To, t.Time}
		if have[k] {
			continue
		}
		have[k] = true
		h.Transitions = append(h.Transitions, t)
		added++
	}
	h.sortTransitions()
	return added
}

func (h *History) sortTransitions() {
	if !slices.IsSortedFunc(h.Transitions, compareTransitions) {
		slices.SortStableFunc(h.Transitions, compareTransitions)
	}
}

// TransitionsOf returns the transitions of q's owner container, newest first.
func (h *History) TransitionsOf(q Query) []Transition {
	var out []Transition
	for _, t := range h.Transitions {
		if q.Cluster != "" && t.Cluster != q.Cluster || t.Namespace != q.Namespace || t.OwnerKind != q.OwnerKind ||
			t.OwnerName != q.OwnerName || t.Container != q.Container || t.Volume != q.Volume {
			continue
		}
		out = append(out, t)
	}
	slices.Reverse(out)
	return out
}

// aged is one record (rec ≥ 0) or one transition (tr ≥ 0) of a history,
// with the time trimming orders it by.
type aged struct {
	t       time.Time
	rec, tr int
}

// byAge returns every record (by LastSeen) and transition (by Time) of h,
// oldest first; ties put records first, then follow the keys, so that
// trimming is deterministic.
func (h *History) byAge() []aged {
	out := make([]aged, 0, len(h.Records)+len(h.Transitions))
	for i, r := range h.Records {
		out = append(out, aged{r.LastSeen, i, -1})
	}
	for i, t := range h.Transitions {
		out = append(out, aged{t.Time, -1, i})
	}
	slices.SortFunc(out, func(a, b aged) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		switch {
		case a.rec >= 0 && b.rec >= 0:
			return compareKeys(h.Records[a.rec].Key, h.Records[b.rec].Key)
		case a.tr >= 0 && b.tr >= 0:
			return compareTransitions(h.Transitions[a.tr], h.Transitions[b.tr])
		case a.rec >= 0:
			return -1
		}
		return 1
	})
	return out
}

// size is the length of one item's encoding.
func (h *History) size(a aged) (int, error) {
	var b []byte
	var err error
	if a.rec >= 0 {
		b, err = json.Marshal(h.Records[a.rec])
	} else {
		b, err = json.Marshal(h.Transitions[a.tr])
	}
	return len(b), err
}

// without returns h less the items of gone.
func (h *History) without(gone []aged) *History {
	recs, trs := make(map[int]bool, len(gone)), make(map[int]bool, len(gone))
	for _, a := range gone {
		if a.rec >= 0 {
			recs[a.rec] = true
		} else {
			trs[a.tr] = true
		}
	}
	kept := &History{SchemaVersion: SchemaVersion}
	for i, r := range h.Records {
		if !recs[i] {
			kept.Records = append(kept.Records, r)
		}
	}
	for i, t := range h.Transitions {
		if !trs[i] {
			kept.Transitions = append(kept.Transitions, t)
		}
	}
	return kept
}
