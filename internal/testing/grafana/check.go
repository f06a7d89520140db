package grafana

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Datasource is the reference every query panel and target gives: the
// Prometheus picked by the dashboard's datasource variable.
var Datasource = DatasourceRef{Type: "prometheus", UID: "${datasource}"}

// panelTypes are the panel types of schema 39 that regcheck's dashboard
// uses; Grafana's Angular ones (graph, singlestat, table-old) are not
// among them.
var panelTypes = map[string]bool{"row": true, "text": true, "stat": true, "table": true, "timeseries": true}

// Check returns every way d falls short of a dashboard of SchemaVersion
// that queries Prometheus through its datasource variable: the version,
// uid and title, the variables, and each panel's id, grid position,
// datasource and queries.
func (d *Dashboard) Check() []error {
	var errs []error
	if d.SchemaVersion != SchemaVersion {
		errs = append(errs, fmt.Errorf("schemaVersion %d, want %d", d.SchemaVersion, SchemaVersion))
	}
	if d.UID == "" || d.Title == "" || d.Time == nil || d.Time.From == "" || d.Time.To == "" {
		errs = append(errs, errors.New("the dashboard lacks a uid, a title or a time range"))
	}
	errs = append(errs, d.checkVariables()...)
	ids := map[int]string{}
	var placed []Panel
	d.Walk(func(p Panel) {
		name := fmt.Sprintf("panel %d (%s %q)", p.ID, p.Type, p.Title)
		if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
			errs = append(errs, fmt.Errorf("%s: id not positive or also %s's", name, prev))
		}
		ids[p.ID] = name
		for _, err := range p.check() {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		if p.GridPos != nil && p.GridPos.complete() {
			for _, q := range placed {
				if p.GridPos.overlaps(q.GridPos) {
					errs = append(errs, fmt.Errorf("%s overlaps panel %d", name, q.ID))
				}
			}
			placed = append(placed, p)
		}
	})
	return errs
}

// checkVariables: a datasource variable named datasource for Prometheus,
// every other variable queried through it, and every variable a query
// names defined.
func (d *Dashboard) checkVariables() []error {
	var errs []error
	defined := map[string]bool{}
	for _, v := range d.Templating.List {
		defined[v.Name] = true
		switch v.Type {
		case "datasource":
			var q string
			if json.Unmarshal(v.Query, &q) != nil || q != "prometheus" || v.Name != "datasource" {
				errs = append(errs, fmt.Errorf("variable %s: want a datasource variable named datasource of type prometheus", v.Name))
			}
		case "query":
			q, err := v.VariableQuery()
			switch {
			case err != nil:
				errs = append(errs, err)
			case v.Datasource == nil || *v.Datasource != Datasource:
				errs = append(errs, fmt.Errorf("variable %s: datasource %v, want %v", v.Name, v.Datasource, Datasource))
			case !LabelValuesQuery.MatchString(q):
				errs = append(errs, fmt.Errorf("variable %s: query %q is not label_values(SELECTOR, LABEL)", v.Name, q))
			case v.IncludeAll && v.AllValue == "":
				errs = append(errs, fmt.Errorf("variable %s: All with no allValue is every value joined, not a regular expression that matches a missing label", v.Name))
			}
		default:
			errs = append(errs, fmt.Errorf("variable %s: type %q", v.Name, v.Type))
		}
	}
	for _, need := range []string{"datasource", "namespace"} {
		if !defined[need] {
			errs = append(errs, fmt.Errorf("no %s variable", need))
		}
	}
	d.Walk(func(p Panel) {
		for _, t := range p.Targets {
			for _, m := range variableUse.FindAllStringSubmatch(t.Expr, -1) {
				if name := m[1] + m[2]; !defined[name] && !strings.HasPrefix(name, "__") {
					errs = append(errs, fmt.Errorf("panel %d: query %s names $%s, not a variable", p.ID, t.RefID, name))
				}
			}
		}
	})
	return errs
}

