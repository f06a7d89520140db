package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/types"
)

// The metrics parse as exposition format 0.0.4 and say what the scan found.
func TestPrometheus(t *testing.T) {
	var buf bytes.Buffer
	if err := metrics.WriteScan(&buf, result()); err != nil {
		t.Fatal(err)
	}
	series, err := parseExposition(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for _, tc := range []struct {
		name   string
		series string
		want   float64
	}{
		{"broken image's verdict", `regcheck_image_verdict{reference="127.0.0.1:5055/demo/buildx:v1",verdict="broken"}`, 1},
		{"broken gauge", `regcheck_image_broken{reference="127.0.0.1:5055/demo/buildx:v1"}`, 1},
		{"ok is not broken", `regcheck_image_broken{reference="127.0.0.1:5055/demo/single:v1"}`, 0},
		{"verdicts with none are 0", `regcheck_images{verdict="at-risk"}`, 0},
		{"findings by code", `regcheck_findings{code="child-missing",severity="critical"}`, 1},
		{"requests by host", `regcheck_registry_requests{host="127.0.0.1:5055",kind="manifest-get",status="404"}`, 2},
		{"inputs not read", `regcheck_inputs_skipped{kind="error"}`, 2},
		{"inputs skipped on purpose", `regcheck_inputs_skipped{kind="notice"}`, 1},
		{"the file not read", `regcheck_input_skipped_info{kind="error",source="examples/manifests/broken.yaml"}`, 1},
		{"stdin not read", `regcheck_input_skipped_info{kind="error",source="stdin"}`, 1},
		{"the file skipped", `regcheck_input_skipped_info{kind="notice",source="examples/chart/templates/deploy.yaml"}`, 1},
		{"duration", `regcheck_scan_duration_seconds`, 0.059},
		{"started", `regcheck_scan_timestamp_seconds`, float64(result().Started.Unix())},
		{"finished: the last success", `regcheck_last_success_timestamp_seconds{command="scan"}`, float64(result().Started.Unix()) + 0.059},
		{"a use per finding code", `regcheck_use_findings{code="child-missing",container="signaling",image="127.0.0.1:5055/demo/buildx:v1",namespace="dam-prod",verdict="broken",workload="signaling",workload_kind="Deployment"}`, 1},
		{"a use per code, warnings too", `regcheck_use_findings{code="attestation-missing",container="signaling",image="127.0.0.1:5055/demo/buildx:v1",namespace="dam-prod",verdict="broken",workload="signaling",workload_kind="Deployment"}`, 1},
		{"a use with no finding", `regcheck_use_findings{code="",container="coturn",image="127.0.0.1:5055/demo/single:v1",namespace="dam-prod",verdict="ok",workload="dam-coturn",workload_kind="Deployment"}`, 0},
		// The args and images-from uses name no workload: one series.
		{"uses with no workload", `regcheck_use_findings{code="unauthorized",container="",image="registry.example/app:v1",namespace="",verdict="unknown",workload="",workload_kind=""}`, 1},
	} {
		// Labels in the order the format writes them: sorted by name.
		t.Run(tc.name, func(t *testing.T) {
			got, ok := series[tc.series]
			if !ok || got != tc.want {
				t.Errorf("%s = %v (present %v), want %v", tc.series, got, ok, tc.want)
			}
		})
	}
	if n := len(series); n != 3+3+4+3+4+2+2+3+1+4 {
		t.Errorf("%d series, want 29:\n%s", n, buf.String())
	}
}

// The SARIF log gives each finding of an image used in a file a result at
// that file's line, and leaves out images used from arguments only. Inputs
// not read are results on their file, or notifications for stdin.
func TestSARIF(t *testing.T) {
	var buf bytes.Buffer
	if err := SARIF(&buf, result()); err != nil {
		t.Fatal(err)
	}
	var log SARIFLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 {
		t.Fatalf("version %q, %d runs", log.Version, len(log.Runs))
	}
	run := log.Runs[0]
	var rules []string
	for _, r := range run.Tool.Driver.Rules {
		rules = append(rules, r.ID+"/"+r.DefaultConfiguration.Level)
	}
	if want := []string{"attestation-missing/warning", "child-missing/error", "unauthorized/warning", "input-error/error"}; !slices.Equal(rules, want) {
		t.Errorf("rules %v, want %v", rules, want)
	}
	var got []string
	for _, r := range run.Results {
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("ruleIndex %d is not %s", r.RuleIndex, r.RuleID)
		}
		if len(r.Locations) != 1 {
			t.Fatalf("result %+v: want one location", r)
		}
		l := r.Locations[0].PhysicalLocation
		line := 0
		if l.Region != nil {
			line = l.Region.StartLine
		}
		got = append(got, fmt.Sprintf("%s %s %s:%d", r.RuleID, r.Level, l.ArtifactLocation.URI, line))
	}
	want := []string{
		"child-missing error examples/manifests/signaling.yaml:19",
		"attestation-missing warning examples/manifests/signaling.yaml:19",
		"unauthorized warning images.txt:3", // its args use has no file
		"input-error error examples/manifests/broken.yaml:3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("results\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if msg := run.Results[0].Message.Text; !strings.HasPrefix(msg, "127.0.0.1:5055/demo/buildx:v1: the index lists") || !strings.Contains(msg, "\nrebuild and push") {
		t.Errorf("message %q", msg)
	}
	// A Helm template is no alert to keep open, stdin no file code
	// scanning can place a result on: both are notifications.
	var notes []string
	for _, inv := range run.Invocations {
		for _, n := range inv.ToolExecutionNotifications {
			notes = append(notes, fmt.Sprintf("%s %s %d", n.Level, n.Message.Text, len(n.Locations)))
		}
	}
	if want := []string{"note examples/chart/templates/deploy.yaml: skipped: Helm template 1", "error stdin:2: bufio.Scanner: token too long 0"}; !slices.Equal(notes, want) {
		t.Errorf("notifications %q, want %q", notes, want)
	}
}

// Every finding code gets a SARIF rule with the vocabulary's description,
// never its bare name; the input rules are no finding code.
func TestSARIFDescriptions(t *testing.T) {
	r := &types.Result{}
	for _, c := range types.Codes() {
		r.Images = append(r.Images, &types.Image{Reference: "x/" + string(c), Verdict: types.Unknown,
			Findings: []types.Finding{{Code: c, Severity: c.Severity(), Message: "m"}},
			Uses:     []types.Use{{Source: "file", File: "k8s/a.yaml", Line: 1}}})
	}
	var buf bytes.Buffer
	if err := SARIF(&buf, r); err != nil {
		t.Fatal(err)
	}
	var log SARIFLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{}
	for _, rule := range log.Runs[0].Tool.Driver.Rules {
		rules[rule.ID] = rule.ShortDescription.Text
	}
	for _, c := range types.Codes() {
		if got := rules[string(c)]; got == "" || got == string(c) || got != c.Description() {
			t.Errorf("%s: rule description %q, want %q", c, got, c.Description())
		}
	}
	for _, id := range []string{InputErrorRule, InputSkippedRule} {
		if slices.Contains(types.Codes(), types.Code(id)) {
			t.Errorf("input rule %s is also a finding code", id)
		}
	}
}

func TestSARIFLevel(t *testing.T) {
	for s, want := range map[types.Severity]string{
		types.SeverityCritical: "error", types.SeverityHigh: "error", types.SeverityWarning: "warning", types.SeverityInfo: "note",
	} {
		if got := SARIFLevel(s); got != want {
			t.Errorf("SARIFLevel(%s) = %s, want %s", s, got, want)
		}
	}
}

// The page stands alone: one inline script, nothing fetched.
func TestHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, result()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "<script"); n != 1 || !strings.Contains(page, "<script>\n") {
		t.Errorf("page has %d scripts, want one inline", n)
	}
	for _, bad := range []string{"<link", "src=", "href=", "url(", "@import", "http:", "https://"} {
		if strings.Contains(strings.ReplaceAll(page, "https://registry.example/v2/", ""), bad) {
			t.Errorf("page has %q", bad)
		}
	}
	b, u, o := strings.Index(page, "demo/buildx:v1"), strings.Index(page, "registry.example/app:v1"), strings.Index(page, "demo/single:v1")
	if b < 0 || !(b < u && u < o) {
		t.Errorf("images not worst first: broken at %d, unknown at %d, ok at %d", b, u, o)
	}
	for _, want := range []string{"<h4>Deployment signaling</h4>", "container signaling, examples/manifests/signaling.yaml:19", "command line · images.txt:3",
		"examples/manifests/coturn.yaml:19 Deployment dam-prod/dam-coturn container coturn"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks use %q", want)
		}
	}
}

