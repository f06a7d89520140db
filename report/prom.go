package report

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/regcheck/regcheck/scan"
)

// Prometheus writes the result in the Prometheus text exposition format
// 0.0.4, for node_exporter's textfile collector or a Pushgateway: every
// metric a gauge, series sorted, no timestamps (the textfile collector
// rejects them; regcheck_scan_timestamp_seconds says when).
func Prometheus(w io.Writer, r *scan.Result) error {
	bw := bufio.NewWriter(w)
	var images, broken []sample
	seen := map[string]bool{}
	for _, im := range r.Sorted() {
		if seen[im.Reference] {
			continue // one series per reference: keep the worst
		}
		seen[im.Reference] = true
		images = append(images, sample{[]string{"reference", im.Reference, "verdict", string(im.Verdict)}, 1})
		b := 0.0
		if im.Verdict == scan.Broken {
			b = 1
		}
		broken = append(broken, sample{[]string{"reference", im.Reference}, b})
	}

	var verdicts []sample
	for v, n := range r.Count() {
		verdicts = append(verdicts, sample{[]string{"verdict", string(v)}, float64(n)})
	}

	findings := map[[2]string]int{}
	for _, im := range r.Images {
		for _, f := range im.Findings {
			findings[[2]string{string(f.Code), f.Severity.String()}]++
		}
	}
	var bySeverity []sample
	for k, n := range findings {
		bySeverity = append(bySeverity, sample{[]string{"code", k[0], "severity", k[1]}, float64(n)})
	}

	requests := map[[3]string]int{}
	for _, c := range r.Requests {
		requests[[3]string{c.Host, c.Kind, c.Status}] += c.Count
	}
	var byHost []sample
	for k, n := range requests {
		byHost = append(byHost, sample{[]string{"host", k[0], "kind", k[1], "status", k[2]}, float64(n)})
	}

	inputs := map[string]int{"error": 0, "notice": 0}
	var skippedInputs []sample
	seenInput := map[[2]string]bool{}
	for _, ie := range r.InputErrors {
		kind := "error"
		if ie.Notice {
			kind = "notice"
		}
		inputs[kind]++
		if k := [2]string{ie.Source, kind}; !seenInput[k] {
			seenInput[k] = true
			skippedInputs = append(skippedInputs, sample{[]string{"kind", kind, "source", ie.Source}, 1})
		}
	}
	var skipped []sample
	for k, n := range inputs {
		skipped = append(skipped, sample{[]string{"kind", k}, float64(n)})
	}

	families := []family{
		{"regcheck_image_verdict", "The verdict of each image reference scanned, as a label; always 1.", images},
		{"regcheck_image_broken", "Whether a node can no longer pull the image reference (1) or can (0).", broken},
		{"regcheck_images", "Images scanned, by verdict.", verdicts},
		{"regcheck_findings", "Findings, by code and severity.", bySeverity},
		{"regcheck_registry_requests", "HTTP requests the scan sent, by registry host, kind and status.", byHost},
		{"regcheck_inputs_skipped", "Inputs (files, lines) not read: kind error makes the scan incomplete, kind notice was skipped on purpose.", skipped},
		{"regcheck_input_skipped_info", "Each input (file, or stdin) with a part not read, by kind; always 1.", skippedInputs},
		{"regcheck_scan_duration_seconds", "How long the scan took.", []sample{{nil, r.Duration.Seconds()}}},
	}
	if !r.Started.IsZero() {
		families = append(families, family{"regcheck_scan_timestamp_seconds", "When the scan started, in seconds since the Unix epoch.",
			[]sample{{nil, float64(r.Started.Unix()) + float64(r.Started.Nanosecond())/1e9}}})
	}
	for _, f := range families {
		f.write(bw)
	}
	return bw.Flush()
}

// family is a gauge's HELP, TYPE and samples.
type family struct {
	name, help string
	samples    []sample
}

// sample is one series: label names and values, alternating, and its value.
type sample struct {
	labels []string
	value  float64
}

// write writes the family, its series sorted by label values. A family
// with no series is left out.
func (f family) write(w *bufio.Writer) {
	if len(f.samples) == 0 {
		return
	}
	slices.SortFunc(f.samples, func(a, b sample) int { return slices.Compare(a.labels, b.labels) })
	w.WriteString("# HELP " + f.name + " " + helpEscaper.Replace(f.help) + "\n")
	w.WriteString("# TYPE " + f.name + " gauge\n")
	for _, s := range f.samples {
		w.WriteString(f.name)
		for i := 0; i < len(s.labels); i += 2 {
			if i == 0 {
				w.WriteByte('{')
			} else {
				w.WriteByte(',')
			}
			w.WriteString(s.labels[i] + `="` + labelValue(s.labels[i+1]) + `"`)
		}
		if len(s.labels) > 0 {
			w.WriteByte('}')
		}
		w.WriteString(" " + strconv.FormatFloat(s.value, 'g', -1, 64) + "\n")
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// labelValue escapes a label value as the format asks (backslash, double
// quote, line feed) after Printable, which also writes bytes that are not
// UTF-8 (a parser rejects them) as visible escapes.
func labelValue(s string) string {
	return labelEscaper.Replace(printableLines(s))
}
