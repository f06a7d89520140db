package report

import (
	"io"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/types"
)

// Prometheus writes the result's series (metrics.ScanSeries) in the
// Prometheus text exposition format 0.0.4, for node_exporter's textfile
// collector or a Pushgateway: every metric a gauge, families and series
// sorted, no timestamps (the textfile collector rejects them; the metrics
// say when).
func Prometheus(w io.Writer, r *types.Result) error {
	return metrics.Write(w, metrics.ScanSeries(r))
}
