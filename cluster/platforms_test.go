package cluster

import (
	"strings"
	"testing"

	"github.com/regcheck/regcheck/types"
)

func TestNarrowToNodes(t *testing.T) {
	amd := types.NodePlatform{Platform: "linux/amd64", Nodes: []string{"a1", "a2"}}
	arm := types.NodePlatform{Platform: "linux/arm64", Nodes: []string{"r1"}}
	lost := func(code types.Code, platform string) types.Finding {
		return types.NewFinding(code, "sha256:"+strings.Repeat("1", 64), platform, "the %s manifest is gone", platform)
	}
	use := func(ps ...types.NodePlatform) types.Use { return types.Use{Source: "cluster", Platforms: ps} }
	for _, tc := range []struct {
		name     string
		uses     []types.Use
		findings []types.Finding
		want     []types.Code
		verdict  types.Verdict
		says     string // in the first finding's message
	}{
		{"arm64 child lost, amd64 nodes only", []types.Use{use(amd)}, []types.Finding{lost(types.ChildMissing, "linux/arm64/v8")},
			[]types.Code{types.LostForOtherPlatform}, types.OK, "no node the workloads may run on is linux/arm64/v8 (they run linux/amd64)"},
		{"a blob of the arm64 child lost, amd64 nodes only", []types.Use{use(amd)}, []types.Finding{lost(types.BlobMissing, "linux/arm64")},
			[]types.Code{types.LostForOtherPlatform}, types.OK, "(blob-missing)"},
		{"arm64 child lost, nodes of both", []types.Use{use(amd, arm)}, []types.Finding{lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.LostForSomeNodes}, types.AtRisk, "node r1 (linux/arm64) cannot pull it, while node a1 (linux/amd64), node a2 (linux/amd64) still can"},
		{"amd64 child lost, amd64 nodes", []types.Use{use(amd)}, []types.Finding{lost(types.ChildMissing, "linux/amd64")},
			[]types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"both children lost, nodes of both", []types.Use{use(amd, arm)}, []types.Finding{lost(types.ChildMissing, "linux/amd64"), lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.ChildMissing, types.ChildMissing}, types.Broken, "gone"},
		{"arm64 lost: one use on arm64 only, one on amd64", []types.Use{use(amd), use(arm)}, []types.Finding{lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a DaemonSet on nodes of both: its arm64 pods cannot start", []types.Use{{Source: "cluster", Kind: "DaemonSet", Platforms: []types.NodePlatform{amd, arm}}},
			[]types.Finding{lost(types.ChildMissing, "linux/arm64")}, []types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a pod with Always on the arm64 node: its next start pulls there", []types.Use{{Source: "cluster", Kind: "Deployment", Pod: "p", Node: "r1", PullPolicy: "Always", Platforms: []types.NodePlatform{amd, arm}}},
			[]types.Finding{lost(types.ChildMissing, "linux/arm64")}, []types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a pod with IfNotPresent on the arm64 node: the node keeps what runs", []types.Use{{Source: "cluster", Kind: "Deployment", Pod: "p", Node: "r1", PullPolicy: "IfNotPresent", Platforms: []types.NodePlatform{amd, arm}}},
			[]types.Finding{lost(types.ChildMissing, "linux/arm64")}, []types.Code{types.LostForSomeNodes}, types.AtRisk, "node r1 (linux/arm64) cannot pull it"},
		{"nodes unknown: every platform is required", []types.Use{use()}, []types.Finding{lost(types.ChildMissing, "linux/arm64")},
			[]types.Code{types.ChildMissing}, types.Broken, "gone"},
		{"a loss with no platform is everyone's", []types.Use{use(amd)}, []types.Finding{lost(types.ManifestMissing, "")},
			[]types.Code{types.ManifestMissing}, types.Broken, "gone"},
		{"a fault under a platform stays a fault", []types.Use{use(amd)}, []types.Finding{lost(types.Unreachable, "linux/arm64")},
			[]types.Code{types.Unreachable}, types.Unknown, "gone"},
		{"an attestation lost stays at-risk", []types.Use{use(amd)}, []types.Finding{lost(types.AttestationMissing, "unknown/unknown")},
			[]types.Code{types.AttestationMissing}, types.AtRisk, "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := &types.Image{Reference: "reg.example/app:v1", Uses: tc.uses, Findings: append([]types.Finding(nil), tc.findings...)}
			im.UpdateVerdict()
			narrowToNodes(im)
			var got []types.Code
			for _, f := range im.Findings {
				got = append(got, f.Code)
			}
			if strings.Join(codeStrings(got), ",") != strings.Join(codeStrings(tc.want), ",") {
				t.Errorf("codes %v, want %v", got, tc.want)
			}
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", im.Verdict, tc.verdict)
			}
			if !strings.Contains(im.Findings[0].Message, tc.says) {
				t.Errorf("message %q does not say %q", im.Findings[0].Message, tc.says)
			}
			if im.Findings[0].Advice == "" {
				t.Error("no advice")
			}
		})
	}
}

func codeStrings(cs []types.Code) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}