const (
	hostileRef  = "evil\"ref<script>alert(1)</script>\nnext%0A,x:y\\z\xff\x1b[2J"
	hostileMsg  = "msg \"quoted\" <script>x</script>\r\nline2 100% \x1b[31mred\x1b[0m \x1b]0;title\x07 \u009b2J \x7f"
	hostileFile = "dir,a:b%/evil\"<script>\x1b[1m.yaml"
)

// hostile is a result whose every string tries to break out of its format
// or to drive the terminal that shows it.
func hostile() *types.Result {
	return &types.Result{
		Started: time.Date(2026, 11, 11, 5, 8, 0, 0, time.UTC),
		Images: []*types.Image{{
			Reference: hostileRef, Verdict: types.Broken,
			Findings: []types.Finding{{Code: types.InvalidReference, Severity: types.SeverityCritical, Message: hostileMsg, Advice: "</td><script>"}},
			Uses: []types.Use{
				{Source: "file", File: hostileFile, Line: 4, Kind: "Pod", Name: "<evil>", Container: "\"c\""},
				{Source: "cluster", Namespace: "ns", Name: "n\"<evil2>\x1b[5m", Node: "node\n<script>"},
			},
		}},
		InputErrors: []types.InputError{{Source: hostileFile, Line: 2, Message: "bad \x1b[31mYAML\r\n<script>"}},
		Requests:    []types.RequestCount{{Host: "host\"\n<script>\\", Kind: "ping", Status: "401", Count: 1}},
	}
}