// variableUse matches $name and ${name} in a query.
var variableUse = regexp.MustCompile(`\$(?:\{(\w+)\}|(\w+))`)

// check checks one panel by its type.
func (p Panel) check() []error {
	var errs []error
	if !panelTypes[p.Type] {
		errs = append(errs, fmt.Errorf("type %q is not one of schema %d's panels used here", p.Type, SchemaVersion))
	}
	if p.Title == "" {
		errs = append(errs, errors.New("no title"))
	}
	if p.GridPos == nil || !p.GridPos.complete() {
		errs = append(errs, errors.New("no gridPos with h, w, x and y"))
	} else if g := p.GridPos; *g.H <= 0 || *g.W <= 0 || *g.X < 0 || *g.Y < 0 || *g.X+*g.W > 24 {
		errs = append(errs, fmt.Errorf("gridPos %d×%d at (%d,%d) is off the 24-column grid", *g.W, *g.H, *g.X, *g.Y))
	}
	switch p.Type {
	case "row":
		if len(p.Targets) > 0 || p.GridPos != nil && p.GridPos.W != nil && *p.GridPos.W != 24 {
			errs = append(errs, errors.New("a row spans the grid and has no query"))
		}
	case "text":
		var o struct{ Mode, Content string }
		if json.Unmarshal(p.Options, &o) != nil || o.Content == "" || o.Mode != "markdown" || len(p.Targets) > 0 {
			errs = append(errs, errors.New("a text panel has markdown content and no query"))
		}
	default:
		errs = append(errs, p.checkQueries()...)
	}
	return errs
}

// checkQueries: a query panel reads the datasource variable, says what it
// shows, has queries with a refId each and an expression, and, for a
// table, sets its cells the schema-38 way.
func (p Panel) checkQueries() []error {
	var errs []error
	if p.Datasource == nil || *p.Datasource != Datasource {
		errs = append(errs, fmt.Errorf("datasource %v, want %v", p.Datasource, Datasource))
	}
	if p.Description == "" {
		errs = append(errs, errors.New("no description (what the panel shows, what to do when it is red)"))
	}
	if len(p.Targets) == 0 {
		errs = append(errs, errors.New("no query"))
	}
	refs := map[string]bool{}
	for i, t := range p.Targets {
		switch {
		case t.RefID == "" || refs[t.RefID]:
			errs = append(errs, fmt.Errorf("query %d: refId %q empty or repeated", i, t.RefID))
		case t.Expr == "":
			errs = append(errs, fmt.Errorf("query %s: no expr", t.RefID))
		case t.Datasource == nil || *t.Datasource != Datasource:
			errs = append(errs, fmt.Errorf("query %s: datasource %v, want %v", t.RefID, t.Datasource, Datasource))
		case p.Type == "table" && (!t.Instant || t.Format != "table"):
			errs = append(errs, fmt.Errorf("query %s: a table's query is an instant one formatted as a table", t.RefID))
		}
		refs[t.RefID] = true
	}
	var fc struct {
		Defaults struct {
			Custom map[string]json.RawMessage `json:"custom"`
		} `json:"defaults"`
	}
	if err := json.Unmarshal(p.FieldConfig, &fc); len(p.FieldConfig) > 0 && err != nil {
		errs = append(errs, fmt.Errorf("fieldConfig: %w", err))
	}
	if _, old := fc.Defaults.Custom["displayMode"]; old && p.Type == "table" {
		errs = append(errs, errors.New("a table's custom.displayMode is schema 37's; 38 on use custom.cellOptions"))
	}
	return errs
}

func (g *GridPos) complete() bool { return g.H != nil && g.W != nil && g.X != nil && g.Y != nil }

// overlaps says whether two complete positions share a cell.
func (g *GridPos) overlaps(o *GridPos) bool {
	return *g.X < *o.X+*o.W && *o.X < *g.X+*g.W && *g.Y < *o.Y+*o.H && *o.Y < *g.Y+*g.H
}
