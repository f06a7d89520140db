//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/testing/grafana"
)

// panelsOverRun evaluates every panel's query over the run with the real
// promtool, checks that the panels show what the run made (the broken
// image, the unplanned upgrade with its pin-back command and alert, the
// host that did not answer, one leader), renders the panels to a static
// page and screenshots it in headless Chromium. REGCHECK_DASHBOARD_PNG
// names a file to copy the screenshot to (docs/dashboard.png).
func panelsOverRun(t *testing.T, d *grafana.Dashboard, qs []grafana.Query, run *dashboardRun) {
	browser := chromiumBinary(t)
	var exprs []string
	for _, q := range qs {
		if q.Panel != nil && !slices.Contains(exprs, q.Expr) {
			exprs = append(exprs, q.Expr)
		}
	}
	input := run.evalInput()
	got := evaluate(t, input, exprs)
	t.Logf("promtool evaluated %d queries over %d series at %v: %d returned samples", len(exprs), len(input), evalAt, len(got))
	byTitle := func(title string) []sample {
		for _, q := range qs {
			if q.Panel != nil && q.Panel.Title == title {
				return got[q.Expr]
			}
		}
		t.Fatalf("no panel %q", title)
		return nil
	}
	for _, c := range []struct {
		panel string
		want  map[string]string
	}{
		{"Broken and at-risk images, by namespace and workload", map[string]string{"workload": "gone", "image": run.gone, "verdict": "broken"}},
		{"Unplanned upgrades: from and to digest, and the command to pin back", map[string]string{"owner_name": "coturn", "from": run.from, "to": run.to}},
		{"Faults by registry host (no answer, 429, 5xx)", map[string]string{"host": run.stuck, "status": "error"}},
		{"Images regcheck could not check, by code", map[string]string{"workload": "legacy", "code": "unreachable"}},
		{"Digest changes since the previous record (nightly regcheck record)", map[string]string{"workload": "coturn"}},
	} {
		if !hasSample(byTitle(c.panel), c.want) {
			t.Errorf("%s: no row with %v in %v", c.panel, c.want, byTitle(c.panel))
		}
	}
	for _, s := range byTitle("Unplanned upgrades: from and to digest, and the command to pin back") {
		if !strings.HasPrefix(s.labels["pin_back"], "regcheck pin --from-records ") {
			t.Errorf("unplanned upgrade %v: no pin_back command", s.labels)
		}
	}
	for panel, want := range map[string]float64{"Leaders": 1, "RegcheckUnplannedUpgrade firing": 1, "Broken uses": 1} {
		if ss := byTitle(panel); len(ss) != 1 || ss[0].value != want {
			t.Errorf("%s = %v, want %v", panel, ss, want)
		}
	}
	page := renderDashboard(t, d, got, run)
	shot := screenshot(t, browser, page)
	if dst := os.Getenv("REGCHECK_DASHBOARD_PNG"); dst != "" {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot copied to %s", dst)
	}
}

