package metrics

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
)

// Every family is a regcheck_ gauge with a help text and label names
// Prometheus accepts, and registers.
func TestFamilies(t *testing.T) {
	for name, f := range families {
		t.Run(string(name), func(t *testing.T) {
			if !strings.HasPrefix(string(name), "regcheck_") || !model.IsValidLegacyMetricName(string(name)) {
				t.Errorf("%q is not a regcheck metric name", name)
			}
			if f.help == "" {
				t.Error("no help text")
			}
			for _, l := range f.labels {
				if !model.LabelName(l).IsValidLegacy() || strings.HasPrefix(l, "__") {
					t.Errorf("%q is not a label name", l)
				}
			}
			reg := prometheus.NewRegistry()
			name.Gauge(reg).WithLabelValues(make([]string, len(f.labels))...).Set(1)
			mfs, err := reg.Gather()
			if err != nil || len(mfs) != 1 || mfs[0].GetName() != string(name) || mfs[0].GetHelp() != f.help {
				t.Errorf("gathered %v (%v)", mfs, err)
			}
		})
	}
}

// The alert rules query families regcheck writes, by labels those
// families have.
func TestRulesQueryFamilies(t *testing.T) {
	series := regexp.MustCompile(`(regcheck_[a-z_]+)(?:\{([a-z_]+)=~?"[^"]*"\})?`)
	for _, g := range Rules() {
		for _, r := range g.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				found := series.FindAllStringSubmatch(r.Expr+" "+r.Annotations["description"], -1)
				if len(found) == 0 {
					t.Fatalf("%q queries no regcheck metric", r.Expr)
				}
				for _, m := range found {
					f, ok := families[Name(m[1])]
					if !ok {
						t.Errorf("%s is no family", m[1])
					}
					if m[2] != "" && !slices.Contains(f.labels, m[2]) {
						t.Errorf("%s has no label %s", m[1], m[2])
					}
				}
			})
		}
	}
}
