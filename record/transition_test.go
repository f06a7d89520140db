package record

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/results/recordresult"
)

func tr(owner, from, to string, at time.Time) Transition {
	return Transition{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: owner, Container: "app",
		Pod: owner + "-1", Image: "app:latest", PreviousImage: "app:latest", From: from, To: to, Time: at}
}

func TestAddTransitions(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	h := NewHistory()
	if n := h.AddTransitions(tr("a", "sha256:1", "sha256:2", t0.Add(time.Minute)), tr("a", "", "sha256:1", t0)); n != 2 {
		t.Fatalf("added %d, want 2", n)
	}
	// The same change at the same time (a retried write, two writers) is kept once;
	// the same change later (A→B, B→A, A→B) is another.
	if n := h.AddTransitions(tr("a", "sha256:1", "sha256:2", t0.Add(time.Minute).In(time.FixedZone("x", 3600))), tr("a", "sha256:1", "sha256:2", t0.Add(time.Hour))); n != 1 {
		t.Errorf("added %d, want 1", n)
	}
	if len(h.Transitions) != 3 || h.Transitions[0].From != "" || !h.Transitions[2].Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("transitions not oldest first: %+v", h.Transitions)
	}
	got := h.TransitionsOf(Query{Namespace: "web", OwnerKind: "Deployment", OwnerName: "a", Container: "app"})
	if len(got) != 3 || !got[0].Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("TransitionsOf: %+v, want 3 newest first", got)
	}
	if len(h.TransitionsOf(Query{Namespace: "web", OwnerKind: "Deployment", OwnerName: "b", Container: "app"})) != 0 {
		t.Error("TransitionsOf another owner is not empty")
	}
}

// Transitions survive an encode and decode; a history without them
// encodes as before (no "transitions" key), so older readers see nothing new.
func TestTransitionsRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	h := NewHistory()
	b, err := Encode(h, false)
	if err != nil || strings.Contains(string(b), "transitions") {
		t.Fatalf("empty history %s (%v)", b, err)
	}
	code := int32(137)
	x := tr("a", "sha256:1", "sha256:2", t0)
	x.RestartCount, x.LastTerminationReason, x.LastExitCode = 3, "OOMKilled", &code
	h.AddTransitions(x)
	b, err = Encode(h, true)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Transitions) != 1 || back.Transitions[0].LastExitCode == nil || *back.Transitions[0].LastExitCode != 137 || back.Transitions[0].TemplateChanged {
		t.Errorf("decoded %+v", back.Transitions)
	}
	var raw map[string][]map[string]any
	_ = json.Unmarshal(b, &raw)
	for _, k := range []string{"from", "to", "time", "previousImage", "restartCount", "lastTerminationReason", "lastExitCode", "templateChanged"} {
		if _, ok := raw["transitions"][0][k]; !ok {
			t.Errorf("the encoded transition has no %q: %s", k, b)
		}
	}
}

// A ConfigMap over its limit drops the oldest records and transitions
// together, never a newer one before an older one, and keeps the newest.
func TestConfigMapTrimsTransitions(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	cm := &ConfigMap{Client: fake.NewClientset(), Namespace: "regcheck", Name: "history", MaxBytes: 8 << 10}
	var total int
	for i := range 60 {
		at := t0.Add(time.Duration(i) * time.Minute)
		_, err := cm.Update(ctx, func(h *History) error {
			h.Merge(recordresult.Snapshot{Cluster: "prod", Time: at, Entries: []recordresult.Entry{{Namespace: "web", OwnerKind: "Deployment", OwnerName: "a",
				Pod: "a-1", Container: "app", Image: "app:latest", Digest: "sha256:" + strings.Repeat("0", 60) + time.Duration(i).String()}}})
			h.AddTransitions(tr("a", "sha256:x", "sha256:y", at))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		total += 2
	}
	h, err := cm.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept := len(h.Records) + len(h.Transitions)
	if kept == total || len(h.Transitions) == 0 || len(h.Records) == 0 {
		t.Fatalf("kept %d records and %d transitions of %d: nothing trimmed, or one kind wiped", len(h.Records), len(h.Transitions), total)
	}
	last := t0.Add(59 * time.Minute)
	if !h.Transitions[len(h.Transitions)-1].Time.Equal(last) {
		t.Errorf("the newest transition is gone: %+v", h.Transitions[len(h.Transitions)-1])
	}
	oldestT := h.Transitions[0].Time
	for _, r := range h.Records {
		if r.LastSeen.Before(oldestT.Add(-time.Minute)) {
			t.Errorf("record last seen %v kept while the transition of %v was dropped", r.LastSeen, oldestT.Add(-time.Minute))
		}
	}
}
