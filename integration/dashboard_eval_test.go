//go:build integration

package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/internal/testing/bins"
)

// The clock of the evaluation: promtool's starts at 0; the last scrape is
// put at evalAt, so that time() minus a timestamp the run served is the
// age it had then, and one sample a minute from 0 on.
const (
	evalAt       = 2 * time.Hour
	evalInterval = time.Minute
)

// sample is one sample of a query's result.
type sample struct {
	labels map[string]string
	value  float64
}

// evalInput turns the series the run served into promtool's input_series:
// a timestamp moved onto promtool's clock; a gauge held from 0 on; a
// counter absent until the watcher started, 0 then (a process's counter
// starts at 0), and the value scraped after.
func (run *dashboardRun) evalInput() []map[string]string {
	slots := int(evalAt/evalInterval) + 5
	shift := evalAt.Seconds() - float64(run.scraped.UnixNano())/1e9
	start := int((run.watchStarted.Sub(run.scraped) + evalAt) / evalInterval)
	start = min(max(start, 1), int(evalAt/evalInterval)-1)
	var out []map[string]string
	for _, s := range append(append([]series(nil), run.watcher...), run.pushed...) {
		v := s.value
		if isTimestamp(s.name) && v > 0 {
			v += shift
		}
		val := strconv.FormatFloat(v, 'f', -1, 64)
		values := fmt.Sprintf("%sx%d", val, slots)
		if strings.HasSuffix(s.name, "_total") {
			values = fmt.Sprintf("_x%d 0 %sx%d", start-1, val, slots-start-1)
		}
		out = append(out, map[string]string{"series": s.String(), "values": values})
	}
	return out
}

func isTimestamp(name string) bool {
	return strings.HasSuffix(name, "_timestamp_seconds") || name == "push_time_seconds" || name == "push_failure_time_seconds"
}

// evaluate runs every expression with the real promtool (test rules, a
// promql_expr_test each expecting nothing) over the run's series and the
// alert rules of deploy/prometheus, at evalAt, and reads what each
// returned from the failures promtool reports ("got: ..."); an
// expression that returned nothing passes and has no samples.
func evaluate(t *testing.T, input []map[string]string, exprs []string) map[string][]sample {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join(rulesDir, "regcheck.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []map[string]any
	for _, e := range exprs {
		cases = append(cases, map[string]any{"expr": e, "eval_time": evalAt.String(), "exp_samples": []any{}})
	}
	doc := map[string]any{
		"rule_files":          []string{abs},
		"evaluation_interval": evalInterval.String(),
		"tests":               []map[string]any{{"interval": evalInterval.String(), "input_series": input, "promql_expr_test": cases}},
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard.test.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := bins.Path(promtoolBin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "test", "rules", path).CombinedOutput()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatal(err)
	}
	got, perr := parseGot(string(out))
	if perr != nil {
		t.Fatalf("reading promtool's output: %v\n%s", perr, out)
	}
	if err == nil && len(got) > 0 || err != nil && len(got) == 0 {
		t.Fatalf("promtool test rules: %v, yet %d results read:\n%s", err, len(got), out)
	}
	return got
}

// parseGot reads promtool test rules' failures: `expr: "QUOTED", time:
// ...` then `got: {labels} VALUE, {labels} VALUE`.
func parseGot(out string) (map[string][]sample, error) {
	got := map[string][]sample{}
	var expr string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "expr: "):
			q, err := strconv.QuotedPrefix(strings.TrimPrefix(line, "expr: "))
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			expr, _ = strconv.Unquote(q)
		case strings.HasPrefix(line, "got: ") && expr != "":
			ss, err := parseSamples(strings.TrimPrefix(line, "got: "))
			if err != nil {
				return nil, fmt.Errorf("got of %s: %w", expr, err)
			}
			got[expr] = ss
			expr = ""
		}
	}
	return got, sc.Err()
}

// parseSamples reads `{a="b", c="d"} 1E+00, {…} 2E+00` (labels.Labels'
// String, then the value), or nil.
func parseSamples(s string) ([]sample, error) {
	if s == "nil" {
		return nil, nil
	}
	var out []sample
	for s != "" {
		if !strings.HasPrefix(s, "{") {
			return nil, fmt.Errorf("no { at %q", s)
		}
		ls, rest, err := parseLabels(s[1:])
		if err != nil {
			return nil, err
		}
		rest = strings.TrimPrefix(rest, " ")
		num, next, more := strings.Cut(rest, ", {")
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, sample{ls, v})
		if !more {
			break
		}
		s = "{" + next
	}
	return out, nil
}

// parseLabels reads name="value" pairs up to the closing brace; a name
// may be quoted.
func parseLabels(s string) (map[string]string, string, error) {
	ls := map[string]string{}
	for {
		if strings.HasPrefix(s, "}") {
			return ls, s[1:], nil
		}
		var name string
		if strings.HasPrefix(s, `"`) {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, "", err
			}
			name, _ = strconv.Unquote(q)
			s = s[len(q):]
		} else {
			i := strings.IndexByte(s, '=')
			if i < 0 {
				return nil, "", fmt.Errorf("no = in %q", s)
			}
			name, s = s[:i], s[i:]
		}
		if !strings.HasPrefix(s, "=") {
			return nil, "", fmt.Errorf("no = after %s", name)
		}
		q, err := strconv.QuotedPrefix(s[1:])
		if err != nil {
			return nil, "", fmt.Errorf("label %s: %w", name, err)
		}
		ls[name], _ = strconv.Unquote(q)
		s = strings.TrimPrefix(s[1+len(q):], ", ")
	}
}