// rawControl returns the first character in out that could drive a
// terminal: a C0 control other than tab and line feed, DEL, a C1 control,
// or a byte that is not UTF-8; "" when there is none.
func rawControl(out string) string {
	for i, r := range out {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"):
			return fmt.Sprintf("byte %#x at %d", out[i], i)
		case r == '\t' || r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Sprintf("%U at %d", r, i)
		}
	}
	return ""
}

// Every renderer keeps hostile strings inside its own quoting, and no
// control character of theirs reaches its output raw.
func TestRenderersEscape(t *testing.T) {
	checks := map[string]func(t *testing.T, out string){
		"prom": func(t *testing.T, out string) {
			series, err := parseExposition(out)
			if err != nil {
				t.Fatal(err)
			}
			if series[`regcheck_image_broken{reference="`+printable.Lines(hostileRef)+`"}`] != 1 {
				t.Errorf("reference did not survive:\n%s", out)
			}
			if _, ok := series[`regcheck_registry_requests{host="host"`+"\n"+`<script>\",kind="ping",status="401"}`]; !ok {
				t.Errorf("host did not survive:\n%s", out)
			}
			if series[`regcheck_inputs_skipped{kind="error"}`] != 1 {
				t.Errorf("input error not counted:\n%s", out)
			}
		},
		"html": func(t *testing.T, out string) {
			if n := strings.Count(out, "<script"); n != 1 {
				t.Errorf("page has %d scripts, want its own alone", n)
			}
			for _, bad := range []string{"<script>alert", "<script>x", "node\n<script>", "<evil>", "<evil2>", "</td><script>"} {
				if strings.Contains(out, bad) {
					t.Errorf("page has %q unescaped", bad)
				}
			}
			for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `\x1b[31mred`, `bad \x1b[31mYAML\r`} {
				if !strings.Contains(out, want) {
					t.Errorf("page lacks %q:\n%s", want, out)
				}
			}
		},
		"sarif": func(t *testing.T, out string) {
			var log SARIFLog
			if err := json.Unmarshal([]byte(out), &log); err != nil {
				t.Fatal(err)
			}
			res := log.Runs[0].Results
			if len(res) != 2 || res[0].Locations[0].PhysicalLocation.ArtifactLocation.URI != hostileFile {
				t.Fatalf("results %+v", res)
			}
			// A viewer shows the message as text: its escapes are visible.
			msg := res[0].Message.Text
			if strings.ContainsAny(msg, "\x1b\r\x07\u009b") || !strings.Contains(msg, `\x1b[31mred\x1b[0m \x1b]0;title\x07 \u009b2J`) ||
				!strings.Contains(msg, "<script>x</script>") || !strings.HasSuffix(msg, "\n</td><script>") {
				t.Errorf("message %q", msg)
			}
			if res[1].RuleID != InputErrorRule || res[1].Message.Text != `bad \x1b[31mYAML\r`+"\n<script>" {
				t.Errorf("input error result %+v", res[1])
			}
		},
		"json": func(t *testing.T, out string) {
			// JSON's own escaping is enough: a program gets the bytes back.
			var doc struct {
				Images      []struct{ Findings []struct{ Message string } }
				InputErrors []types.InputError
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Images[0].Findings[0].Message != hostileMsg ||
				doc.InputErrors[0] != hostile().InputErrors[0] {
				t.Errorf("%v %+v", err, doc)
			}
		},
		"github": func(t *testing.T, out string) {
			// One workflow command per line: a newline in the data must
			// not start a second, forged command.
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "::error ") || !strings.HasPrefix(lines[1], "::error ") {
				t.Fatalf("want two annotation lines, got %q", out)
			}
			if !strings.Contains(lines[0], `\x1b[31mred`) || !strings.Contains(lines[1], `file=dir%2Ca%3Ab%25/evil"<script>\x1b[1m.yaml,line=2,title=input-error::bad \x1b[31mYAML\r%0A<script>`) {
				t.Errorf("escapes not visible:\n%s", out)
			}
		},
		"markdown": func(t *testing.T, out string) {
			// No HTML but the page's own, no code span or link from the
			// data, every table row its own cells.
			for _, bad := range []string{"<script", "<evil", "</td>", "`evil", "](", "\x1b[31m"} {
				if strings.Contains(out, bad) {
					t.Errorf("markdown has %q:\n%s", bad, out)
				}
			}
			for _, want := range []string{
				`- **broken** evil"ref&lt;script&gt;alert(1)&lt;/script&gt;\\nnext%0A,x:y\\z\\xff\\x1b\[2J — on node\\n&lt;script&gt;` + "\n",
				"  - critical `invalid-reference`: msg \"quoted\" &lt;script&gt;x&lt;/script&gt;" + `\\r\\nline2 100% \\x1b\[31mred`,
				"<br>→ &lt;/td&gt;&lt;script&gt;\n",
				"**Pod &lt;evil&gt;**\n",
				`- **error** dir,a:b%/evil"&lt;script&gt;\\x1b\[1m.yaml:2: bad \\x1b\[31mYAML\\r\\n&lt;script&gt;` + "\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("markdown lacks %q:\n%s", want, out)
				}
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "| ") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") != 4 {
					t.Errorf("table row with other than 3 cells: %q", line)
				}
			}
		},
		"table": func(t *testing.T, out string) {
			// For a terminal: one line per row, finding and input; every
			// control character visible.
			for _, want := range []string{
				`broken   evil"ref<script>alert(1)</script>\nnext%0A,x:y\z\xff\x1b[2J  -`,
				`  critical invalid-reference    msg "quoted" <script>x</script>\r\nline2 100% \x1b[31mred\x1b[0m \x1b]0;title\x07 \u009b2J \x7f` + "\n",
				"  used by  " + `ns/n"<evil2>\x1b[5m on node\n<script>` + "\n",
				"  error    " + `dir,a:b%/evil"<script>\x1b[1m.yaml:2: bad \x1b[31mYAML\r\n<script>` + "\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("table lacks %q:\n%s", want, out)
				}
			}
		},
	}
	for _, format := range scanFormats() {
		t.Run(format, func(t *testing.T) {
			check, ok := checks[format]
			if !ok {
				t.Fatalf("no escaping check for %s", format)
			}
			r, _ := renderer(format)
			var buf bytes.Buffer
			if err := r.Render(&buf, hostile()); err != nil {
				t.Fatal(err)
			}
			if c := rawControl(buf.String()); c != "" {
				t.Errorf("raw control character in %s output: %s\n%q", format, c, buf.String())
			}
			check(t, buf.String())
		})
	}
}

