package metrics

import (
	"io"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/types"
)

// WriteScan writes the result's series (ScanSeries) in the Prometheus text
// exposition format 0.0.4, for node_exporter's textfile collector or a
// Pushgateway: every metric a gauge, families and series sorted, no
// timestamps (the textfile collector rejects them; the metrics say when).
// It is scan's -o prom.
func WriteScan(w io.Writer, r *types.Result) error {
	return Write(w, ScanSeries(r))
}

// ScanSeries returns a registry holding the result's metrics, every one a
// gauge: a result is a snapshot, replaced by the next run's. Besides the
// per-image and per-run series, there is one regcheck_use_findings series
// per use (namespace, workload kind and name, container, image, verdict)
// and finding code of its image, valued the number of findings of that
// code; a use whose image has no finding has one series with code "" and
// value 0. Pods of one workload are one use. The families are
// named in families.go; docs/formats.md lists them all.
func ScanSeries(r *types.Result) *prometheus.Registry {
	reg := runSeries(r)
	snap := NewUseSnapshot(r)
	reg.MustRegister(NewUseCollector(func() *UseSnapshot { return snap }))
	return reg
}

// runSeries returns a registry holding the result's per-image and per-run
// series: ScanSeries but the per-use ones.
func runSeries(r *types.Result) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	imageSeries(reg, r)
	requests := RegistryRequests.Gauge(reg)
	for _, c := range r.Requests {
		requests.WithLabelValues(LabelValue(c.Host), c.Kind, c.Status).Add(float64(c.Count))
	}
	for _, g := range rateLimitGauges(r.RateLimits) {
		if len(g.byHost) > 0 {
			v := g.name.Gauge(reg)
			for host, x := range g.byHost {
				v.WithLabelValues(LabelValue(host)).Set(x)
			}
		}
	}
	inputSeries(reg, r)
	ScanDuration.Gauge(reg).WithLabelValues().Set(r.Duration.Seconds())
	if !r.Started.IsZero() {
		ScanTimestamp.Gauge(reg).WithLabelValues().Set(unixSeconds(r.Started))
		if succeeded(r) {
			lastSuccess(reg, CommandScan, unixSeconds(r.Started.Add(r.Duration)))
		}
	}
	return reg
}

// imageSeries registers the per-image families with reg: each reference's
// verdict and whether it is broken, the images by verdict and the findings
// by code and severity.
func imageSeries(reg prometheus.Registerer, r *types.Result) {
	verdict := ImageVerdict.Gauge(reg)
	broken := ImageBroken.Gauge(reg)
	seen := map[string]bool{}
	for _, im := range r.Sorted() {
		if seen[im.Reference] {
			continue // one series per reference: keep the worst
		}
		seen[im.Reference] = true
		ref := ImageLabel(im.Reference)
		verdict.WithLabelValues(ref, string(im.Verdict)).Set(1)
		b := 0.0
		if im.Verdict == types.Broken {
			b = 1
		}
		broken.WithLabelValues(ref).Set(b)
	}

	images := Images.Gauge(reg)
	for v, n := range r.Count() {
		images.WithLabelValues(string(v)).Set(float64(n))
	}
	findings := Findings.Gauge(reg)
	for _, im := range r.Images {
		for _, f := range im.Findings {
			findings.WithLabelValues(string(f.Code), f.Severity.String()).Inc()
		}
	}
}

// inputSeries registers the inputs not read with reg: how many of each
// kind (both kinds, 0 included), and which.
func inputSeries(reg prometheus.Registerer, r *types.Result) {
	skipped := InputsSkipped.Gauge(reg)
	skippedInfo := InputSkippedInfo.Gauge(reg)
	skipped.WithLabelValues(SkippedError)
	skipped.WithLabelValues(SkippedNotice)
	for _, ie := range r.InputErrors {
		kind := SkippedError
		if ie.Notice {
			kind = SkippedNotice
		}
		skipped.WithLabelValues(kind).Inc()
		skippedInfo.WithLabelValues(kind, LabelValue(ie.Source)).Set(1)
	}
}

// hostGauge is one gauge with a series per registry host.
type hostGauge struct {
	name   Name
	byHost map[string]float64 // host (not yet a label value) → value
}

