package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/internal/testing/grafana"
	"github.com/regcheck/regcheck/internal/testing/promql"
)

// The dashboard: the Helm chart's copy is the source, make deploy copies
// it here.
var (
	dashboardFile = filepath.Join("grafana", "regcheck.json")
	chartCopy     = filepath.Join("..", "charts", "regcheck", "dashboards", "regcheck.json")
)

// TestDashboardCopies: deploy/grafana/ holds the chart's dashboard byte
// for byte.
func TestDashboardCopies(t *testing.T) {
	a, err := os.ReadFile(chartCopy)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s and %s differ: copy the chart's (make deploy)", dashboardFile, chartCopy)
	}
}

// TestDashboardSchema decodes the dashboard and checks it against the
// schema version it declares (unique panel ids, grid positions,
// datasource references to the variable, queries with expr and refId,
// the variables defined), and that every query's selectors can be read.
func TestDashboardSchema(t *testing.T) {
	d, err := grafana.Load(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range d.Check() {
		t.Error(err)
	}
	qs, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	panels := 0
	d.Walk(func(p grafana.Panel) { panels++ })
	for _, q := range qs {
		sels, err := promql.Selectors(q.Expr)
		if err != nil || len(sels) == 0 {
			t.Errorf("%s: %s: selectors %v, %v", q.Where, q.Expr, sels, err)
		}
	}
	t.Logf("%s: schemaVersion %d, %d panels, %d queries", dashboardFile, d.SchemaVersion, panels, len(qs))
}

// alertRules reads the rule file in deploy/prometheus: each alert's
// name and annotations.
func alertRules(t *testing.T) map[string]map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("prometheus", "regcheck.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out[r.Alert] = r.Annotations
			}
		}
	}
	return out
}

// TestDashboardAlerts: a query of ALERTS or ALERTS_FOR_STATE names alerts
// by alertname, and each such matcher matches an alert of
// deploy/prometheus/regcheck.rules.yml.
func TestDashboardAlerts(t *testing.T) {
	d, err := grafana.Load(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	rules := alertRules(t)
	qs, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range qs {
		sels, _ := promql.Selectors(q.Expr)
		for _, s := range sels {
			if s.Name != "ALERTS" && s.Name != "ALERTS_FOR_STATE" {
				continue
			}
			n++
			m, ok := s.Matcher("alertname")
			if !ok {
				t.Errorf("%s: %s has no alertname matcher", q.Where, s.Name)
				continue
			}
			var hit []string
			for name := range rules {
				if ok, err := m.Matches(name); err != nil {
					t.Fatal(err)
				} else if ok {
					hit = append(hit, name)
				}
			}
			if len(hit) == 0 {
				t.Errorf("%s: alertname%s%q matches no alert of deploy/prometheus", q.Where, m.Op, m.Value)
			}
			slices.Sort(hit)
			t.Logf("%s: %s matches %d alerts", q.Where, s.Name, len(hit))
		}
	}
	if n == 0 {
		t.Error("no query reads ALERTS")
	}
}

// TestDashboardPinBack: the command the unplanned-upgrade table shows is
// the one RegcheckUnplannedUpgrade's description gives.
func TestDashboardPinBack(t *testing.T) {
	d, err := grafana.Load(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	desc := alertRules(t)["RegcheckUnplannedUpgrade"]["description"]
	found := false
	d.Walk(func(p grafana.Panel) {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "regcheck_unplanned_upgrade") || !strings.Contains(tg.Expr, `"pin_back"`) {
				continue
			}
			found = true
			_, rest, _ := strings.Cut(tg.Expr, "`")
			cmd, _, ok := strings.Cut(rest, "`")
			if !ok || !strings.Contains(desc, "`"+cmd+"`") {
				t.Errorf("panel %d's pin_back %q is not a command of RegcheckUnplannedUpgrade's description:\n%s", p.ID, cmd, desc)
			}
		}
	})
	if !found {
		t.Error("no panel shows regcheck_unplanned_upgrade with a pin_back column")
	}
}
