package promql

import (
	"reflect"
	"testing"
)

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr string
		want []Selector
	}{
		{"a name", "up", []Selector{{Name: "up"}}},
		{"matchers", `regcheck_use_findings{namespace=~"$namespace", verdict="broken",code!=''}`, []Selector{{Name: "regcheck_use_findings",
			Matchers: []Matcher{{"namespace", "=~", "$namespace"}, {"verdict", "=", "broken"}, {"code", "!=", ""}}}}},
		{"aggregation with a label list before and after", `count(max by (namespace, workload) (a{x="1"})) or vector(0) + sum(b) without (job)`,
			[]Selector{{Name: "a", Matchers: []Matcher{{"x", "=", "1"}}}, {Name: "b"}}},
		{"functions, ranges and durations", `sum(increase(c_total[1h])) / sum(rate(d_total[5m:30s] offset 1h30m)) > 1e-3`,
			[]Selector{{Name: "c_total"}, {Name: "d_total"}}},
		{"vector matching", `e * on(namespace) group_left(owner_name) f and ignoring (x) g unless h`,
			[]Selector{{Name: "e"}, {Name: "f"}, {Name: "g"}, {Name: "h"}}},
		{"group_left without a list", `e * on(a) group_left f`, []Selector{{Name: "e"}, {Name: "f"}}},
		{"strings are not names", `label_replace(up, "pin_back", ` + "`regcheck pin --from-records <(kubectl get cm -o jsonpath='{.data.history\\.json}')`" + `, "", "")`,
			[]Selector{{Name: "up"}}},
		{"a name in quotes", `{"regcheck.thing", job="x"}`, []Selector{{Name: "regcheck.thing", Matchers: []Matcher{{"job", "=", "x"}}}}},
		{"__name__", `{__name__="ALERTS", alertname=~"Regcheck.+"}`, []Selector{{Name: "ALERTS", Matchers: []Matcher{{"alertname", "=~", "Regcheck.+"}}}}},
		{"time and numbers", `(time() - max(regcheck_last_success_timestamp_seconds)) / 3600 > 26 or 0x1F < Inf`,
			[]Selector{{Name: "regcheck_last_success_timestamp_seconds"}}},
		{"keywords in any case", `a AND b Or c`, []Selector{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
		{"a comment", "a # b{c=\"d\"}\n+ e", []Selector{{Name: "a"}, {Name: "e"}}},
		{"escapes in a value", `a{b="x\"}y", c='it\'s'}`, []Selector{{Name: "a", Matchers: []Matcher{{"b", "=", `x"}y`}, {"c", "=", "it's"}}}}},
		{"@ modifiers", `a @ start() + b @ 1700000000`, []Selector{{Name: "a"}, {Name: "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Selectors(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Selectors(%s)\n got %+v\nwant %+v", tc.expr, got, tc.want)
			}
		})
	}
}

func TestSelectorsErrors(t *testing.T) {
	for _, expr := range []string{
		`{__name__=~"regcheck_.+"}`, // which series is not known
		`{job="x"}`,
		`a{b="c"`,
		`a{b=1}`,
		`a{b}`,
		`"unterminated`,
		`a[5m`,
	} {
		t.Run(expr, func(t *testing.T) {
			if got, err := Selectors(expr); err == nil {
				t.Errorf("Selectors(%s) = %+v, want an error", expr, got)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		m    Matcher
		v    string
		want bool
	}{
		{Matcher{"a", "=", "x"}, "x", true},
		{Matcher{"a", "=", "x"}, "xy", false},
		{Matcher{"a", "!=", "x"}, "xy", true},
		{Matcher{"a", "=~", "Regcheck.+"}, "RegcheckDrift", true},
		{Matcher{"a", "=~", "Regcheck"}, "RegcheckDrift", false}, // anchored
		{Matcher{"a", "=~", "a|b"}, "b", true},
		{Matcher{"a", "!~", "a|b"}, "ab", true},
		{Matcher{"a", "=~", ".*"}, "", true},
	} {
		if got, err := tc.m.Matches(tc.v); err != nil || got != tc.want {
			t.Errorf("%+v.Matches(%q) = %v, %v; want %v", tc.m, tc.v, got, err, tc.want)
		}
	}
}
