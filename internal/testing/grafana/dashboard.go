package grafana

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// SchemaVersion is the classic dashboard schema regcheck's dashboard
// declares: Grafana 10.4 and 11's (DASHBOARD_SCHEMA_VERSION 39). From 36
// on, every datasource is a {type, uid} reference; from 38 on, a table's
// cells are set by fieldConfig.defaults.custom.cellOptions, not the
// displayMode string; Grafana migrates nothing in a dashboard that
// declares the version it runs.
const SchemaVersion = 39

// Dashboard is the part of a classic dashboard's JSON model the checks
// read.
type Dashboard struct {
	UID           string     `json:"uid"`
	Title         string     `json:"title"`
	SchemaVersion int        `json:"schemaVersion"`
	Panels        []Panel    `json:"panels"`
	Templating    Templating `json:"templating"`
	Time          *struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"time"`
}

// Panel is one panel: a row, a text, a stat, a table or a time series.
type Panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	GridPos     *GridPos        `json:"gridPos"`
	Datasource  *DatasourceRef  `json:"datasource"`
	Targets     []Target        `json:"targets"`
	Panels      []Panel         `json:"panels"` // a collapsed row's
	FieldConfig json.RawMessage `json:"fieldConfig"`
	Options     json.RawMessage `json:"options"`
	// Transformations change a query's frames before they are shown
	// (organize: hide, rename and order a table's columns).
	Transformations []Transformation `json:"transformations"`
}

// Transformation is one of a panel's transformations: its id and options.
type Transformation struct {
	ID      string          `json:"id"`
	Options json.RawMessage `json:"options"`
}

// GridPos is where a panel sits on the 24-column grid.
type GridPos struct {
	H *int `json:"h"`
	W *int `json:"w"`
	X *int `json:"x"`
	Y *int `json:"y"`
}

// DatasourceRef names a datasource: since schema 36 an object, never a
// name string.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string         `json:"refId"`
	Expr         string         `json:"expr"`
	Datasource   *DatasourceRef `json:"datasource"`
	Instant      bool           `json:"instant"`
	Format       string         `json:"format"`
	LegendFormat string         `json:"legendFormat"`
}

// Templating holds the dashboard's variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is a template variable: the datasource to query, or the values
// of a label.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"` // a string (datasource) or {query, refId}
	Datasource *DatasourceRef  `json:"datasource"`
	Definition string          `json:"definition"`
	AllValue   string          `json:"allValue"`
	IncludeAll bool            `json:"includeAll"`
	Multi      bool            `json:"multi"`
}

// Load reads and decodes a dashboard file (fields the model above does
// not name are Grafana's own, and not read).
func Load(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

// Decode decodes a dashboard's JSON.
func Decode(data []byte) (*Dashboard, error) {
	var d Dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("decoding the dashboard: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decoding the dashboard: data after the object")
	}
	return &d, nil
}

// LabelValuesQuery is a query variable's label_values(SELECTOR, LABEL).
var LabelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

// VariableQuery returns a query variable's query text.
func (v Variable) VariableQuery() (string, error) {
	var s string
	if err := json.Unmarshal(v.Query, &s); err == nil {
		return s, nil
	}
	var q struct {
		Query, Label, Metric string
		QryType              *int
	}
	if err := json.Unmarshal(v.Query, &q); err != nil {
		return "", fmt.Errorf("variable %s: query is neither a string nor {query}: %w", v.Name, err)
	}
	// Grafana's Prometheus variable editor builds the query of type 1
	// (label values) from label and metric: they must say what query says.
	if q.QryType != nil {
		m := LabelValuesQuery.FindStringSubmatch(q.Query)
		if *q.QryType != 1 || m == nil || m[1] != q.Metric || m[2] != q.Label {
			return "", fmt.Errorf("variable %s: qryType %d, metric %q and label %q do not say %q", v.Name, *q.QryType, q.Metric, q.Label, q.Query)
		}
	}
	return q.Query, nil
}

// Walk calls f on every panel, those inside collapsed rows included.
func (d *Dashboard) Walk(f func(Panel)) {
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			f(p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
}

// Expand replaces the dashboard's variables in a query as Grafana does
// for its "All" value: $namespace and ${namespace} by the variable's
// allValue (or .*), so that the query can be parsed and run.
func (d *Dashboard) Expand(expr string) string {
	for _, v := range d.Templating.List {
		if v.Type == "datasource" {
			continue
		}
		all := v.AllValue
		if all == "" {
			all = ".*"
		}
		expr = strings.ReplaceAll(expr, "${"+v.Name+"}", all)
		expr = regexp.MustCompile(`\$`+regexp.QuoteMeta(v.Name)+`\b`).ReplaceAllString(expr, all)
	}
	return expr
}

// Query is one PromQL expression of the dashboard, its variables
// expanded: a panel's target, or the selector of a query variable's
// label_values.
type Query struct {
	Where string // "panel 7 (Title) A", "variable namespace"
	Panel *Panel // nil for a variable
	Expr  string
}

// Queries returns every PromQL expression the dashboard runs.
func (d *Dashboard) Queries() ([]Query, error) {
	var out []Query
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, err := v.VariableQuery()
		if err != nil {
			return nil, err
		}
		m := LabelValuesQuery.FindStringSubmatch(q)
		if m == nil {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(SELECTOR, LABEL)", v.Name, q)
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: d.Expand(m[1])})
	}
	d.Walk(func(p Panel) {
		for _, t := range p.Targets {
			out = append(out, Query{Where: fmt.Sprintf("panel %d (%s) %s", p.ID, p.Title, t.RefID), Panel: &p, Expr: d.Expand(t.Expr)})
		}
	})
	return out, nil
}
