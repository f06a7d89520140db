package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Name is the name of one of regcheck's metric families. Package report
// writes the series of each, and the alert rules query them by the same
// constants. docs/formats.md lists them all.
type Name string

// A scan's metrics.
const (
	ImageVerdict       Name = "regcheck_image_verdict"
	ImageBroken        Name = "regcheck_image_broken"
	Images             Name = "regcheck_images"
	Findings           Name = "regcheck_findings"
	UseFindings        Name = "regcheck_use_findings"
	RegistryRequests   Name = "regcheck_registry_requests"
	RateLimit          Name = "regcheck_registry_rate_limit"
	RateLimitRemaining Name = "regcheck_registry_rate_limit_remaining"
	RateLimitWindow    Name = "regcheck_registry_rate_limit_window_seconds"
	PullsWithheld      Name = "regcheck_registry_pulls_withheld"
	InputsSkipped      Name = "regcheck_inputs_skipped"
	InputSkippedInfo   Name = "regcheck_input_skipped_info"
	ScanDuration       Name = "regcheck_scan_duration_seconds"
	ScanTimestamp      Name = "regcheck_scan_timestamp_seconds"
)

// A record run's metrics, and the one scan and record share.
const (
	RecordContainers    Name = "regcheck_record_containers"
	RecordDigestChanged Name = "regcheck_record_digest_changed"
	RecordTrimmed       Name = "regcheck_record_trimmed"
	RecordDuration      Name = "regcheck_record_duration_seconds"
	LastSuccess         Name = "regcheck_last_success_timestamp_seconds"
)

// Label names.
const (
	LabelReference    = "reference" // an image reference as written
	LabelVerdict      = "verdict"
	LabelCode         = "code" // a finding code
	LabelSeverity     = "severity"
	LabelNamespace    = "namespace"
	LabelWorkloadKind = "workload_kind"
	LabelWorkload     = "workload"
	LabelContainer    = "container"
	LabelImage        = "image"
	LabelHost         = "host" // a registry host
	LabelKind         = "kind" // of a request; of an input skipped (SkippedError, SkippedNotice)
	LabelStatus       = "status"
	LabelSource       = "source" // a file, or stdin
	LabelCommand      = "command"
)

// Label values the alert rules ask for.
const (
	// SkippedError and SkippedNotice are the kinds of input skipped: not
	// read, which makes the scan incomplete, or skipped on purpose.
	SkippedError, SkippedNotice = "error", "notice"
	// CommandScan and CommandRecord are the commands whose last success
	// is a series.
	CommandScan, CommandRecord = "scan", "record"
)

// UseLabels are the labels of a use's series, in this order: which
// workload's container runs which image, its verdict and a finding code.
var UseLabels = []string{LabelNamespace, LabelWorkloadKind, LabelWorkload, LabelContainer, LabelImage, LabelVerdict, LabelCode}

// family is a gauge family's help text and labels, in the order its
// series' label values are given.
type family struct {
	help   string
	labels []string
}

// families holds every Name's help and labels.
var families = map[Name]family{
	ImageVerdict:       {"The verdict of each image reference scanned, as a label; always 1.", []string{LabelReference, LabelVerdict}},
	ImageBroken:        {"Whether a node can no longer pull the image reference (1) or can (0).", []string{LabelReference}},
	Images:             {"Images scanned, by verdict.", []string{LabelVerdict}},
	Findings:           {"Findings, by code and severity.", []string{LabelCode, LabelSeverity}},
	UseFindings:        {"Findings on the image each use (a workload's container) runs, by code: one series per use and code, valued the number of findings; code \"\" and 0 for an image with none.", UseLabels},
	RegistryRequests:   {"HTTP requests the scan sent, by registry host, kind and status.", []string{LabelHost, LabelKind, LabelStatus}},
	RateLimit:          {"Pulls (manifest GETs) the registry's rate limit allows per window, as it last said (RateLimit-Limit).", []string{LabelHost}},
	RateLimitRemaining: {"Pulls the registry last said are left in its window (RateLimit-Remaining).", []string{LabelHost}},
	RateLimitWindow:    {"The window of the registry's rate limit, in seconds.", []string{LabelHost}},
	PullsWithheld:      {"Manifest GETs the scan did not send, to leave the registry's last pulls in reserve or to stay within the cap on pulls.", []string{LabelHost}},
	InputsSkipped:      {"Inputs (files, lines) not read: kind error makes the scan incomplete, kind notice was skipped on purpose.", []string{LabelKind}},
	InputSkippedInfo:   {"Each input (file, or stdin) with a part not read, by kind; always 1.", []string{LabelKind, LabelSource}},
	ScanDuration:       {"How long the scan took.", nil},
	ScanTimestamp:      {"When the scan started, in seconds since the Unix epoch.", nil},

	RecordContainers:    {"Containers recorded with the digest they run.", nil},
	RecordDigestChanged: {"Each workload container now running another digest than at the previous snapshot; always 1.", []string{LabelNamespace, LabelWorkloadKind, LabelWorkload, LabelContainer, LabelImage}},
	RecordTrimmed:       {"The oldest records dropped to fit the store's size limit.", nil},
	RecordDuration:      {"How long the record run took.", nil},
	LastSuccess:         {"When a run of the command last finished its work (a verdict for every input it could read), in seconds since the Unix epoch.", []string{LabelCommand}},
}

// Gauge registers the family with reg, every series a gauge (a run's
// result is a snapshot the next run replaces), and returns it. Its
// WithLabelValues takes the label values in the order of the family's
// labels: UseLabels for UseFindings, the order of the docs/formats.md
// table for the others.
func (n Name) Gauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	f := n.family()
	return promauto.With(reg).NewGaugeVec(prometheus.GaugeOpts{Name: string(n), Help: f.help}, f.labels)
}

func (n Name) family() family {
	f, ok := families[n]
	if !ok {
		panic("metrics: no family " + string(n))
	}
	return f
}
