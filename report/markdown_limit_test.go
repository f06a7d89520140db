package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/regcheck/regcheck/types"
)

// manyImages is a result of n broken and n ok images, each used by a
// Deployment, with m input errors of a long message each.
func manyImages(n, m int) *types.Result {
	r := &types.Result{}
	for i := range n {
		for _, v := range []types.Verdict{types.Broken, types.OK} {
			im := &types.Image{
				Reference: fmt.Sprintf("registry.example.com/team-%04d/service-with-a-long-name:%s-%d", i, v, i),
				Digest:    "sha256:" + strings.Repeat("a", 64),
				Verdict:   v,
				Uses:      []types.Use{{Source: "file", File: fmt.Sprintf("deploy/app-%04d.yaml", i), Line: 12, Kind: "Deployment", Namespace: "prod", Name: fmt.Sprintf("app-%04d", i), Container: "app"}},
			}
			if v == types.Broken {
				im.Findings = []types.Finding{{Code: types.ManifestMissing, Severity: types.SeverityCritical, Message: "the manifest " + im.Digest + " is gone", Advice: "push it again"}}
			}
			r.Images = append(r.Images, im)
		}
	}
	for i := range m {
		r.InputErrors = append(r.InputErrors, types.InputError{Source: fmt.Sprintf("bad-%d.yaml", i), Line: 1, Message: strings.Repeat("x", 4000)})
	}
	return r
}

func TestMarkdownLimit(t *testing.T) {
	t.Parallel()
	left := regexp.MustCompile(`_(\d+) rows? left out to stay under GitHub's 65536-character limit`)
	for _, tc := range []struct {
		name       string
		n, m       int
		wantLeft   bool
		wantImages int // at least this many image references shown
	}{
		{"small: everything", 10, 2, false, 20},
		{"large: cut whole rows", 2000, 50, true, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := manyImages(tc.n, tc.m)
			var buf bytes.Buffer
			if err := Markdown(&buf, r); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if c := utf8.RuneCountInString(out); c > MaxMarkdown {
				t.Errorf("%d characters, over %d", c, MaxMarkdown)
			}
			m := left.FindStringSubmatch(out)
			if (m != nil) != tc.wantLeft {
				t.Fatalf("left-out line = %v, want %v", m, tc.wantLeft)
			}
			shown := strings.Count(out, "registry.example.com/team-")
			if shown < tc.wantImages {
				t.Errorf("%d images shown, want at least %d", shown, tc.wantImages)
			}
			if strings.Contains(out, strings.Repeat("x", types.MaxMessage+1)) {
				t.Error("an input error's message is not capped")
			}
			if m != nil {
				n, _ := strconv.Atoi(m[1])
				// every row is an image (broken or ok) or an input error
				if rows := 2*tc.n + tc.m; shown+strings.Count(out, "bad-")+n != rows {
					t.Errorf("%d shown + %d inputs + %d left out != %d rows", shown, strings.Count(out, "bad-"), n, rows)
				}
			}
			if strings.Count(out, "<details>") != strings.Count(out, "</details>") {
				t.Error("a <details> block is not closed")
			}
		})
	}
}
