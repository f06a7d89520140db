package metrics

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/regcheck/regcheck/types"
)

// TestUseGatherAsCollect: the families Gather makes are, series for series
// and byte for byte in the text format, those of Collect through a
// client_golang registry, for uses of every kind: containers and image
// volumes, cluster and file uses, several codes, no finding, every verdict.
func TestUseGatherAsCollect(t *testing.T) {
	res := &types.Result{Images: []*types.Image{
		{Reference: "registry.example/team/app:1", Verdict: types.Broken, Findings: []types.Finding{{Code: types.ChildMissing}, {Code: types.ChildMissing}, {Code: types.Drift}},
			Uses: []types.Use{
				{Source: "cluster", Kind: "Deployment", Namespace: "web", Name: "app", Pod: "app-1", Container: "app"},
				{Source: "cluster", Kind: "Deployment", Namespace: "web", Name: "app", Pod: "app-2", Container: "app"},
				{Source: "cluster", Kind: "Pod", Namespace: "web", Name: "one", Pod: "one", Volume: "models"},
			}},
		{Reference: "user:secret@registry.example/team/job:2", Verdict: types.OK,
			Uses: []types.Use{{Source: "cluster", Kind: "CronJob", Namespace: "batch", Name: "nightly", Container: "job"}}},
		{Reference: "registry.example/team/lib:3", Verdict: types.Unknown, Findings: []types.Finding{{Code: types.MutableReference}},
			Uses: []types.Use{{Source: "file", File: "deploy.yaml", Line: 12}, {Source: "cluster", Kind: "DaemonSet", Namespace: "kube-system", Name: "agent", Container: "agent"}}},
		{Reference: "registry.example/team/web:4", Verdict: types.AtRisk, Findings: []types.Finding{{Code: types.PullAlwaysMutable}, {Code: types.MutableReference}},
			Uses: []types.Use{{Source: "cluster", Kind: "StatefulSet", Namespace: "db", Name: "pg", Container: "pg"}}},
	}}
	for i := range 50 { // enough series that their order is the normalizer's, not the input's
		res.Images[0].Uses = append(res.Images[0].Uses, types.Use{Source: "cluster", Kind: "Pod", Namespace: "web", Name: fmt.Sprint("bare-", i), Pod: fmt.Sprint("bare-", i), Container: "app"})
	}
	snap := NewUseSnapshot(res)
	for _, avail := range []bool{false, true} {
		c := NewUseCollector(func() *UseSnapshot { return snap })
		if avail {
			c.WithAvailability()
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		want := exposition(t, reg)
		got := exposition(t, prometheus.Gatherers{c})
		if got != want {
			t.Fatalf("availability %v: Gather gives\n%s\nCollect gives\n%s", avail, got, want)
		}
		// As client_golang's own metrics, for a consumer that is not a
		// Gatherers (which sorts them again): labels sorted by name.
		fams, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range fams {
			for _, m := range mf.Metric {
				if !slices.IsSortedFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) }) {
					t.Fatalf("%s: labels not sorted by name: %v", mf.GetName(), m.Label)
				}
			}
		}
		if n := bytes.Count([]byte(got), []byte("\n")); n < 60 {
			t.Fatalf("availability %v: %d lines, the fixture makes more:\n%s", avail, n, got)
		}
	}
	if fams, err := NewUseCollector(func() *UseSnapshot { return nil }).Gather(); err != nil || len(fams) != 0 {
		t.Fatalf("no snapshot: %d families, %v", len(fams), err)
	}
}

func exposition(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