// rateLimitGauges are the pull budgets the registries said, and the
// manifest GETs withheld, per host; none for a scan that met no budget.
func rateLimitGauges(rls []types.RateLimit) []hostGauge {
	if len(rls) == 0 {
		return nil
	}
	limit := hostGauge{RateLimit, map[string]float64{}}
	remaining := hostGauge{RateLimitRemaining, map[string]float64{}}
	window := hostGauge{RateLimitWindow, map[string]float64{}}
	withheld := hostGauge{PullsWithheld, map[string]float64{}}
	for _, rl := range rls {
		host := rl.Host
		withheld.byHost[host] = float64(rl.Withheld)
		if !rl.Reported {
			continue
		}
		remaining.byHost[host] = float64(rl.Remaining)
		if rl.Limit > 0 {
			limit.byHost[host] = float64(rl.Limit)
		}
		if rl.WindowSeconds > 0 {
			window.byHost[host] = float64(rl.WindowSeconds)
		}
	}
	return []hostGauge{limit, remaining, window, withheld}
}

// RecordSeries returns a registry holding the metrics of a record run
// that started at start and had saved snap, with res, at end: the containers recorded, the owner
// containers now running another digest than at the previous snapshot
// (one series each, labelled as a scan's uses are), the records trimmed to
// fit the store, how long the run took, and its last success.
func RecordSeries(snap recordresult.Snapshot, res recordresult.Result, start, end time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	RecordContainers.Gauge(reg).WithLabelValues().Set(float64(len(snap.Entries)))
	changed := RecordDigestChanged.Gauge(reg)
	for _, c := range res.Changes {
		changed.WithLabelValues(LabelValue(c.Namespace), LabelValue(c.OwnerKind), LabelValue(c.OwnerName), LabelValue(c.Container), ImageLabel(c.Image)).Set(1)
	}
	RecordTrimmed.Gauge(reg).WithLabelValues().Set(float64(res.Trimmed))
	RecordDuration.Gauge(reg).WithLabelValues().Set(end.Sub(start).Seconds())
	lastSuccess(reg, CommandRecord, unixSeconds(end))
	return reg
}

// lastSuccess registers regcheck_last_success_timestamp_seconds{command}
// with reg: when a run of command last finished its work, in seconds since
// the Unix epoch.
func lastSuccess(reg prometheus.Registerer, command string, unix float64) {
	LastSuccess.Gauge(reg).WithLabelValues(command).Set(unix)
}

// succeeded: a scan that could read no image reference at all (every
// input in error) is not a successful run; one that found broken images,
// or could not ask a registry, is.
func succeeded(r *types.Result) bool {
	if len(r.Images) > 0 {
		return true
	}
	for _, ie := range r.InputErrors {
		if !ie.Notice {
			return false
		}
	}
	return true
}

func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// LabelValue makes s fit to be a Prometheus label value that a person may
// read in a terminal: control characters other than line feed written as
// visible escapes (Printable; the format escapes line feeds itself), and
// the user and password of a URL left out by the project's one redaction
// rule (redact.DropUserinfo).
func LabelValue(s string) string {
	s = printable.Lines(s)
	if strings.Contains(s, "://") {
		return redact.DropUserinfo(s)
	}
	return s
}

// ImageLabel is LabelValue for an image reference, which may be the text
// as written when it did not parse: a credential in front of its host
// ("user:token@registry/app") is left out, a digest ("app@sha256:…")
// kept.
func ImageLabel(ref string) string { return redact.DropUserinfo(LabelValue(ref)) }

// WalkSeries returns a registry holding the series of the watcher's deep
// walk: a scan's (ScanSeries), and regcheck_container_image_available per
// owner container.
func WalkSeries(res *types.Result) *prometheus.Registry {
	reg := WalkRunSeries(res)
	snap := NewUseSnapshot(res)
	reg.MustRegister(NewUseCollector(func() *UseSnapshot { return snap }).WithAvailability())
	return reg
}

// WalkRunSeries returns a registry holding the per-image and per-run
// series of the watcher's deep walk, a few per image: WalkSeries but the
// per-use ones, which a UseCollector WithAvailability makes at scrape time.
func WalkRunSeries(res *types.Result) *prometheus.Registry { return runSeries(res) }

// useContainer is the container label of a use: its container, or for an
// image volume (no container) its volume, so that the image volumes of one
// owner never share one series.
func useContainer(u types.Use) string {
	if u.Container == "" {
		return u.Volume
	}
	return u.Container
}
