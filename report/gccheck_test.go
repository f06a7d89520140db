package report

import (
	"strings"
	"testing"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// TestGCCheck: the table's first line names the model and says when it was
// assumed; the sections name each image, with text from files escaped.
func TestGCCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rep   gcresult.Report
		first string
		has   []string
	}{
		{
			name:  "storage, model given",
			rep:   gcresult.Report{Model: gcresult.Distribution28, Mode: gcresult.ModeStorage, Storage: "/var/lib/registry", DeleteUntagged: true},
			first: "GC model distribution-2.8 with --delete-untagged on /var/lib/registry",
		},
		{
			name:  "API, model assumed",
			rep:   gcresult.Report{Model: gcresult.Distribution3, ModelAssumed: true, Mode: gcresult.ModeAPI, Registries: []string{"reg.example"}},
			first: "GC model distribution-3 (assumed: which collector the registry runs was not given) without --delete-untagged, predicted through the registry API of reg.example",
			has:   []string{"(blobs: storage mode only)"},
		},
		{
			name: "what breaks, escaped",
			rep: gcresult.Report{Model: gcresult.Distribution28, Mode: gcresult.ModeStorage, Storage: "/s",
				WouldBreak: []gcresult.Entry{{Reference: "reg.example/app:v1\x1b[31m", Verdict: types.Broken, Reason: "index kept, child manifest linux/arm64 sha256:0123 unlinked"}},
				Counts:     gcresult.Counts{WouldBreak: 1}, Advice: []string{"do not run it", "or tag the children"}},
			first: "GC model distribution-2.8 without --delete-untagged on /s",
			has: []string{"WOULD BREAK (1)", `reg.example/app:v1\x1b[31m`, "child manifest linux/arm64", "1 would break, 0 already broken",
				"What to do:\n  - do not run it\n  - or tag the children"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := GCCheck(&b, &tc.rep); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if first, _, _ := strings.Cut(out, "\n"); first != tc.first {
				t.Errorf("first line %q, want %q", first, tc.first)
			}
			for _, h := range tc.has {
				if !strings.Contains(out, h) {
					t.Errorf("table lacks %q:\n%s", h, out)
				}
			}
			if strings.Contains(out, "\x1b") {
				t.Errorf("a raw escape reached the table:\n%q", out)
			}
		})
	}
}
