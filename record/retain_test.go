package record

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/regcheck/regcheck/results/recordresult"
)

func TestRetain(t *testing.T) {
	t.Parallel()
	const owners, changes = 30, 6 // 7 records and 7 transitions an owner
	unplanned := (owners + 2) / 3 // every third owner: i%3 == 0
	for _, tc := range []struct {
		name  string
		limit int
		// wantRecs and wantTrs are the records and transitions kept of
		// an owner whose last change was planned and of one unplanned.
		wantRecs, wantRecsUnplanned, wantTrs int
	}{
		{"no limit", 0, 7, 7, 7},
		{"a limit above what is held", 8, 7, 7, 7},
		{"the newest three", 3, 3, 3, 3},
		// The digest a standing unplanned upgrade left is kept beside the
		// newest: pinning back reads its record.
		{"one, and what pinning back reads", 1, 1, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := busyHistory(owners, changes)
			before := h.items()
			dropped := h.Retain(tc.limit)
			want := before - (owners-unplanned)*(tc.wantRecs+tc.wantTrs) - unplanned*(tc.wantRecsUnplanned+tc.wantTrs)
			if dropped != want || h.items() != before-dropped {
				t.Fatalf("dropped %d (%d of %d items left), want %d", dropped, h.items(), before, want)
			}
			needs(t, tc.name, h, owners, changes)
			for i := range owners {
				e, _ := realistic(i, changes, t0, false)
				q := Query{Cluster: "prod", Namespace: e.Namespace, OwnerKind: e.OwnerKind, OwnerName: e.OwnerName, Container: e.Container}
				ts := h.TransitionsOf(q) // newest first
				if len(ts) != tc.wantTrs {
					t.Fatalf("%s keeps %d transitions, want %d", e.OwnerName, len(ts), tc.wantTrs)
				}
				for j, tr := range ts {
					if d, _ := realistic(i, changes-j, t0, false); tr.To != d.Digest {
						t.Errorf("%s's transition %d is to %s, want the newest ones (%s)", e.OwnerName, j, tr.To[:24], d.Digest[:24])
					}
				}
			}
			if h.Retain(tc.limit) != 0 {
				t.Error("a second Retain dropped more: it is not idempotent")
			}
		})
	}
}

// Transitions of an owner container the records do not name (its records
// dropped, or a history written by hand) are bounded too.
func TestRetainTransitionsWithoutRecords(t *testing.T) {
	t.Parallel()
	h := busyHistory(3, 4)
	h.Records = nil
	if dropped := h.Retain(2); dropped != 3*3 {
		t.Fatalf("dropped %d, want 9 (5 transitions an owner, 2 kept)", dropped)
	}
	if len(h.Transitions) != 6 {
		t.Errorf("%d transitions kept, want 6", len(h.Transitions))
	}
}

// BenchmarkRetainUnderChurn is the watcher's write under churn at 10,000
// containers, each holding its limit of 10: 300 containers change (a
// record and a transition each), then Retain drops their oldest.
func BenchmarkRetainUnderChurn(b *testing.B) {
	const owners, limit, batch = 10000, 10, 300
	h := NewHistory()
	for d := 1; d <= limit; d++ {
		for i := range owners {
			e, tr := realistic(i, d, t0.Add(time.Duration(d)*time.Minute), false)
			h.Records = append(h.Records, Record{Key: keyOf(e), FirstSeen: e.Time, LastSeen: e.Time, Pod: e.Pod, Image: e.Image})
			h.Transitions = append(h.Transitions, tr)
		}
	}
	h.sort()
	h.sortTransitions()
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		at := t0.Add(time.Duration(limit+1+n) * time.Hour)
		var es []recordresult.Entry
		var ts []Transition
		for j := range batch {
			e, tr := realistic((n*batch+j)%owners, limit+1+n, at, false)
			es, ts = append(es, e), append(ts, tr)
		}
		h.Merge(recordresult.Snapshot{Cluster: "prod", Time: at, Entries: es})
		h.AddTransitions(ts...)
		if dropped := h.Retain(limit); dropped != 2*batch {
			b.Fatalf("dropped %d, want %d", dropped, 2*batch)
		}
	}
}

// TestMergeKeepsOrder: records a snapshot adds among those held come out
// sorted by key, whatever their order in the snapshot (Merge sorts only
// what it added and merges it in).
func TestMergeKeepsOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	h := NewHistory()
	var held []recordresult.Entry
	for i := 0; i < 300; i += 3 {
		held = append(held, benchEntry(i, fmt.Sprintf("sha256:%064x", i), t0))
	}
	h.Merge(recordresult.Snapshot{Cluster: "kind", Time: t0, Entries: held})
	var added []recordresult.Entry
	for i := 299; i >= 0; i -= 2 { // new owners between and after the held ones, backwards; some held again
		added = append(added, benchEntry(i, fmt.Sprintf("sha256:%064x", i), t0.Add(time.Minute)))
	}
	h.Merge(recordresult.Snapshot{Cluster: "kind", Time: t0.Add(time.Minute), Entries: added})
	want := map[Key]bool{}
	for _, e := range append(held, added...) {
		want[keyOf(e)] = true
	}
	if len(h.Records) != len(want) {
		t.Fatalf("%d records, want %d", len(h.Records), len(want))
	}
	if !slices.IsSortedFunc(h.Records, func(a, b Record) int { return compareKeys(a.Key, b.Key) }) {
		t.Error("records not sorted by key")
	}
	for _, r := range h.Records {
		if !want[r.Key] {
			t.Errorf("record %+v was never merged", r.Key)
		}
	}
}
