package record

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/regcheck/regcheck/results/recordresult"
)

// benchHistory is a history the size regcheck watch's bench ends with:
// pods pods of one container, each with a first sighting and changes
// transitions after it.
func benchHistory(pods, changes int) *History {
	h := NewHistory()
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	digest := func(i, n int) string { return fmt.Sprintf("sha256:%064x", (i%50)*2+n%2) }
	var es []recordresult.Entry
	for i := range pods {
		es = append(es, benchEntry(i, digest(i, 0), t0))
		h.Transitions = append(h.Transitions, benchTransition(i, "", digest(i, 0), 0, t0))
	}
	h.Merge(recordresult.Snapshot{Cluster: "kind", Time: t0, Entries: es})
	for c := range changes {
		i := c % pods
		n := c/pods + 1
		at := t0.Add(time.Duration(c) * 5 * time.Millisecond)
		h.Transitions = append(h.Transitions, benchTransition(i, digest(i, n-1), digest(i, n), int32(n), at))
	}
	h.sortTransitions()
	return h
}

func benchEntry(i int, digest string, at time.Time) recordresult.Entry {
	return recordresult.Entry{Cluster: "kind", Time: at, Namespace: "bench", OwnerKind: "Pod", OwnerName: fmt.Sprintf("p-%05d", i),
		Pod: fmt.Sprintf("p-%05d", i), Container: "app", Image: fmt.Sprintf("127.0.0.1:5000/bench/r%02d:latest", i%50),
		Digest: digest, ImageID: fmt.Sprintf("127.0.0.1:5000/bench/r%02d@%s", i%50, digest), Node: fmt.Sprintf("node-%d", i%20),
		PullPolicy: "Always", StartedAt: at.Truncate(time.Second)}
}

func benchTransition(i int, from, to string, restarts int32, at time.Time) Transition {
	exit := int32(1)
	return Transition{Cluster: "kind", Namespace: "bench", OwnerKind: "Pod", OwnerName: fmt.Sprintf("p-%05d", i), Container: "app",
		Pod: fmt.Sprintf("p-%05d", i), Node: fmt.Sprintf("node-%d", i%20), Image: fmt.Sprintf("127.0.0.1:5000/bench/r%02d:latest", i%50),
		PreviousImage: fmt.Sprintf("127.0.0.1:5000/bench/r%02d:latest", i%50), From: from, To: to, Time: at,
		RestartCount: restarts, LastTerminationReason: "Error", LastExitCode: &exit}
}

// BenchmarkFileUpdateWatchSized is one batched write of regcheck watch at
// the end of its bench: 10,000 records and 21,000 transitions in the file,
// 400 new transitions added. It reports the bytes allocated per write and
// the heap in use after it (live-heap-MiB).
func BenchmarkFileUpdateWatchSized(b *testing.B) {
	ctx := context.Background()
	f := &File{Path: filepath.Join(b.TempDir(), "history.json")}
	base := benchHistory(10000, 11000)
	if _, err := f.Update(ctx, func(h *History) error { *h = *base; return nil }); err != nil {
		b.Fatal(err)
	}
	base = nil
	t0 := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		var ts []Transition
		for j := range 400 {
			ts = append(ts, benchTransition(j, "sha256:a", "sha256:b", int32(n+2), t0.Add(time.Duration(n*400+j)*time.Millisecond)))
		}
		if _, err := f.Update(ctx, func(h *History) error { h.AddTransitions(ts...); return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "live-heap-MiB")
}
