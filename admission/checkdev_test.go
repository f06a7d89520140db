package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/types"
)

// applyDev applies chk to the team image used by Deployment dev/web, and
// returns the image with its findings.
func applyDev(t *testing.T, chk *Checker) *types.Image {
	t.Helper()
	im := &types.Image{Reference: "registry.example.com/team/web:v1", Digest: imgDigest, Verdict: types.OK,
		Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "dev", Name: "web"}}}
	if err := chk.Apply(context.Background(), &types.Result{Images: []*types.Image{im}}); err != nil {
		t.Fatal(err)
	}
	return im
}

// findingCodes is im's findings as "code/severity", space-separated.
func findingCodes(im *types.Image) string {
	var codes []string
	for _, fd := range im.Findings {
		codes = append(codes, fmt.Sprintf("%s/%s", fd.Code, fd.Severity))
	}
	return strings.Join(codes, " ")
}

// wantFindings checks im's verdict and findings (as findingCodes), and
// that its findings say each of mentions.
func wantFindings(t *testing.T, im *types.Image, verdict types.Verdict, codes string, mentions ...string) {
	t.Helper()
	if got := findingCodes(im); got != codes || im.Verdict != verdict {
		t.Errorf("verdict %s, findings %q; want %s, %q: %+v", im.Verdict, got, verdict, codes, im.Findings)
	}
	for _, m := range mentions {
		if m != "" && !strings.Contains(fmt.Sprint(im.Findings), m) {
			t.Errorf("no finding says %q: %+v", m, im.Findings)
		}
	}
}
