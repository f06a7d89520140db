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

	"github.com/regcheck/regcheck/scan"
)

// The metrics parse as exposition format 0.0.4 and say what the scan found.
func TestPrometheus(t *testing.T) {
	var buf bytes.Buffer
	if err := Prometheus(&buf, result()); err != nil {
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
		{"duration", `regcheck_scan_duration_seconds`, 0.059},
		{"started", `regcheck_scan_timestamp_seconds`, float64(result().Started.Unix())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := series[tc.series]
			if !ok || got != tc.want {
				t.Errorf("%s = %v (present %v), want %v", tc.series, got, ok, tc.want)
			}
		})
	}
	if n := len(series); n != 3+3+4+3+4+2 {
		t.Errorf("%d series, want 19:\n%s", n, buf.String())
	}
}

// The SARIF log gives each finding of an image used in a file a result at
// that file's line, and leaves out images used from arguments only.
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
	if want := []string{"attestation-missing/warning", "child-missing/error", "unauthorized/warning"}; !slices.Equal(rules, want) {
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
		got = append(got, fmt.Sprintf("%s %s %s:%d", r.RuleID, r.Level, l.ArtifactLocation.URI, l.Region.StartLine))
	}
	want := []string{
		"child-missing error examples/manifests/signaling.yaml:19",
		"attestation-missing warning examples/manifests/signaling.yaml:19",
		"unauthorized warning images.txt:3", // its args use has no file
	}
	if !slices.Equal(got, want) {
		t.Errorf("results\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if msg := run.Results[0].Message.Text; !strings.HasPrefix(msg, "127.0.0.1:5055/demo/buildx:v1: the index lists") || !strings.Contains(msg, "\nrebuild and push") {
		t.Errorf("message %q", msg)
	}
}

func TestSARIFLevel(t *testing.T) {
	for s, want := range map[scan.Severity]string{
		scan.SeverityCritical: "error", scan.SeverityHigh: "error", scan.SeverityWarning: "warning", scan.SeverityInfo: "note",
	} {
		if got := SARIFLevel(s); got != want {
			t.Errorf("SARIFLevel(%s) = %s, want %s", s, got, want)
		}
	}
}

// The page stands alone: no script, nothing fetched.
func TestHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, result()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script", "<link", "src=", "href=", "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("page has %q", bad)
		}
	}
	b, u, o := strings.Index(page, "demo/buildx:v1"), strings.Index(page, "registry.example/app:v1"), strings.Index(page, "demo/single:v1")
	if b < 0 || !(b < u && u < o) {
		t.Errorf("images not worst first: broken at %d, unknown at %d, ok at %d", b, u, o)
	}
	for _, want := range []string{"examples/manifests/signaling.yaml:19 Deployment dam-prod/signaling container signaling", "images.txt:3", "<li>args</li>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks use %q", want)
		}
	}
}

const (
	hostileRef  = "evil\"ref<script>alert(1)</script>\nnext%0A,x:y\\z\xff"
	hostileMsg  = "msg \"quoted\" <script>x</script>\r\nline2 100%"
	hostileFile = "dir,a:b%/evil\"<script>.yaml"
)

// hostile is a result whose every string tries to break out of its format.
func hostile() *scan.Result {
	return &scan.Result{
		Started: time.Date(2026, 11, 11, 5, 8, 0, 0, time.UTC),
		Images: []*scan.Image{{
			Reference: hostileRef, Verdict: scan.Broken,
			Findings: []scan.Finding{{Code: scan.InvalidReference, Severity: scan.SeverityCritical, Message: hostileMsg, Advice: "</td><script>"}},
			Uses: []scan.Use{
				{Source: "file", File: hostileFile, Line: 4, Kind: "Pod", Name: "<evil>", Container: "\"c\""},
				{Source: "cluster", Namespace: "ns", Name: "n\"<evil2>", Node: "node\n<script>"},
			},
		}},
		Requests: []scan.RequestCount{{Host: "host\"\n<script>\\", Kind: "ping", Status: "401", Count: 1}},
	}
}

// Every renderer keeps hostile strings inside its own quoting.
func TestRenderersEscape(t *testing.T) {
	checks := map[string]func(t *testing.T, out string){
		"prom": func(t *testing.T, out string) {
			series, err := parseExposition(out)
			if err != nil {
				t.Fatal(err)
			}
			ref := strings.ToValidUTF8(hostileRef, "\uFFFD")
			if series[`regcheck_image_broken{reference="`+ref+`"}`] != 1 {
				t.Errorf("reference did not survive:\n%s", out)
			}
			if _, ok := series[`regcheck_registry_requests{host="host"`+"\n"+`<script>\",kind="ping",status="401"}`]; !ok {
				t.Errorf("host did not survive:\n%s", out)
			}
		},
		"html": func(t *testing.T, out string) {
			for _, bad := range []string{"<script", "<evil>", "<evil2>", "</td><script>"} {
				if strings.Contains(out, bad) {
					t.Errorf("page has %q unescaped", bad)
				}
			}
			if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Errorf("reference not escaped as text:\n%s", out)
			}
		},
		"sarif": func(t *testing.T, out string) {
			var log SARIFLog
			if err := json.Unmarshal([]byte(out), &log); err != nil {
				t.Fatal(err)
			}
			res := log.Runs[0].Results
			if len(res) != 1 || res[0].Locations[0].PhysicalLocation.ArtifactLocation.URI != hostileFile ||
				res[0].Message.Text != strings.ToValidUTF8(hostileRef, "\uFFFD")+": "+hostileMsg+"\n</td><script>" {
				t.Errorf("results %+v", res)
			}
		},
		"json": func(t *testing.T, out string) {
			var doc struct {
				Images []struct{ Findings []struct{ Message string } }
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Images[0].Findings[0].Message != hostileMsg {
				t.Errorf("%v %+v", err, doc)
			}
		},
		"github": func(t *testing.T, out string) {
			// One workflow command per line: a newline in the data must
			// not start a second, forged command.
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "::") {
				t.Fatalf("want one annotation line, got %q", out)
			}
			if strings.Contains(lines[0], "\r") {
				t.Errorf("a carriage return survived: %q", lines[0])
			}
		},
		// The table is for a terminal: it quotes nothing.
		"table": func(*testing.T, string) {},
	}
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			check, ok := checks[format]
			if !ok {
				t.Fatalf("no escaping check for %s", format)
			}
			r, _ := For(format)
			var buf bytes.Buffer
			if err := r.Render(&buf, hostile()); err != nil {
				t.Fatal(err)
			}
			check(t, buf.String())
		})
	}
}

func TestGitHubAnnotations(t *testing.T) {
	var buf bytes.Buffer
	err := GitHubAnnotations(&buf, []Annotation{
		{Level: "error", File: hostileFile, Line: 4, Title: "a,b:c%", Message: hostileMsg},
		{Level: GitHubLevel("note"), File: "x.yaml", Title: "template", Message: "skipped"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "::error file=dir%2Ca%3Ab%25/evil\"<script>.yaml,line=4,title=a%2Cb%3Ac%25::msg \"quoted\" <script>x</script>%0D%0Aline2 100%25\n" +
		"::notice file=x.yaml,title=template::skipped\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
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
