package record

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/regcheck/regcheck/inventory"
)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

var t0 = time.Date(2026, 11, 11, 12, 0, 0, 0, time.UTC)

func entry(pod, digest string) Entry {
	return Entry{Cluster: "prod", Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Pod: pod, Container: "nginx", Image: "nginx:1.27", Digest: digest, Node: "node-" + pod}
}

func snap(at time.Time, es ...Entry) Snapshot {
	for i := range es {
		es[i].Time = at
	}
	return Snapshot{Cluster: "prod", Time: at, Entries: es}
}

func TestFromInventory(t *testing.T) {
	t.Parallel()
	inv := &inventory.Inventory{Containers: []inventory.Container{
		{Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Pod: "web-1", Container: "nginx", Image: "nginx:1.27",
			ImageID: "docker-pullable://nginx@" + dA, RunningDigest: dA, Node: "n1", PullPolicy: "IfNotPresent", StartedAt: t0.Add(-time.Hour), RestartCount: 3},
		{Namespace: "ns", OwnerKind: "StatefulSet", OwnerName: "db", Container: "postgres", Image: "postgres:17"}, // template: skipped
	}}
	got := FromInventory("prod", t0, inv)
	want := Snapshot{Cluster: "prod", Time: t0, Entries: []Entry{{
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
	h.Merge(Snapshot{Cluster: "staging", Time: t0.Add(3 * time.Hour), Entries: []Entry{other}})

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
		prev, cur []Entry
		want      []Change
	}{
		{name: "nothing changed", prev: []Entry{entry("a", dA)}, cur: []Entry{entry("a", dA)}},
		{
			name: "same pod, new digest", prev: []Entry{entry("a", dA), entry("b", dA)}, cur: []Entry{entry("a", dB), entry("b", dA)},
			want: []Change{{Cluster: "prod", Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx", Pod: "a", Node: "node-a", Image: "nginx:1.27", From: []string{dA}, To: dB}},
		},
		{name: "new pod, known digest", prev: []Entry{entry("a", dA)}, cur: []Entry{entry("c", dA)}},
		{
			name: "new pod, new digest", prev: []Entry{entry("a", dB), entry("b", dA)}, cur: []Entry{entry("c", dC)},
			want: []Change{{Cluster: "prod", Namespace: "ns", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx", Pod: "c", Node: "node-c", Image: "nginx:1.27", From: []string{dA, dB}, To: dC}},
		},
		{name: "owner new in cur", prev: nil, cur: []Entry{entry("a", dA)}},
		{name: "digest unknown before", prev: []Entry{entry("a", "")}, cur: []Entry{entry("a", dA)}},
		{name: "digest unknown now", prev: []Entry{entry("a", dA)}, cur: []Entry{entry("a", "")}},
		{name: "other cluster", prev: []Entry{func() Entry { e := entry("a", dA); e.Cluster = "staging"; return e }()}, cur: []Entry{entry("a", dB)}},
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
