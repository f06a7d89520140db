package metrics

import (
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/regcheck/regcheck/types"
)

// BenchmarkUseScrape is a scrape of the per-use series at the watcher
// bench's size: 50 images, 10,000 uses (each its own bare pod, half of
// them with a drift finding), gathered and written in the text format as
// /metrics serves them: through a client_golang registry of the
// UseCollector (collect), and through its own Gather (gather, as regcheck
// watch serves them). It reports what one scrape allocates (B/op) and the
// series it makes.
func BenchmarkUseScrape(b *testing.B) {
	res := &types.Result{}
	for i := range 50 {
		im := &types.Image{Reference: fmt.Sprintf("127.0.0.1:5000/team/app%d:latest", i), Verdict: types.AtRisk}
		for j := range 200 {
			im.Uses = append(im.Uses, types.Use{Source: "cluster", Kind: "Pod", Namespace: "bench",
				Name: fmt.Sprintf("app%d-%d", i, j), Pod: fmt.Sprintf("app%d-%d", i, j), Container: "app"})
			if j%2 == 0 {
				im.Findings = append(im.Findings, types.Finding{Code: types.Drift})
			}
		}
		im.Findings = append(im.Findings, types.Finding{Code: types.MutableReference})
		res.Images = append(res.Images, im)
	}
	snap := NewUseSnapshot(res)
	c := NewUseCollector(func() *UseSnapshot { return snap }).WithAvailability()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for _, bc := range []struct {
		name string
		g    prometheus.Gatherer
	}{
		{"collect", reg},                    // a registry of the collector
		{"gather", prometheus.Gatherers{c}}, // the collector's own Gather, as regcheck watch serves it
	} {
		b.Run(bc.name, func(b *testing.B) {
			var series int
			b.ReportAllocs()
			for b.Loop() {
				mfs, err := bc.g.Gather()
				if err != nil {
					b.Fatal(err)
				}
				series = 0
				for _, mf := range mfs {
					series += len(mf.Metric)
					if _, err := expfmt.MetricFamilyToText(io.Discard, mf); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(series), "series")
		})
	}
}
