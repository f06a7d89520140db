package admission

import (
	"context"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// TestKyvernoDigestRequired: under a Kyverno verifyImages entry with
// mutateDigest: false, verifyDigest (true unless set false) refuses a
// Pod whose image names no digest ("missing digest"), whatever its
// signatures; an image written with its digest, mutateDigest left to its
// default (true: the tag is resolved first) or verifyDigest: false is
// judged on its signature alone. As the Kyverno CLI v1.19.1 measured
// (integration TestEngineVerdicts).
func TestKyvernoDigestRequired(t *testing.T) {
	a := testPEM("key A")
	policy := func(action, fields string) string {
		p := kyvernoPolicy(action, 0, keyEntry(a, ignoreTlog))
		return strings.Replace(p, "        - imageReferences: [\"registry.example.com/team/*\"]\n", "        - imageReferences: [\"registry.example.com/team/*\"]\n"+fields, 1)
	}
	const (
		tag    = "registry.example.com/team/web:v1"
		pinned = "registry.example.com/team/web:v1@" + imgDigest
	)
	for _, c := range []struct {
		name, policy, written string
		want                  types.Verdict
		codes, mentions       string
	}{
		{"mutateDigest false, a tag: refused", policy("Enforce", "          mutateDigest: false\n"), tag,
			types.Broken, "signature-refused/critical", `"missing digest for ` + tag + `"`},
		{"mutateDigest false, Audit: reported", policy("Audit", "          mutateDigest: false\n"), tag,
			types.AtRisk, "signature-refused/warning", "the pod is admitted"},
		{"mutateDigest false, the digest written", policy("Enforce", "          mutateDigest: false\n"), pinned, types.OK, "", ""},
		{"mutateDigest default (true): the tag is resolved first", policy("Enforce", ""), tag, types.OK, "", ""},
		{"mutateDigest and verifyDigest false", policy("Enforce", "          mutateDigest: false\n          verifyDigest: false\n"), tag, types.OK, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			chk := &Checker{Policies: readPolicy(t, c.policy), Parse: scan.ParseReference,
				Finder:   &fakeFinder{set: artifacts.Set{Image: imgDigest, Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true)}}},
				Verifier: &fakeVerifier{outcomes: map[string]Outcome{a: Verified}}}
			im := &types.Image{Reference: tag, Digest: imgDigest, Verdict: types.OK,
				Uses: []types.Use{{Source: "file", Written: c.written, Kind: "Pod", Namespace: "dev", Name: "web"}}}
			if err := chk.Apply(context.Background(), &types.Result{Images: []*types.Image{im}}); err != nil {
				t.Fatal(err)
			}
			wantFindings(t, im, c.want, c.codes, c.mentions)
		})
	}
}
