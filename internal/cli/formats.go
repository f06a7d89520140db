package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/report"
)

// promFormat is scan's -o for the Prometheus textfile, which metrics
// writes: report renders every other format, and links no HTTP.
const promFormat = "prom"

// outputFormats are scan's -o formats, sorted.
func outputFormats() []string {
	return slices.Sorted(slices.Values(append(report.Formats(), promFormat)))
}

// outputRenderer is the renderer of one of outputFormats.
func outputRenderer(format string) (report.Renderer, error) {
	if format == promFormat {
		return report.RendererFunc(metrics.WriteScan), nil
	}
	if r, err := report.For(format); err == nil {
		return r, nil
	}
	return nil, fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(outputFormats(), ", "))
}