func TestGitHubAnnotations(t *testing.T) {
	var buf bytes.Buffer
	err := GitHubAnnotations(&buf, []Annotation{
		{Level: "error", File: hostileFile, Line: 4, Title: "a,b:c%\x1b[1m", Message: hostileMsg},
		{Level: GitHubLevel("note"), File: "x.yaml", Title: "template", Message: "skipped"},
		{Level: "error", Title: "input-error", Message: "stdin:3: line too long"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `::error file=dir%2Ca%3Ab%25/evil"<script>\x1b[1m.yaml,line=4,title=a%2Cb%3Ac%25\x1b[1m::msg "quoted" <script>x</script>\r%0Aline2 100%25 \x1b[31mred\x1b[0m \x1b]0;title\x07 \u009b2J \x7f` + "\n" +
		"::notice file=x.yaml,title=template::skipped\n" +
		"::error title=input-error::stdin:3: line too long\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// WriteJSON leaves no raw DEL or C1 control in its output, and what it
// writes decodes to what was given.
func TestWriteJSON(t *testing.T) {
	in := map[string]string{"k": "a\u009b2J\x7f\x1b[0m\u0080\u00a0é"}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	if c := rawControl(buf.String()); c != "" {
		t.Errorf("raw %s in %q", c, buf.String())
	}
	var out map[string]string
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil || out["k"] != in["k"] {
		t.Errorf("round trip: %v %q", err, out["k"])
	}
}

// inputResult is what regcheck scan -f on a tree with one file that does
// not parse and one Helm template gives: their input errors.
func inputResult() *types.Result {
	r := result()
	r.InputErrors = []types.InputError{
		{Source: "k8s/broken.yaml", Line: 3, Message: "did not find expected ',' or ']'"},
		{Source: "k8s/chart/templates/deploy.yaml", Message: "skipped: Helm template", Notice: true},
	}
	return r
}

// Every format says which inputs were not read, and tells an input in error
// from one skipped on purpose.
func TestInputErrorsEveryFormat(t *testing.T) {
	checks := map[string]func(t *testing.T, out string){
		"table": func(t *testing.T, out string) {
			for _, want := range []string{
				"\nINPUTS NOT READ (1) AND SKIPPED (1)\n  error    k8s/broken.yaml:3: did not find expected ',' or ']'\n  notice   k8s/chart/templates/deploy.yaml: skipped: Helm template\n",
				"; 1 input not read, 1 skipped\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("table lacks %q:\n%s", want, out)
				}
			}
		},
		"json": func(t *testing.T, out string) {
			var doc Document
			if err := json.Unmarshal([]byte(out), &doc); err != nil || !slices.Equal(doc.InputErrors, inputResult().InputErrors) {
				t.Errorf("%v inputErrors %+v", err, doc.InputErrors)
			}
		},
		"prom": func(t *testing.T, out string) {
			series, err := parseExposition(out)
			if err != nil {
				t.Fatal(err)
			}
			if series[`regcheck_inputs_skipped{kind="error"}`] != 1 || series[`regcheck_inputs_skipped{kind="notice"}`] != 1 {
				t.Errorf("inputs not counted:\n%s", out)
			}
		},
		"html": func(t *testing.T, out string) {
			for _, want := range []string{
				"<h2>Inputs not read</h2>",
				`<span class="s s-critical">error</span> <code>k8s/broken.yaml:3</code> did not find expected &#39;,&#39; or &#39;]&#39;`,
				`<span class="s s-info">notice</span> <code>k8s/chart/templates/deploy.yaml</code> skipped: Helm template`,
			} {
				if !strings.Contains(out, want) {
					t.Errorf("page lacks %q", want)
				}
			}
		},
		"markdown": func(t *testing.T, out string) {
			for _, want := range []string{
				"| **inputs not read** | 1 | ",
				"- **error** `k8s/broken.yaml:3`: did not find expected ',' or '\\]'\n",
				"- **notice (skipped on purpose)** `k8s/chart/templates/deploy.yaml`: skipped: Helm template\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("markdown lacks %q:\n%s", want, out)
				}
			}
		},
		"sarif": func(t *testing.T, out string) {
			var log SARIFLog
			if err := json.Unmarshal([]byte(out), &log); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range log.Runs[0].Results {
				if r.RuleID == InputErrorRule {
					got = append(got, fmt.Sprintf("result %s %s %+v", r.Level, r.Locations[0].PhysicalLocation.ArtifactLocation.URI, r.Locations[0].PhysicalLocation.Region))
				}
			}
			for _, inv := range log.Runs[0].Invocations {
				for _, n := range inv.ToolExecutionNotifications {
					got = append(got, fmt.Sprintf("notification %s %s %s", n.Level, n.Locations[0].PhysicalLocation.ArtifactLocation.URI, n.Message.Text))
				}
			}
			want := []string{
				"result error k8s/broken.yaml &{StartLine:3 StartColumn:0}",
				"notification note k8s/chart/templates/deploy.yaml k8s/chart/templates/deploy.yaml: skipped: Helm template",
			}
			if !slices.Equal(got, want) {
				t.Errorf("inputs %q, want %q", got, want)
			}
		},
		"github": func(t *testing.T, out string) {
			for _, want := range []string{
				"::error file=k8s/broken.yaml,line=3,title=input-error::did not find expected ',' or ']'\n",
				"::notice file=k8s/chart/templates/deploy.yaml,title=input-skipped::skipped: Helm template\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("annotations lack %q:\n%s", want, out)
				}
			}
		},
	}
	for _, format := range scanFormats() {
		t.Run(format, func(t *testing.T) {
			check, ok := checks[format]
			if !ok {
				t.Fatalf("no input-error check for %s", format)
			}
			r, _ := renderer(format)
			var buf bytes.Buffer
			if err := r.Render(&buf, inputResult()); err != nil {
				t.Fatal(err)
			}
			check(t, buf.String())
		})
	}
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition checks text against exposition format 0.0.4 strictly, as
// regcheck writes it: each family HELP, then TYPE, then its samples, once;
// only the escapes the format defines; no timestamps; no duplicate series.
// It returns each series, labels unescaped, and its value.
func parseExposition(text string) (map[string]float64, error) {
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("output does not end with a newline")
	}
	series := map[string]float64{}
	families := map[string]bool{}
	var family, typ string
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		if !utf8.ValidString(line) {
			return nil, fail("invalid UTF-8")
		}
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			if !metricName.MatchString(name) || families[name] {
				return nil, fail("bad or repeated family %q", name)
			}
			if _, err := unescape(help, false); err != nil {
				return nil, fail("%v", err)
			}
			families[name], family, typ = true, name, ""
		case strings.HasPrefix(line, "# TYPE "):
			name, t, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			if name != family || typ != "" || !slices.Contains([]string{"gauge", "counter", "untyped"}, t) {
				return nil, fail("TYPE out of place or unknown")
			}
			typ = t
		case strings.HasPrefix(line, "#") || line == "":
			return nil, fail("unexpected comment or blank line")
		default:
			if typ == "" {
				return nil, fail("sample before HELP and TYPE")
			}
			key, rest, err := parseSeries(line, family)
			if err != nil {
				return nil, fail("%v", err)
			}
			if strings.Contains(rest, " ") {
				return nil, fail("timestamps are not allowed")
			}
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				return nil, fail("value: %v", err)
			}
			if _, dup := series[key]; dup {
				return nil, fail("duplicate series")
			}
			series[key] = v
		}
	}
	return series, nil
}

