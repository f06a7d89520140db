package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/types"
)

// columnResult has one input error with a line and a column (a YAML
// error at line 1 column 2) and one from stdin with both.
func columnResult() *types.Result {
	r := result()
	r.InputErrors = []types.InputError{
		{Source: "k8s/broken.yaml", Line: 1, Column: 2, Message: "mapping values are not allowed"},
		{Source: "stdin", Line: 4, Column: 7, Message: "bad"},
	}
	return r
}

// Every format that places an input error places it at file:line:column
// when the column is known.
func TestInputErrorColumnEveryFormat(t *testing.T) {
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"table", []string{"  error    k8s/broken.yaml:1:2: mapping values are not allowed\n", "  error    stdin:4:7: bad\n"}},
		{"html", []string{"<code>k8s/broken.yaml:1:2</code>", "<code>stdin:4:7</code>"}},
		{"markdown", []string{"`k8s/broken.yaml:1:2`: mapping values are not allowed\n", "`stdin:4:7`: bad\n"}},
		{"github", []string{"::error file=k8s/broken.yaml,line=1,col=2,title=input-error::mapping values are not allowed\n", "::error title=input-error::stdin:4:7: bad\n"}},
		{"sarif", []string{"stdin:4:7: bad"}},
		{"json", []string{`"line": 1,`, `"column": 2,`}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			r, _ := renderer(tc.format)
			var buf bytes.Buffer
			if err := r.Render(&buf, columnResult()); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("%s lacks %q:\n%s", tc.format, want, buf.String())
				}
			}
		})
	}
}

// SARIF's input-error result has the column as its region's startColumn.
func TestInputErrorColumnSARIF(t *testing.T) {
	r, _ := renderer("sarif")
	var buf bytes.Buffer
	if err := r.Render(&buf, columnResult()); err != nil {
		t.Fatal(err)
	}
	var log SARIFLog
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	var regions []SARIFRegion
	for _, res := range log.Runs[0].Results {
		if res.RuleID == InputErrorRule && res.Locations[0].PhysicalLocation.Region != nil {
			regions = append(regions, *res.Locations[0].PhysicalLocation.Region)
		}
	}
	if len(regions) != 1 || regions[0] != (SARIFRegion{StartLine: 1, StartColumn: 2}) {
		t.Errorf("input-error regions %+v, want one at line 1 column 2", regions)
	}
	if !strings.Contains(buf.String(), `"startColumn": 2`) {
		t.Errorf("no startColumn in\n%s", buf.String())
	}
}

// A result whose input errors have no column renders as before: no
// column anywhere.
func TestInputErrorNoColumn(t *testing.T) {
	for _, format := range []string{"json", "sarif", "github"} {
		r, _ := renderer(format)
		var buf bytes.Buffer
		if err := r.Render(&buf, inputResult()); err != nil {
			t.Fatal(err)
		}
		for _, no := range []string{"column", "Column", "col="} {
			if strings.Contains(buf.String(), no) {
				t.Errorf("%s has %q with no column known", format, no)
			}
		}
	}
}