func hasSample(ss []sample, want map[string]string) bool {
	for _, s := range ss {
		ok := true
		for k, v := range want {
			ok = ok && s.labels[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

// screenshot loads the page in headless Chromium, fails on a console
// message, and returns the PNG's path.
func screenshot(t *testing.T, browser, page string) string {
	shot := strings.TrimSuffix(page, ".html") + ".png"
	if _, console := headless(t, browser, "file://"+page, "--screenshot="+shot, "--window-size=1600,"+shotHeight, "--hide-scrollbars", "--force-device-scale-factor=1"); len(console) > 0 {
		t.Errorf("console messages taking the screenshot:\n%s", strings.Join(console, "\n"))
	}
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() < 20<<10 {
		t.Fatalf("screenshot: %v (%v)", err, fi)
	}
	t.Logf("the page and its screenshot: %s, %s (%d bytes)", page, shot, fi.Size())
	return shot
}

// shown is a panel as the page shows it.
type shown struct {
	Title, Type, Description string
	Style                    template.CSS // its place on the 24-column grid
	Stats                    []shownValue
	Columns                  []string
	Rows                     [][]shownValue
	Text                     template.HTML
	Note                     string
}

// shownValue is a value and its threshold colour.
type shownValue struct {
	Label, Text string
	Color       template.CSS
	Mono        bool // a digest or a command
}

// fieldConfig is the part of a panel's fieldConfig the page reads.
type fieldConfig struct {
	Defaults struct {
		Unit       string `json:"unit"`
		Decimals   *int   `json:"decimals"`
		Thresholds struct {
			Steps []struct {
				Color string   `json:"color"`
				Value *float64 `json:"value"`
			} `json:"steps"`
		} `json:"thresholds"`
	} `json:"defaults"`
}

// promtoolVersion is the first line of promtool --version.
func promtoolVersion(t *testing.T) string {
	out := promtool(t, "--version")
	first, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(first)
}

// renderDashboard writes the page: each panel at its grid position with
// the samples its query returned.
func renderDashboard(t *testing.T, d *grafana.Dashboard, got map[string][]sample, run *dashboardRun) string {
	var panels []shown
	d.Walk(func(p grafana.Panel) { panels = append(panels, showPanel(t, d, p, got)) })
	var buf bytes.Buffer
	err := dashboardPage.Execute(&buf, map[string]any{
		"Title":  d.Title,
		"Panels": panels,
		"When":   run.scraped.UTC().Format(time.RFC3339),
		"Engine": promtoolVersion(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(os.Getenv("REGCHECK_ARTIFACTS"), "regcheck-dashboard-")
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "dashboard.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return page
}

// showPanel turns one panel and its query's samples into what the page
// shows: a stat's values, a table's rows, a time series' last values,
// a text's markdown.
func showPanel(t *testing.T, d *grafana.Dashboard, p grafana.Panel, got map[string][]sample) shown {
	g := p.GridPos
	s := shown{Title: p.Title, Type: p.Type, Description: p.Description,
		Style: template.CSS(fmt.Sprintf("grid-column:%d / span %d;grid-row:%d / span %d", *g.X+1, *g.W, *g.Y+1, *g.H))}
	var fc fieldConfig
	if len(p.FieldConfig) > 0 {
		if err := json.Unmarshal(p.FieldConfig, &fc); err != nil {
			t.Fatal(err)
		}
	}
	var samples []sample
	var legend string
	for _, tg := range p.Targets {
		samples = append(samples, got[d.Expand(tg.Expr)]...)
		legend = tg.LegendFormat
	}
	switch p.Type {
	case "text":
		var o struct{ Content string }
		json.Unmarshal(p.Options, &o)
		s.Text = markdown(o.Content)
	case "stat", "timeseries":
		for _, smp := range sortSamples(samples) {
			s.Stats = append(s.Stats, shownValue{Label: expandLegend(legend, smp.labels), Text: format(fc, smp.value), Color: color(fc, smp.value)})
		}
		if p.Type == "timeseries" {
			s.Note = "last values (the chart is not drawn here)"
		}
		if len(s.Stats) == 0 {
			s.Note = "No data"
		}
	case "table":
		s.Columns, s.Rows = panelTable(t, p, fc, sortSamples(samples))
		if len(s.Rows) == 0 {
			s.Note = "No data"
		}
	}
	return s
}

func sortSamples(ss []sample) []sample {
	out := slices.Clone(ss)
	sort.Slice(out, func(i, j int) bool {
		return (series{labels: out[i].labels}).String() < (series{labels: out[j].labels}).String()
	})
	return out
}

var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

func expandLegend(f string, labels map[string]string) string {
	return legendLabel.ReplaceAllStringFunc(f, func(m string) string { return labels[legendLabel.FindStringSubmatch(m)[1]] })
}

// panelTable lays out samples as the panel's organize transformation says:
// columns ordered by indexByName (the others after, by name), hidden by
// excludeByName, titled by renameByName; Value coloured by the thresholds.
func panelTable(t *testing.T, p grafana.Panel, fc fieldConfig, samples []sample) ([]string, [][]shownValue) {
	var org struct {
		Exclude map[string]bool   `json:"excludeByName"`
		Rename  map[string]string `json:"renameByName"`
		Index   map[string]int    `json:"indexByName"`
	}
	for _, tr := range p.Transformations {
		if tr.ID == "organize" {
			if err := json.Unmarshal(tr.Options, &org); err != nil {
				t.Fatal(err)
			}
		}
	}
	cols := []string{"Value"}
	for _, s := range samples {
		for k := range s.labels {
			if !slices.Contains(cols, k) && k != "__name__" && !org.Exclude[k] {
				cols = append(cols, k)
			}
		}
	}
	sort.Slice(cols, func(i, j int) bool {
		a, aok := org.Index[cols[i]]
		b, bok := org.Index[cols[j]]
		if aok != bok {
			return aok
		}
		if aok {
			return a < b
		}
		return cols[i] < cols[j]
	})
	var header []string
	for _, c := range cols {
		header = append(header, cmp(org.Rename[c], c))
	}
	var rows [][]shownValue
	for _, s := range samples {
		var row []shownValue
		for _, c := range cols {
			if c == "Value" {
				row = append(row, shownValue{Text: format(fc, s.value), Color: color(fc, s.value)})
			} else {
				v := s.labels[c]
				row = append(row, shownValue{Text: v, Mono: strings.Contains(v, "sha256:") || strings.HasPrefix(v, "regcheck ")})
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// format writes a value in the panel's unit with its decimals.
func format(fc fieldConfig, v float64) string {
	dec := 0
	if fc.Defaults.Decimals != nil {
		dec = *fc.Defaults.Decimals
	} else if v != math.Trunc(v) {
		dec = 2
	}
	switch fc.Defaults.Unit {
	case "s":
		switch {
		case math.Abs(v) >= 7200:
			return fmt.Sprintf("%.1f h", v/3600)
		case math.Abs(v) >= 120:
			return fmt.Sprintf("%.1f min", v/60)
		}
		return fmt.Sprintf("%.*f s", dec, v)
	case "h":
		return fmt.Sprintf("%.*f h", dec, v)
	case "ops":
		return fmt.Sprintf("%.3f ops/s", v)
	}
	return fmt.Sprintf("%.*f", dec, v)
}

// colors are Grafana's named colours.
var colors = map[string]string{"green": "#73bf69", "red": "#f2495c", "orange": "#ff9830", "yellow": "#fade2a", "blue": "#5794f2"}

// color is the colour of the last threshold step v reaches; none for a
// panel with a single step.
func color(fc fieldConfig, v float64) template.CSS {
	steps := fc.Defaults.Thresholds.Steps
	if len(steps) < 2 {
		return ""
	}
	c := ""
	for _, s := range steps {
		if s.Value == nil || v >= *s.Value {
			c = cmp(colors[s.Color], s.Color)
		}
	}
	return template.CSS(c)
}

var (
	mdCode = regexp.MustCompile("`([^`]+)`")
	mdBold = regexp.MustCompile(`\*\*([^*]+)\*\*`)
)

// markdown renders the little markdown a text panel uses: paragraphs,
// fenced code, inline code and bold.
func markdown(src string) template.HTML {
	var b strings.Builder
	for _, block := range strings.Split(src, "\n\n") {
		if strings.HasPrefix(block, "```") {
			body := strings.TrimSuffix(strings.TrimPrefix(block, "```\n"), "\n```")
			b.WriteString("<pre>" + template.HTMLEscapeString(body) + "</pre>")
			continue
		}
		h := template.HTMLEscapeString(block)
		h = mdCode.ReplaceAllString(h, "<code>$1</code>")
		h = mdBold.ReplaceAllString(h, "<b>$1</b>")
		b.WriteString("<p>" + h + "</p>")
	}
	return template.HTML(b.String())
}

var dashboardPage = template.Must(template.New("dashboard").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{margin:0;padding:12px 16px;background:#111217;color:#ccccdc;font:13px/1.35 Inter,Helvetica,Arial,sans-serif}
h1{font-size:18px;margin:0 0 2px} .sub{color:#8e8e9e;margin:0 0 10px;font-size:12px}
.grid{display:grid;grid-template-columns:repeat(24,minmax(0,1fr));grid-auto-rows:minmax(24px,auto);gap:6px}
.panel{background:#181b1f;border:1px solid #2c3235;border-radius:2px;padding:6px 8px;overflow:hidden;min-width:0}
.panel h2{font-size:13px;font-weight:600;margin:0 0 4px;color:#d8d9da}
.row{background:none;border:none;border-bottom:1px solid #2c3235;padding:8px 0 2px}
.row h2{font-size:15px;color:#fff}
.stats{display:flex;gap:6px;height:calc(100% - 22px)}
.stat{flex:1;display:flex;flex-direction:column;justify-content:center;align-items:center;border-radius:2px;background:#22252b;min-height:52px}
.stat .v{font-size:28px;font-weight:600;color:#fff}.stat .l{font-size:11px}
table{border-collapse:collapse;width:100%;font-size:11.5px;table-layout:auto}
th{text-align:left;color:#6e9fff;font-weight:600;border-bottom:1px solid #2c3235;padding:3px 5px}
td{border-bottom:1px solid #22252b;padding:3px 5px;word-break:break-all;vertical-align:top}
td.c{color:#111;font-weight:600;text-align:right}
td.m{font:11px/1.3 "DejaVu Sans Mono",monospace}
.note{color:#8e8e9e;font-style:italic;font-size:11px}
pre{background:#22252b;padding:6px;white-space:pre-wrap;font-size:11.5px;margin:4px 0}
code{background:#22252b;padding:0 3px}
p{margin:4px 0}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="sub">Static render of deploy/grafana/regcheck.json: each panel's query evaluated by {{.Engine}} over the series a real regcheck watch and the CronJob's push to a real Pushgateway served at {{.When}} (namespace: All).</p>
<div class="grid">
{{range .Panels}}<div class="panel{{if eq .Type "row"}} row{{end}}" style="{{.Style}}">
<h2>{{.Title}}</h2>
{{if .Text}}{{.Text}}{{end}}
{{if .Stats}}{{if eq .Type "stat"}}<div class="stats">{{range .Stats}}<div class="stat"{{if .Color}} style="background:{{.Color}}"{{end}}><span class="v">{{.Text}}</span>{{if .Label}}<span class="l">{{.Label}}</span>{{end}}</div>{{end}}</div>
{{else}}<table>{{range .Stats}}<tr><td>{{.Label}}</td><td>{{.Text}}</td></tr>{{end}}</table>{{end}}{{end}}
{{if .Rows}}<table><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if .Color}} class="c" style="background:{{.Color}}"{{else if .Mono}} class="m"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
</div>
{{end}}</div></body></html>
`))

// shotHeight is the window's height: the page's, about, with the run's
// rows (REGCHECK_DASHBOARD_HEIGHT to change it).
var shotHeight = cmp(os.Getenv("REGCHECK_DASHBOARD_HEIGHT"), "2300")