// parseSeries reads `name{a="…",b="…"} ` and returns the series with label
// values unescaped, and what follows the space.
func parseSeries(line, family string) (key, rest string, err error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 || line[:i] != family {
		return "", "", fmt.Errorf("sample outside its family %s", family)
	}
	key, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		var names []string
		var labels []string
		for {
			name, after, ok := strings.Cut(line, `="`)
			if !ok || !labelName.MatchString(name) || slices.Contains(names, name) {
				return "", "", fmt.Errorf("bad label name %q", name)
			}
			names = append(names, name)
			end := closingQuote(after)
			if end < 0 {
				return "", "", fmt.Errorf("unterminated label value")
			}
			v, err := unescape(after[:end], true)
			if err != nil {
				return "", "", err
			}
			labels = append(labels, name+`="`+v+`"`)
			line = after[end+1:]
			if strings.HasPrefix(line, "}") {
				line = line[1:]
				break
			}
			if !strings.HasPrefix(line, ",") {
				return "", "", fmt.Errorf("want , or } after label %s", name)
			}
			line = line[1:]
		}
		key += "{" + strings.Join(labels, ",") + "}"
	}
	if !strings.HasPrefix(line, " ") {
		return "", "", fmt.Errorf("want one space before the value")
	}
	return key, line[1:], nil
}

// closingQuote is the index of the first unescaped " in s, or -1.
func closingQuote(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// unescape undoes \\ and \n, and \" in a label value; any other escape, a
// bare " or a raw line feed is an error.
func unescape(s string, label bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' || (label && c == '"'):
			return "", fmt.Errorf("unescaped %q", c)
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		if i++; i == len(s) {
			return "", fmt.Errorf("trailing backslash")
		}
		switch {
		case s[i] == '\\':
			b.WriteByte('\\')
		case s[i] == 'n':
			b.WriteByte('\n')
		case s[i] == '"' && label:
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}
