package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/types"
)

// No credential reaches the exposition through a label: not from a URL,
// not from a reference written with one in front of its host.
func TestPrometheusDropsUserinfo(t *testing.T) {

	r := &types.Result{Images: []*types.Image{{
		Reference: "https://robot:s3cret@registry.example/app:v1", Verdict: types.Broken,
		Findings: []types.Finding{{Code: types.InvalidReference, Severity: types.SeverityCritical}},
		Uses:     []types.Use{{Source: "file", File: "a.yaml", Kind: "Deployment", Namespace: "web", Name: "app", Container: "app"}},
	}}, Requests: []types.RequestCount{{Host: "registry.example", Kind: "ping", Status: "401", Count: 1}}}
	var buf bytes.Buffer
	if err := metrics.WriteScan(&buf, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "s3cret") || strings.Contains(buf.String(), "robot") {
		t.Errorf("a credential reached the metrics:\n%s", buf.String())
	}
}

// One use on a workload's many pods, or listed twice, is one series; a
// scan that read no reference at all is no success.
func TestPrometheusUses(t *testing.T) {
	use := types.Use{Source: "cluster", Kind: "Deployment", Namespace: "web", Name: "app", Container: "app"}
	pod1, pod2 := use, use
	pod1.Pod, pod2.Pod = "app-1", "app-2"
	r := &types.Result{Images: []*types.Image{{
		Reference: "registry.example/app:v1", Verdict: types.Broken,
		Findings: []types.Finding{
			{Code: types.ChildMissing, Severity: types.SeverityCritical, Platform: "linux/amd64"},
			{Code: types.ChildMissing, Severity: types.SeverityCritical, Platform: "linux/arm64"},
		},
		Uses: []types.Use{pod1, pod2},
	}}}
	var buf bytes.Buffer
	if err := metrics.WriteScan(&buf, r); err != nil {
		t.Fatal(err)
	}
	series, err := parseExposition(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	key := `regcheck_use_findings{code="child-missing",container="app",image="registry.example/app:v1",namespace="web",verdict="broken",workload="app",workload_kind="Deployment"}`
	if got, ok := series[key]; !ok || got != 2 {
		t.Errorf("%s = %v (present %v), want 2 (two children gone)\n%s", key, got, ok, buf.String())
	}
	if n := strings.Count(buf.String(), "\nregcheck_use_findings{"); n != 1 {
		t.Errorf("%d use series, want 1:\n%s", n, buf.String())
	}

	for _, tc := range []struct {
		name    string
		r       *types.Result
		success bool
	}{
		{"images scanned", result(), true},
		{"nothing to scan, a notice", &types.Result{Started: result().Started, InputErrors: []types.InputError{{Source: "t.yaml", Notice: true}}}, true},
		{"no input could be read", &types.Result{Started: result().Started, InputErrors: []types.InputError{{Source: "a.yaml"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := metrics.WriteScan(&buf, tc.r); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), "regcheck_last_success_timestamp_seconds{"); got != tc.success {
				t.Errorf("last success written: %v, want %v\n%s", got, tc.success, buf.String())
			}
		})
	}
}
