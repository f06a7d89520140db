package record

import (
	"slices"
	"testing"
	"time"

	"github.com/regcheck/regcheck/results/recordresult"
)

func TestAt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const a, b, c = "sha256:a", "sha256:b", "sha256:c"
	entry := func(name, pod, digest string) recordresult.Entry {
		return recordresult.Entry{Namespace: "web", OwnerKind: "Deployment", OwnerName: name, Pod: pod, Container: "app", Digest: digest}
	}
	h := NewHistory()
	for _, s := range []recordresult.Snapshot{
		// "nightly": record runs once an hour; a then b, nothing of the gap.
		{Cluster: "prod", Time: at(0), Entries: []recordresult.Entry{entry("nightly", "n-1", a), entry("roll", "r-1", a), entry("watched", "w-1", a), entry("trimmed", "t-1", a)}},
		{Cluster: "prod", Time: at(time.Hour), Entries: []recordresult.Entry{entry("nightly", "n-1", a), entry("roll", "r-1", a), entry("roll", "r-2", b)}},
		{Cluster: "prod", Time: at(2 * time.Hour), Entries: []recordresult.Entry{entry("nightly", "n-2", b), entry("roll", "r-2", b)}},
		{Cluster: "staging", Time: at(0), Entries: []recordresult.Entry{entry("nightly", "n-9", c)}},
		// "watched": records say a then b, coarsely; the transitions say when.
		{Cluster: "prod", Time: at(2 * time.Hour), Entries: []recordresult.Entry{entry("watched", "w-1", b)}},
	} {
		h.Merge(s)
	}
	tr := func(name, from, to string, when time.Time) Transition {
		return Transition{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: name, Container: "app", From: from, To: to, Time: when}
	}
	h.AddTransitions(
		tr("watched", "", a, at(0)), tr("watched", a, b, at(90*time.Minute)), tr("watched", b, a, at(100*time.Minute)),
		// "trimmed": the first sighting was trimmed away.
		tr("trimmed", a, b, at(30*time.Minute)),
		// "late": the watcher saw it first after the record did.
		tr("late", "", c, at(time.Hour)),
	)
	h.Merge(recordresult.Snapshot{Cluster: "prod", Time: at(0), Entries: []recordresult.Entry{entry("late", "l-1", b)}})
	q := func(name string) Query {
		return Query{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: name, Container: "app"}
	}
	rec := func(cluster, digest, pod string) Ran { return Ran{Cluster: cluster, Digest: digest, Pod: pod} }
	trans := func(digest string) Ran { return Ran{Cluster: "prod", Digest: digest, Transition: true} }
	for _, tc := range []struct {
		name string
		q    Query
		t    time.Time
		want []Ran
	}{
		{"a record seen at t", q("nightly"), at(30 * time.Minute), []Ran{rec("prod", a, "n-1")}},
		{"on a record's last sighting", q("nightly"), at(time.Hour), []Ran{rec("prod", a, "n-1")}},
		{"between two snapshots: the last seen before", q("nightly"), at(90 * time.Minute), []Ran{rec("prod", a, "n-1")}},
		{"after the last snapshot", q("nightly"), at(5 * time.Hour), []Ran{rec("prod", b, "n-2")}},
		{"before the first record", q("nightly"), at(-time.Minute), nil},
		{"every cluster", Query{Namespace: "web", OwnerKind: "Deployment", OwnerName: "nightly", Container: "app"}, at(30 * time.Minute),
			[]Ran{rec("prod", a, "n-1"), rec("staging", c, "n-9")}},
		{"a rollout at t", q("roll"), at(time.Hour), []Ran{rec("prod", a, "r-1"), rec("prod", b, "r-2")}},
		{"after the rollout", q("roll"), at(2 * time.Hour), []Ran{rec("prod", b, "r-2")}},
		{"the transitions tell, not the records", q("watched"), at(89 * time.Minute), []Ran{trans(a)}},
		{"on a transition's time", q("watched"), at(90 * time.Minute), []Ran{trans(b)}},
		{"a digest that came back", q("watched"), at(3 * time.Hour), []Ran{trans(a)}},
		{"a trimmed history: the From of the first after t", q("trimmed"), at(time.Minute), []Ran{trans(a)}},
		{"before the watcher's first sighting: the records", q("late"), at(time.Minute), []Ran{rec("prod", b, "l-1")}},
		{"after it: the transition", q("late"), at(61 * time.Minute), []Ran{trans(c)}},
		{"another owner", q("other"), at(time.Hour), nil},
		{"another container", Query{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: "nightly", Container: "side"}, at(time.Hour), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := h.At(tc.q, tc.t); !slices.Equal(got, tc.want) {
				t.Errorf("At(%s) = %+v, want %+v", tc.t.Format(time.RFC3339), got, tc.want)
			}
		})
	}
}

// At names the image string each answer ran under: the transition's, or
// its PreviousImage for the From of one after t, or the record's.
func TestAtImage(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	h := NewHistory()
	h.Merge(recordresult.Snapshot{Cluster: "prod", Time: t0, Entries: []recordresult.Entry{{Namespace: "web", OwnerKind: "Deployment", OwnerName: "rec", Pod: "rec-1", Container: "app", Image: "app:v1", Digest: "sha256:a"}}})
	tr := Transition{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: "tr", Container: "app",
		PreviousImage: "app:v1", Image: "app:v2", From: "sha256:a", To: "sha256:b", Time: t0}
	h.AddTransitions(tr)
	q := func(name string) Query {
		return Query{Namespace: "web", OwnerKind: "Deployment", OwnerName: name, Container: "app"}
	}
	for _, tc := range []struct {
		name  string
		q     Query
		t     time.Time
		image string
	}{
		{"a record", q("rec"), t0, "app:v1"},
		{"before a transition", q("tr"), t0.Add(-time.Second), "app:v1"},
		{"at it", q("tr"), t0, "app:v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := h.At(tc.q, tc.t); len(got) != 1 || got[0].Image != tc.image {
				t.Errorf("At = %+v, want one that ran as %s", got, tc.image)
			}
		})
	}
}
