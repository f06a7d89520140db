package record

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/results/recordresult"
)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

var t0 = time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC)

func entry(pod, digest string) recordresult.Entry {
	return recordresult.Entry{Cluster: "prod", Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Pod: pod, Container: "nginx", Image: "nginx:1.27", Digest: digest, Node: "node-" + pod}
}

func snap(at time.Time, es ...recordresult.Entry) recordresult.Snapshot {
	for i := range es {
		es[i].Time = at
	}
	return recordresult.Snapshot{Cluster: "prod", Time: at, Entries: es}
}

func TestFromInventory(t *testing.T) {
	t.Parallel()
	inv := &inventory.Inventory{Containers: []inventory.Container{
		{Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Pod: "web-1", Container: "nginx", Image: "nginx:1.27",
			ImageID: "docker-pullable://nginx@" + dA, RunningDigest: dA, Node: "n1", PullPolicy: "IfNotPresent", StartedAt: t0.Add(-time.Hour), RestartCount: 3},
		{Namespace: "ns", OwnerKind: "StatefulSet", OwnerName: "db", Container: "postgres", Image: "postgres:17"}, // template: skipped
	}}
	got := FromInventory("prod", t0, inv)
	want := recordresult.Snapshot{Cluster: "prod", Time: t0, Entries: []recordresult.Entry{{
		Cluster: "prod", Time: t0, Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Pod: "web-1", Container: "nginx",
		Image: "nginx:1.27", Digest: dA, ImageID: "docker-pullable://nginx@" + dA, Node: "n1", PullPolicy: "IfNotPresent",
		StartedAt: t0.Add(-time.Hour), RestartCount: 3,
	}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromInventory:\n got %+v\nwant %+v", got, want)
	}
}

func TestMergeKeepsHistory(t *testing.T) {
	t.Parallel()
	h := NewHistory()
	h.Merge(snap(t0, entry("a", dA), entry("b", dA)))
	h.Merge(snap(t0.Add(time.Hour), entry("a", dB))) // b gone, a moved to dB
	h.Merge(snap(t0.Add(2*time.Hour), entry("c", dB)))
	h.Merge(snap(t0.Add(-time.Hour), entry("z", dA))) // late, older snapshot

	if len(h.Records) != 2 {
		t.Fatalf("got %d records, want 2: %+v", len(h.Records), h.Records)
	}
	ra, rb := h.Records[0], h.Records[1]
	if ra.Digest != dA || !ra.FirstSeen.Equal(t0.Add(-time.Hour)) || !ra.LastSeen.Equal(t0) || ra.Pod != "b" {
		t.Errorf("dA record = %+v; want firstSeen t0-1h, lastSeen t0, last pod b (the older snapshot must not overwrite the last pod)", ra)
	}
	if rb.Digest != dB || !rb.FirstSeen.Equal(t0.Add(time.Hour)) || !rb.LastSeen.Equal(t0.Add(2*time.Hour)) || rb.Pod != "c" || rb.Node != "node-c" {
		t.Errorf("dB record = %+v", rb)
	}

	// Merging never drops: many merges of disjoint snapshots keep every key.
	h2 := NewHistory()
	for i := range 50 {
		e := entry("p", fmt.Sprintf("sha256:%064x", i))
		e.OwnerName = fmt.Sprintf("app-%d", i%7)
		h2.Merge(snap(t0.Add(time.Duration(i)*time.Minute), e))
	}
	if len(h2.Records) != 50 {
		t.Errorf("got %d records after 50 disjoint merges, want 50", len(h2.Records))
	}
}

func TestLatestAndRunning(t *testing.T) {
	t.Parallel()
	h := NewHistory()
	h.Merge(snap(t0, entry("a", dA)))
	h.Merge(snap(t0.Add(time.Hour), entry("a", dB)))
	other := entry("x", dC)
	other.Cluster = "staging"
	h.Merge(recordresult.Snapshot{Cluster: "staging", Time: t0.Add(3 * time.Hour), Entries: []recordresult.Entry{other}})

	s, ok := h.Latest("prod")
	if !ok || !s.Time.Equal(t0.Add(time.Hour)) || len(s.Entries) != 1 || s.Entries[0].Digest != dB {
		t.Errorf("Latest(prod) = %+v, %v", s, ok)
	}
	if _, ok := h.Latest("nowhere"); ok {
		t.Errorf("Latest of an unknown cluster reported ok")
	}

	tests := []struct {
		name string
		q    Query
		want string
	}{
		{"most recent in prod", Query{Cluster: "prod", Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx"}, dB},
		{"any cluster picks the latest", Query{Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx"}, dC},
		{"unknown container", Query{Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "sidecar"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := h.Running(tt.q)
			if ok != (tt.want != "") || r.Digest != tt.want {
				t.Errorf("Running(%+v) = %q, %v; want %q", tt.q, r.Digest, ok, tt.want)
			}
		})
	}

	// Two pods on two digests at the last snapshot: the newer rollout wins,
	// and Find shows both.
	h3 := NewHistory()
	h3.Merge(snap(t0, entry("a", dA), entry("b", dA)))
	h3.Merge(snap(t0.Add(time.Hour), entry("a", dB), entry("b", dA)))
	q := Query{Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx"}
	if r, ok := h3.Running(q); !ok || r.Digest != dB {
		t.Errorf("Running with a tie = %q, want the digest first seen last (%s)", r.Digest, dB)
	}
	if rs := h3.Find(q); len(rs) != 2 || rs[0].Digest != dB || rs[1].Digest != dA {
		t.Errorf("Find = %+v", rs)
	}

	// Records without a digest are never what pin uses.
	h2 := NewHistory()
	h2.Merge(snap(t0, entry("a", dA)))
	h2.Merge(snap(t0.Add(time.Hour), entry("a", "")))
	if r, ok := h2.Running(Query{Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx"}); !ok || r.Digest != dA {
		t.Errorf("Running skipped to an empty digest: %+v", r)
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		prev, cur []recordresult.Entry
		want      []recordresult.Change
	}{
		{name: "nothing changed", prev: []recordresult.Entry{entry("a", dA)}, cur: []recordresult.Entry{entry("a", dA)}},
		{
			name: "same pod, new digest", prev: []recordresult.Entry{entry("a", dA), entry("b", dA)}, cur: []recordresult.Entry{entry("a", dB), entry("b", dA)},
			want: []recordresult.Change{{Cluster: "prod", Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx", Pod: "a", Node: "node-a", Image: "nginx:1.27", From: []string{dA}, To: dB}},
		},
		{name: "new pod, known digest", prev: []recordresult.Entry{entry("a", dA)}, cur: []recordresult.Entry{entry("c", dA)}},
		{
			name: "new pod, new digest", prev: []recordresult.Entry{entry("a", dB), entry("b", dA)}, cur: []recordresult.Entry{entry("c", dC)},
			want: []recordresult.Change{{Cluster: "prod", Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx", Pod: "c", Node: "node-c", Image: "nginx:1.27", From: []string{dA, dB}, To: dC}},
		},
		{name: "owner new in cur", prev: nil, cur: []recordresult.Entry{entry("a", dA)}},
		{name: "digest unknown before", prev: []recordresult.Entry{entry("a", "")}, cur: []recordresult.Entry{entry("a", dA)}},
		{name: "digest unknown now", prev: []recordresult.Entry{entry("a", dA)}, cur: []recordresult.Entry{entry("a", "")}},
		{name: "other cluster", prev: []recordresult.Entry{func() recordresult.Entry { e := entry("a", dA); e.Cluster = "staging"; return e }()}, cur: []recordresult.Entry{entry("a", dB)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Diff(snap(t0, tt.prev...), snap(t0.Add(time.Hour), tt.cur...))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "  \n", "{", `{"records":[]}`, `{"schemaVersion":99,"records":[]}`, `{"schemaVersion":1}{}`, `[]`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) succeeded", in)
		}
	}
	h, err := Decode([]byte(`{"schemaVersion":1,"records":[]}`))
	if err != nil || h.SchemaVersion != 1 {
		t.Errorf("Decode(valid) = %+v, %v", h, err)
	}
}

// memStore is a Store in memory, for Save tests that are not about storage.
type memStore struct{ h *History }

func (m *memStore) Load(context.Context) (*History, error) {
	if m.h == nil {
		return NewHistory(), nil
	}
	return m.h, nil
}

func (m *memStore) Update(ctx context.Context, fn func(*History) error) (recordresult.UpdateResult, error) {
	h, _ := m.Load(ctx)
	if err := fn(h); err != nil {
		return recordresult.UpdateResult{}, err
	}
	m.h = h
	return recordresult.UpdateResult{}, nil
}

// TestSaveNamespaceScopedRuns: record -n a, record -n b, record -n a again.
// The third run compares a's containers with a's last records, not with the
// b-only snapshot that happens to be the cluster's newest.
func TestSaveNamespaceScopedRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	in := func(ns, owner, pod, digest string) recordresult.Entry {
		e := entry(pod, digest)
		e.Namespace, e.OwnerName = ns, owner
		return e
	}
	t1, t2, t3, t4 := t0, t0.Add(time.Hour), t0.Add(2*time.Hour), t0.Add(3*time.Hour)
	st := &memStore{}
	save := func(s recordresult.Snapshot) recordresult.Result {
		t.Helper()
		res, err := Save(ctx, st, s)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	change := func(ns, owner, pod string, from []string, to string) recordresult.Change {
		return recordresult.Change{Cluster: "prod", Namespace: ns, OwnerKind: "Deployment", OwnerName: owner, Container: "nginx",
			Pod: pod, Node: "node-" + pod, Image: "nginx:1.27", From: from, To: to}
	}

	// record -n a
	if res := save(snap(t1, in("a", "web", "a1", dA))); !res.Previous.Time.IsZero() || len(res.Changes) != 0 {
		t.Errorf("first run of -n a: %+v", res)
	}
	// record -n b: b was never recorded, so there is no previous snapshot for it.
	if res := save(snap(t2, in("b", "api", "b1", dB))); !res.Previous.Time.IsZero() || len(res.Changes) != 0 {
		t.Errorf("first run of -n b: previous %v (%d entries), changes %+v; want none", res.Previous.Time, len(res.Previous.Entries), res.Changes)
	}
	// record -n a: web moved from dA to dC since t1.
	res := save(snap(t3, in("a", "web", "a1", dC)))
	if want := []recordresult.Change{change("a", "web", "a1", []string{dA}, dC)}; !reflect.DeepEqual(res.Changes, want) {
		t.Errorf("second run of -n a: changes\n got %+v\nwant %+v", res.Changes, want)
	}
	if !res.Previous.Time.Equal(t1) {
		t.Errorf("second run of -n a: previous time %v, want %v (a's last run)", res.Previous.Time, t1)
	}
	// record -A: web unchanged since t3, api moved from dB to dA since t2 (a
	// new pod, compared with every digest api ran). Previous.Time is the
	// earliest of the owners' last sightings.
	res = save(snap(t4, in("a", "web", "a1", dC), in("b", "api", "b2", dA)))
	if want := []recordresult.Change{change("b", "api", "b2", []string{dB}, dA)}; !reflect.DeepEqual(res.Changes, want) {
		t.Errorf("run of -A: changes\n got %+v\nwant %+v", res.Changes, want)
	}
	if !res.Previous.Time.Equal(t2) {
		t.Errorf("run of -A: previous time %v, want %v", res.Previous.Time, t2)
	}
}

func TestPrevious(t *testing.T) {
	t.Parallel()
	h := NewHistory()
	web := func(pod, digest string) recordresult.Entry { return entry(pod, digest) }
	api := func(pod, digest string) recordresult.Entry { e := entry(pod, digest); e.OwnerName = "api"; return e }
	h.Merge(snap(t0, web("a", dA), web("b", dA), api("x", dA)))
	h.Merge(snap(t0.Add(time.Hour), web("a", dB), web("b", dA)))
	h.Merge(snap(t0.Add(2*time.Hour), web("c", dC)))
	other := web("z", dC)
	other.Cluster = "staging"
	h.Merge(recordresult.Snapshot{Cluster: "staging", Time: t0.Add(5 * time.Hour), Entries: []recordresult.Entry{other}})

	type got struct {
		pod, digest string
		at          time.Time
	}
	entries := func(s recordresult.Snapshot) []got {
		var out []got
		for _, e := range s.Entries {
			out = append(out, got{e.Pod, e.Digest, e.Time})
		}
		return out
	}
	tests := []struct {
		name string
		cur  recordresult.Snapshot
		want []got
		time time.Time
	}{
		{
			name: "each owner at its own last sighting",
			cur:  snap(t0.Add(3*time.Hour), web("c", dC), api("x", dA)),
			want: []got{{"x", dA, t0}, {"c", dC, t0.Add(2 * time.Hour)}},
			time: t0,
		},
		{
			name: "only records before cur: a late snapshot is not compared with a later one",
			cur:  snap(t0.Add(90*time.Minute), web("a", dB)),
			want: []got{{"b", dA, t0.Add(time.Hour)}, {"a", dB, t0.Add(time.Hour)}},
			time: t0.Add(time.Hour),
		},
		{
			name: "nothing earlier than cur",
			cur:  snap(t0, web("a", dA)),
		},
		{
			name: "owner never recorded",
			cur:  snap(t0.Add(3*time.Hour), func() recordresult.Entry { e := web("q", dA); e.Namespace = "elsewhere"; return e }()),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := h.Previous(tt.cur)
			if g := entries(p); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("Previous entries\n got %+v\nwant %+v", g, tt.want)
			}
			if !p.Time.Equal(tt.time) || p.Cluster != "prod" {
				t.Errorf("Previous = cluster %q, time %v; want prod, %v", p.Cluster, p.Time, tt.time)
			}
		})
	}
}

// TestImageVolumes: an image volume is recorded, merged, diffed and looked
// up like a container, as its own owner container: a container of the same
// name is another.
func TestImageVolumes(t *testing.T) {
	t.Parallel()
	inv := func(volumeDigest string) *inventory.Inventory {
		return &inventory.Inventory{Containers: []inventory.Container{
			{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Field: inventory.FieldContainers, Container: "models",
				Image: "reg.example/serve:v1", RunningDigest: dA, PullPolicy: "IfNotPresent"},
			{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Field: inventory.FieldImageVolumes, Container: "models",
				Image: "reg.example/models:v3", ImageID: "reg.example/models@" + volumeDigest, RunningDigest: volumeDigest, PullPolicy: "IfNotPresent"},
			{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Field: inventory.FieldImageVolumes, Container: "next",
				Image: "reg.example/models:v4"}, // template: skipped
		}}
	}
	first := FromInventory("prod", t0, inv(dA))
	wantEntries := []recordresult.Entry{
		{Cluster: "prod", Time: t0, Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Container: "models",
			Image: "reg.example/serve:v1", Digest: dA, PullPolicy: "IfNotPresent"},
		{Cluster: "prod", Time: t0, Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Volume: "models",
			Image: "reg.example/models:v3", Digest: dA, ImageID: "reg.example/models@" + dA, PullPolicy: "IfNotPresent"},
	}
	if !reflect.DeepEqual(first.Entries, wantEntries) {
		t.Fatalf("FromInventory:\n got %+v\nwant %+v", first.Entries, wantEntries)
	}

	h := NewHistory()
	h.Merge(first)
	second := FromInventory("prod", t0.Add(time.Hour), inv(dB)) // the volume's image moved, the container's did not
	changes := Diff(h.Previous(second), second)
	h.Merge(second)
	if len(changes) != 1 || changes[0].Volume != "models" || changes[0].Container != "" || !reflect.DeepEqual(changes[0].From, []string{dA}) || changes[0].To != dB {
		t.Errorf("Diff: %+v, want the volume models only, %s -> %s", changes, dA, dB)
	}
	if len(h.Records) != 3 {
		t.Fatalf("%d records, want 3 (the container, the volume at two digests): %+v", len(h.Records), h.Records)
	}

	tests := []struct {
		name  string
		q     Query
		wants []string // digests, newest first
	}{
		{"the volume", Query{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Volume: "models"}, []string{dB, dA}},
		{"the container of the same name", Query{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Container: "models"}, []string{dA}},
		{"a template's volume is not recorded", Query{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Volume: "next"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range h.Find(tt.q) {
				got = append(got, r.Digest)
			}
			if !reflect.DeepEqual(got, tt.wants) {
				t.Errorf("Find(%+v): %v, want %v", tt.q, got, tt.wants)
			}
		})
	}
}
