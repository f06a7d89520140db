package watch

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/internal/testing/logbuf"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
)

// A history that outgrows its ConfigMap is trimmed oldest first: the
// watcher says so in its log and in regcheck_record_trimmed, and the
// newest transition is kept.
func TestWatcherExportsTrim(t *testing.T) {
	ctx := context.Background()
	d, rs := deployment("reg.example/app:latest")
	c := fake.NewClientset(d, rs)
	st := &record.ConfigMap{Client: c, Namespace: "regcheck", Name: "history", MaxBytes: 4 << 10}
	var logs logbuf.Buffer
	w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond, Interval: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	waitFor(t, "ready", w.Ready)
	const pods = 20
	for i := range pods {
		digest := fmt.Sprintf("sha256:%064x", i)
		if _, err := c.CoreV1().Pods("web").Create(ctx, pod(fmt.Sprintf("app-1-%02d", i), "reg.example/app:latest", digest, 0, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Millisecond) // one write each, or nearly
	}
	newest := fmt.Sprintf("sha256:%064x", pods-1)
	waitFor(t, "the newest pod's digest in the history", func() bool {
		for _, tr := range load(t, st).Transitions {
			if tr.To == newest {
				return true
			}
		}
		return false
	})
	trimmed := trimmedSeries(t, w)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h := load(t, st)
	if len(h.Records)+len(h.Transitions) >= 2*pods {
		t.Fatalf("history holds %d records and %d transitions: nothing was trimmed (size limit too large for the test)", len(h.Records), len(h.Transitions))
	}
	if trimmed < 1 {
		t.Errorf("regcheck_record_trimmed = %v after trimming writes, want ≥ 1", trimmed)
	}
	if want := 2*pods - len(h.Records) - len(h.Transitions); trimmed < float64(want) {
		t.Errorf("regcheck_record_trimmed = %v, want at least the %d items missing from the history", trimmed, want)
	}
	if !strings.Contains(logs.String(), "exceeded") || !strings.Contains(logs.String(), "trimmed=") {
		t.Errorf("the log does not say the history was trimmed:\n%s", logs.String())
	}
}

func trimmedSeries(t *testing.T, w *Watcher) float64 {
	t.Helper()
	mfs, err := w.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == string(metrics.RecordTrimmed) && len(mf.Metric) == 1 {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s series", metrics.RecordTrimmed)
	return 0
}
