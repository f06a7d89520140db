package scan_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// WithProgress is called once as a Run starts (an invalid reference is
// done already) and once per image walked, one call at a time, with the
// requests sent so far; its last call has every image done.
func TestWithProgress(t *testing.T) {
	tr := newRegistry(t)
	var (
		active   atomic.Int32
		overlaps atomic.Int32
		mu       sync.Mutex
		calls    []scan.Progress
	)
	progress := scan.WithProgress(func(p scan.Progress) {
		if active.Add(1) != 1 {
			overlaps.Add(1)
		}
		time.Sleep(time.Millisecond) // long enough for another call to overlap
		mu.Lock()
		calls = append(calls, p)
		mu.Unlock()
		active.Add(-1)
	})
	targets := []types.Target{{Ref: "Not A/Reference::"}}
	for _, n := range []string{"single", "buildx", "multiarch"} {
		targets = append(targets, types.Target{Ref: tr.fixture(n).Ref})
	}
	res, err := scan.Run(context.Background(), targets, append(opts(), progress)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 4 || overlaps.Load() != 0 {
		t.Fatalf("calls %+v (%d overlapping), want 4, one at a time", calls, overlaps.Load())
	}
	if first := calls[0]; first.Done != 1 || first.Total != 4 || first.Requests != 0 {
		t.Errorf("first call %+v, want 1 of 4 done, no request", first)
	}
	sent := 0
	for _, c := range res.Requests {
		sent += c.Count
	}
	for i, c := range calls[1:] {
		if c.Done != i+2 || c.Total != 4 || c.Requests < calls[i].Requests {
			t.Errorf("call %d: %+v after %+v", i+1, c, calls[i])
		}
	}
	if last := calls[3]; last.Requests != sent {
		t.Errorf("last call %+v, the scan sent %d requests", last, sent)
	}
}
