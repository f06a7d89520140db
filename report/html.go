package report

import (
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/regcheck/regcheck/scan"
)

// HTML writes the result as one self-contained page (inline CSS; no
// scripts, no external assets): the summary counts, then a table of images,
// worst first, with their findings and uses, then the inputs not read.
// Everything from the scan goes through Printable (keeping line feeds), then
// html/template's escaping.
func HTML(w io.Writer, r *scan.Result) error {
	d := htmlPage{
		Images:      r.Sorted(),
		InputErrors: r.InputErrors,
		Duration:    r.Duration.Round(time.Millisecond).String(),
	}
	for _, ie := range r.InputErrors {
		if ie.Notice {
			d.Skipped++
		} else {
			d.NotRead++
		}
	}
	if !r.Started.IsZero() {
		d.Started = r.Started.UTC().Format(time.RFC3339)
	}
	for _, im := range r.Images {
		for _, f := range im.Findings {
			switch f.Severity {
			case scan.SeverityCritical:
				d.Critical++
			case scan.SeverityHigh:
				d.High++
			case scan.SeverityWarning:
				d.Warning++
			default:
				d.Info++
			}
		}
	}
	c := r.Count()
	d.Broken, d.Unknown, d.AtRisk, d.OK = c[scan.Broken], c[scan.Unknown], c[scan.AtRisk], c[scan.OK]
	for _, c := range r.Requests {
		d.Requests += c.Count
	}
	return htmlTemplate.Execute(w, d)
}

type htmlPage struct {
	Images                        []*scan.Image
	InputErrors                   []scan.InputError
	NotRead, Skipped              int // input errors, notices
	Broken, Unknown, AtRisk, OK   int // images by verdict
	Critical, High, Warning, Info int // findings by severity
	Requests                      int
	Started, Duration             string
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"short": func(d string) string { return printableLines(short(d)) },
	"p":     func(s any) string { return printableLines(fmt.Sprint(s)) },
	"use": func(u scan.Use) string {
		if s := useString(u); s != "" {
			return printableLines(s)
		}
		return printableLines(u.Source)
	},
	"where": func(ie scan.InputError) string { return printableLines(inputLocation(ie)) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>regcheck scan: {{.Broken}} broken, {{.Unknown}} unknown, {{.OK}} ok</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1f2328; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: 1.5em 0 .3em; }
ul.inputs { padding-left: 1.1em; }
.meta { color: #59636e; margin: 0 0 1em; }
.counts { display: flex; gap: .6em; flex-wrap: wrap; margin: 0 0 1.2em; padding: 0; list-style: none; }
.counts li { border: 1px solid #d1d9e0; border-radius: 6px; padding: .4em .8em; }
.counts b { font-size: 1.3em; display: block; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .45em .6em; border-bottom: 1px solid #d1d9e0; }
th { background: #f6f8fa; }
code, .ref { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .92em; word-break: break-all; }
ul.f, ul.u { margin: 0; padding-left: 1.1em; }
ul.f li { margin-bottom: .3em; }
.advice { color: #59636e; }
.v, .s { display: inline-block; border-radius: 4px; padding: 0 .4em; font-weight: 600; font-size: .85em; }
.v-broken, .s-critical { background: #ffebe9; color: #a40e26; }
.s-high { background: #fff1e5; color: #9a3412; }
.v-unknown { background: #eef1f4; color: #424a53; }
.v-at-risk, .s-warning { background: #fff8c5; color: #7d4e00; }
.v-ok { background: #dafbe1; color: #116329; }
.s-info { background: #ddf4ff; color: #0550ae; }
</style>
</head>
<body>
<h1>regcheck scan</h1>
<p class="meta">{{with .Started}}Started {{.}}, {{end}}{{len .Images}} images in {{.Duration}}, {{.Requests}} registry requests.</p>
<ul class="counts">
<li class="v-broken"><b>{{.Broken}}</b>broken</li>
<li class="v-unknown"><b>{{.Unknown}}</b>unknown</li>
<li class="v-at-risk"><b>{{.AtRisk}}</b>at-risk</li>
<li class="v-ok"><b>{{.OK}}</b>ok</li>
<li><b>{{.Critical}}</b>critical findings</li>
<li><b>{{.High}}</b>high</li>
<li><b>{{.Warning}}</b>warning</li>
<li><b>{{.Info}}</b>info</li>
{{- if .InputErrors}}
<li class="v-broken"><b>{{.NotRead}}</b>inputs not read</li>
<li><b>{{.Skipped}}</b>inputs skipped</li>
{{- end}}
</ul>
<table>
<thead><tr><th>Verdict</th><th>Image</th><th>Digest</th><th>Findings</th><th>Used by</th></tr></thead>
<tbody>
{{- range .Images}}
<tr>
<td><span class="v v-{{p .Verdict}}">{{p .Verdict}}</span></td>
<td class="ref">{{p .Reference}}</td>
<td>{{if .Digest}}<code title="{{p .Digest}}">{{short .Digest}}</code>{{else}}-{{end}}</td>
<td>{{if .Findings}}<ul class="f">
{{- range .Findings}}
<li><span class="s s-{{.Severity}}">{{.Severity}}</span> <code>{{p .Code}}</code> {{p .Message}}{{with .Advice}}<br><span class="advice">→ {{p .}}</span>{{end}}</li>
{{- end}}
</ul>{{else}}-{{end}}</td>
<td>{{if .Uses}}<ul class="u">
{{- range .Uses}}
<li>{{use .}}</li>
{{- end}}
</ul>{{else}}-{{end}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- if .InputErrors}}
<h2>Inputs not read</h2>
<p class="meta">The images of an input in error were not scanned: the scan is incomplete. A notice is an input skipped on purpose.</p>
<ul class="inputs">
{{- range .InputErrors}}
<li>{{if .Notice}}<span class="s s-info">notice</span>{{else}}<span class="s s-critical">error</span>{{end}} <code>{{where .}}</code> {{p .Message}}</li>
{{- end}}
</ul>
{{- end}}
</body>
</html>
`))
