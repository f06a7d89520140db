package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/results/protectresult"
)

func TestProtect(t *testing.T) {
	t.Parallel()
	kept := []protectresult.Kept{{Repository: "app", Digest: "sha256:aa", Tag: "regcheck-keep-prod-aa", Status: protectresult.Planned, Why: "in use as reg/app:v1"}, {Repository: "app", Digest: "sha256:bb", Why: "child of sha256:aa"}}
	for _, tc := range []struct {
		name string
		rep  protectresult.Report
		want []string
	}{
		{name: "plan", rep: protectresult.Report{Model: "distribution-3", Owner: "prod", Keep: kept, Proof: protectresult.Proof{BreakBefore: 1}, Counts: protectresult.Counts{Keep: 2, Tags: 1, Planned: 1}},
			want: []string{"without the shield the run breaks 1 in-use image(s); with it 0: 0 in-use images would break", "regcheck-keep-prod-aa", "kept by the collector", "Dry run: nothing written. --apply writes the 1 tag(s) (needs push rights"}},
		{name: "cannot", rep: protectresult.Report{Model: "distribution-2.8", Owner: "prod", Keep: kept[:1], Proof: protectresult.Proof{BreakBefore: 1, BreakAfter: 1}, Unprotected: []protectresult.Unprotected{{Reference: "reg/app:v1", Reason: "already broken"}}},
			want: []string{"with it 1\n", "Cannot be protected (1)", "reg/app:v1", "already broken"}},
		{name: "second apply", rep: protectresult.Report{Applied: true, Owner: "prod", Counts: protectresult.Counts{Present: 1}},
			want: []string{"Nothing new written"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := Protect(&b, &tc.rep); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in\n%s", w, b.String())
				}
			}
		})
	}
}
