package report

import (
	"github.com/regcheck/regcheck/types"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/common/expfmt"

	"github.com/regcheck/regcheck/record"
)

// Prometheus writes the result's metrics (Metrics) in the Prometheus text
// exposition format 0.0.4, for node_exporter's textfile collector or a
// Pushgateway: every metric a gauge, families and series sorted, no
// timestamps (the textfile collector rejects them; the metrics say when).
func Prometheus(w io.Writer, r *types.Result) error {
	return WriteMetrics(w, Metrics(r))
}

// WriteMetrics writes what g gathers in the text exposition format 0.0.4.
func WriteMetrics(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// UseLabels are the labels of a use's series, in this order: which
// workload's container runs which image, its verdict and a finding code.
var UseLabels = []string{"namespace", "workload_kind", "workload", "container", "image", "verdict", "code"}

// Metrics returns a registry holding the result's metrics, every one a
// gauge: a result is a snapshot, replaced by the next run's. Besides the
// per-image and per-run series, there is one regcheck_use_findings series
// per use (namespace, workload kind and name, container, image, verdict)
// and finding code of its image, valued the number of findings of that
// code; a use whose image has no finding has one series with code "" and
// value 0. Pods of one workload are one use. docs/formats.md lists them all.
func Metrics(r *types.Result) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return promauto.With(reg).NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	verdict := gauge("regcheck_image_verdict", "The verdict of each image reference scanned, as a label; always 1.", "reference", "verdict")
	broken := gauge("regcheck_image_broken", "Whether a node can no longer pull the image reference (1) or can (0).", "reference")
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

	images := gauge("regcheck_images", "Images scanned, by verdict.", "verdict")
	for v, n := range r.Count() {
		images.WithLabelValues(string(v)).Set(float64(n))
	}

	useMax := map[string]int{} // labels joined by NUL: the largest count
	findings := gauge("regcheck_findings", "Findings, by code and severity.", "code", "severity")
	uses := gauge("regcheck_use_findings", "Findings on the image each use (a workload's container) runs, by code: one series per use and code, valued the number of findings; code \"\" and 0 for an image with none.", UseLabels...)
	for _, im := range r.Images {
		perCode := map[types.Code]int{}
		for _, f := range im.Findings {
			findings.WithLabelValues(string(f.Code), f.Severity.String()).Inc()
			perCode[f.Code]++
		}
		ref := ImageLabel(im.Reference)
		for _, u := range im.Uses {
			labels := []string{LabelValue(u.Namespace), LabelValue(u.Kind), LabelValue(u.Name), LabelValue(u.Container), ref, string(im.Verdict)}
			if len(perCode) == 0 {
				uses.WithLabelValues(append(labels, "")...).Set(0)
			}
			for c, n := range perCode {
				// Two entries of one reference (one per running digest)
				// may name one use: its series keeps the larger count.
				key := strings.Join(append(labels, string(c)), "\x00")
				useMax[key] = max(useMax[key], n)
			}
		}
	}
	for key, n := range useMax {
		uses.WithLabelValues(strings.Split(key, "\x00")...).Set(float64(n))
	}

	requests := gauge("regcheck_registry_requests", "HTTP requests the scan sent, by registry host, kind and status.", "host", "kind", "status")
	for _, c := range r.Requests {
		requests.WithLabelValues(LabelValue(c.Host), c.Kind, c.Status).Add(float64(c.Count))
	}

	for _, g := range rateLimitGauges(r.RateLimits) {
		if len(g.byHost) > 0 {
			v := gauge(g.name, g.help, "host")
			for host, x := range g.byHost {
				v.WithLabelValues(LabelValue(host)).Set(x)
			}
		}
	}

	skipped := gauge("regcheck_inputs_skipped", "Inputs (files, lines) not read: kind error makes the scan incomplete, kind notice was skipped on purpose.", "kind")
	skippedInfo := gauge("regcheck_input_skipped_info", "Each input (file, or stdin) with a part not read, by kind; always 1.", "kind", "source")
	skipped.WithLabelValues("error")
	skipped.WithLabelValues("notice")
	for _, ie := range r.InputErrors {
		kind := "error"
		if ie.Notice {
			kind = "notice"
		}
		skipped.WithLabelValues(kind).Inc()
		skippedInfo.WithLabelValues(kind, LabelValue(ie.Source)).Set(1)
	}

	gauge("regcheck_scan_duration_seconds", "How long the scan took.").WithLabelValues().Set(r.Duration.Seconds())
	if !r.Started.IsZero() {
		gauge("regcheck_scan_timestamp_seconds", "When the scan started, in seconds since the Unix epoch.").WithLabelValues().Set(unixSeconds(r.Started))
		if succeeded(r) {
			LastSuccess(reg, "scan", unixSeconds(r.Started.Add(r.Duration)))
		}
	}
	return reg
}

// RecordMetrics returns a registry holding the metrics of a record run
// that started at start and had saved snap, with res, at end: the containers recorded, the owner
// containers now running another digest than at the previous snapshot
// (one series each, labelled as a scan's uses are), the records trimmed to
// fit the store, how long the run took, and its last success.
func RecordMetrics(snap record.Snapshot, res record.Result, start, end time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return promauto.With(reg).NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	gauge("regcheck_record_containers", "Containers recorded with the digest they run.").WithLabelValues().Set(float64(len(snap.Entries)))
	changed := gauge("regcheck_record_digest_changed", "Each workload container now running another digest than at the previous snapshot; always 1.",
		"namespace", "workload_kind", "workload", "container", "image")
	for _, c := range res.Changes {
		changed.WithLabelValues(LabelValue(c.Namespace), LabelValue(c.OwnerKind), LabelValue(c.OwnerName), LabelValue(c.Container), ImageLabel(c.Image)).Set(1)
	}
	gauge("regcheck_record_trimmed", "The oldest records dropped to fit the store's size limit.").WithLabelValues().Set(float64(res.Trimmed))
	gauge("regcheck_record_duration_seconds", "How long the record run took.").WithLabelValues().Set(end.Sub(start).Seconds())
	LastSuccess(reg, "record", unixSeconds(end))
	return reg
}

// LastSuccess registers regcheck_last_success_timestamp_seconds{command}
// with reg: when a run of command last finished its work, in seconds since
// the Unix epoch.
func LastSuccess(reg prometheus.Registerer, command string, unix float64) {
	promauto.With(reg).NewGaugeVec(prometheus.GaugeOpts{
		Name: "regcheck_last_success_timestamp_seconds",
		Help: "When a run of the command last finished its work (a verdict for every input it could read), in seconds since the Unix epoch.",
	}, []string{"command"}).WithLabelValues(command).Set(unix)
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
// the user and password of a URL left out.
func LabelValue(s string) string {
	s = printableLines(s)
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		return scheme + "://" + dropUserinfo(rest)
	}
	return s
}

// ImageLabel is LabelValue for an image reference, which may be the text
// as written when it did not parse: a credential in front of its host
// ("user:token@registry/app") is left out too, a digest ("app@sha256:…")
// kept.
func ImageLabel(ref string) string {
	s := LabelValue(ref)
	if strings.Contains(s, "://") {
		return s
	}
	host, _, _ := strings.Cut(s, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 && !digestAfter.MatchString(s[at+1:]) {
		return s[at+1:]
	}
	return s
}

// digestAfter matches what follows the @ of a digest reference.
var digestAfter = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$`)

// dropUserinfo removes "user:password@" from the front of a URL's
// authority (what follows its "scheme://").
func dropUserinfo(rest string) string {
	host, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		return rest[at+1:]
	}
	return rest
}
