package grafana

import (
	"strings"
	"testing"
)

// valid is a small dashboard of schema 39 that passes Check.
const valid = `{
  "uid": "x", "title": "x", "schemaVersion": 39, "time": {"from": "now-6h", "to": "now"},
  "templating": {"list": [
    {"name": "datasource", "type": "datasource", "query": "prometheus"},
    {"name": "namespace", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "query": {"query": "label_values(up, namespace)", "qryType": 1, "label": "namespace", "metric": "up", "refId": "V"}, "includeAll": true, "allValue": ".*"}
  ]},
  "panels": [
    {"id": 1, "type": "row", "title": "r", "gridPos": {"h": 1, "w": 24, "x": 0, "y": 0}, "panels": []},
    {"id": 2, "type": "stat", "title": "s", "description": "d", "gridPos": {"h": 4, "w": 12, "x": 0, "y": 1},
     "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "targets": [{"refId": "A", "expr": "up{namespace=~\"$namespace\"}", "datasource": {"type": "prometheus", "uid": "${datasource}"}}]},
    {"id": 3, "type": "table", "title": "t", "description": "d", "gridPos": {"h": 4, "w": 12, "x": 12, "y": 1},
     "datasource": {"type": "prometheus", "uid": "${datasource}"},
     "fieldConfig": {"defaults": {"custom": {"cellOptions": {"type": "auto"}}}},
     "targets": [{"refId": "A", "expr": "up", "instant": true, "format": "table", "datasource": {"type": "prometheus", "uid": "${datasource}"}}]},
    {"id": 4, "type": "text", "title": "x", "gridPos": {"h": 2, "w": 24, "x": 0, "y": 5}, "options": {"mode": "markdown", "content": "hi"}}
  ]
}`

func TestCheckValid(t *testing.T) {
	d, err := Decode([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if errs := d.Check(); len(errs) > 0 {
		t.Fatalf("Check: %v", errs)
	}
}

// Each case breaks the valid dashboard one way; Check must say so.
func TestCheckFinds(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"another schema", `"schemaVersion": 39`, `"schemaVersion": 38`, "schemaVersion 38"},
		{"a repeated id", `"id": 3,`, `"id": 2,`, "id not positive or also"},
		{"no gridPos", `"gridPos": {"h": 4, "w": 12, "x": 12, "y": 1},`, ``, "no gridPos"},
		{"off the grid", `"x": 12, "y": 1`, `"x": 13, "y": 1`, "off the 24-column grid"},
		{"overlapping", `"x": 12, "y": 1`, `"x": 6, "y": 1`, "overlaps panel 2"},
		{"a datasource by name", `"id": 2, "type": "stat", "title": "s", "description": "d", "gridPos": {"h": 4, "w": 12, "x": 0, "y": 1},
     "datasource": {"type": "prometheus", "uid": "${datasource}"}`, `"id": 2, "type": "stat", "title": "s", "description": "d", "gridPos": {"h": 4, "w": 12, "x": 0, "y": 1},
     "datasource": "Prometheus"`, "decoding"},
		{"a fixed datasource", `"datasource": {"type": "prometheus", "uid": "${datasource}"},
     "targets": [{"refId": "A", "expr": "up{`, `"datasource": {"type": "prometheus", "uid": "P1"},
     "targets": [{"refId": "A", "expr": "up{`, "want {prometheus ${datasource}}"},
		{"no refId", `"refId": "A", "expr": "up",`, `"refId": "", "expr": "up",`, "refId \"\" empty"},
		{"no expr", `"refId": "A", "expr": "up",`, `"refId": "A", "expr": "",`, "no expr"},
		{"an undefined variable", `$namespace`, `$ns`, "names $ns, not a variable"},
		{"no namespace variable", `{"name": "namespace"`, `{"name": "ns"`, "no namespace variable"},
		{"a table of schema 37", `"custom": {"cellOptions": {"type": "auto"}}`, `"custom": {"displayMode": "color-background"}`, "schema 37"},
		{"a range query in a table", `"instant": true, "format": "table"`, `"instant": false, "format": "table"`, "instant one formatted as a table"},
		{"an Angular panel", `"type": "stat"`, `"type": "singlestat"`, `type "singlestat"`},
		{"no description", `"title": "s", "description": "d"`, `"title": "s"`, "no description"},
		{"a text with a query", `"options": {"mode": "markdown", "content": "hi"}`, `"options": {"mode": "markdown", "content": ""}`, "markdown content"},
		{"a variable's label and query disagree", `"label": "namespace"`, `"label": "job"`, "do not say"},
		{"All with no allValue", `"includeAll": true, "allValue": ".*"`, `"includeAll": true`, "no allValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(valid, tc.old) {
				t.Fatalf("the valid dashboard has no %q", tc.old)
			}
			d, err := Decode([]byte(strings.Replace(valid, tc.old, tc.new, 1)))
			if err != nil {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
				t.Fatal(err)
			}
			var all []string
			for _, e := range d.Check() {
				all = append(all, e.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Errorf("Check = %q, want one saying %q", all, tc.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	d, err := Decode([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`up{namespace=~"$namespace"}`:          `up{namespace=~".*"}`,
		`up{namespace=~"${namespace}"}`:        `up{namespace=~".*"}`,
		`up{namespace_x="$namespace_x"}`:       `up{namespace_x="$namespace_x"}`,
		`rate(up[$__rate_interval])`:           `rate(up[$__rate_interval])`,
		`up{a="$namespace",b="${datasource}"}`: `up{a=".*",b="${datasource}"}`,
	} {
		if got := d.Expand(in); got != want {
			t.Errorf("Expand(%s) = %s, want %s", in, got, want)
		}
	}
}
