package artifacts_test

import (
	"testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/types"
)

// TestPresence checks the Set's answer to each kind of query: a whole
// match is present, a fault that may hide one is unknown, else missing.
func TestPresence(t *testing.T) {
	const img, child = "sha256:aa", "sha256:bb"
	whole := func(k artifacts.Kind, l artifacts.Layout, subject string, preds ...string) artifacts.Artifact {
		return artifacts.Artifact{Kind: k, Layout: l, Subject: subject, Whole: true, PredicateTypes: preds}
	}
	broken := func(k artifacts.Kind, l artifacts.Layout, code types.Code) artifacts.Artifact {
		return artifacts.Artifact{Kind: k, Layout: l, Subject: img, Findings: []types.Finding{types.NewFinding(code, "", "", "x")}}
	}
	fault := types.NewFinding(types.RegistryFault, img, "", "503")
	repoFault := types.NewFinding(types.RateLimited, "", "", "429")
	childFault := types.NewFinding(types.RegistryFault, child, "linux/arm64", "503")
	tests := []struct {
		name string
		set  artifacts.Set
		q    artifacts.Query
		want artifacts.Presence
	}{
		{"nothing", artifacts.Set{}, artifacts.Query{Kind: artifacts.Signature}, artifacts.Missing},
		{"whole signature", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Signature, artifacts.CosignTag, img)}},
			artifacts.Query{Kind: artifacts.Signature}, artifacts.Present},
		{"a child's signature is not the image's", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Signature, artifacts.CosignTag, child)}},
			artifacts.Query{Kind: artifacts.Signature}, artifacts.Missing},
		{"the child's, asked for", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Signature, artifacts.CosignTag, child)}},
			artifacts.Query{Kind: artifacts.Signature, Subject: child}, artifacts.Present},
		{"blob missing", artifacts.Set{Artifacts: []artifacts.Artifact{broken(artifacts.Signature, artifacts.CosignTag, types.BlobMissing)}},
			artifacts.Query{Kind: artifacts.Signature}, artifacts.Missing},
		{"blob unchecked", artifacts.Set{Artifacts: []artifacts.Artifact{broken(artifacts.Signature, artifacts.CosignTag, types.RegistryFault)}},
			artifacts.Query{Kind: artifacts.Signature}, artifacts.Unknown},
		{"one whole beside one broken", artifacts.Set{Artifacts: []artifacts.Artifact{broken(artifacts.Signature, artifacts.CosignTag, types.BlobMissing),
			whole(artifacts.Signature, artifacts.ReferrersTag, img)}}, artifacts.Query{Kind: artifacts.Signature}, artifacts.Present},
		{"search fault", artifacts.Set{Faults: []types.Finding{fault}}, artifacts.Query{Kind: artifacts.Signature}, artifacts.Unknown},
		{"repository fault", artifacts.Set{Faults: []types.Finding{repoFault}}, artifacts.Query{Kind: artifacts.Signature}, artifacts.Unknown},
		{"a child's fault hides nothing of the image's", artifacts.Set{Faults: []types.Finding{childFault}}, artifacts.Query{Kind: artifacts.Signature}, artifacts.Missing},
		{"a fault does not hide a whole one", artifacts.Set{Faults: []types.Finding{fault}, Artifacts: []artifacts.Artifact{whole(artifacts.Signature, artifacts.CosignTag, img)}},
			artifacts.Query{Kind: artifacts.Signature}, artifacts.Present},
		{"predicate type matches", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Attestation, artifacts.CosignTag, img, "https://slsa.dev/provenance/v0.2")}},
			artifacts.Query{Kind: artifacts.Attestation, PredicateType: "https://slsa.dev/provenance/v0.2"}, artifacts.Present},
		{"another predicate type", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Attestation, artifacts.CosignTag, img, "https://spdx.dev/Document")}},
			artifacts.Query{Kind: artifacts.Attestation, PredicateType: "https://slsa.dev/provenance/v0.2"}, artifacts.Missing},
		{"no predicate type said: any", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Attestation, artifacts.ReferrersTag, img)}},
			artifacts.Query{Kind: artifacts.Attestation, PredicateType: "https://slsa.dev/provenance/v0.2"}, artifacts.Present},
		{"layout not counted", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Signature, artifacts.CosignTag, img)}},
			artifacts.Query{Kind: artifacts.Signature, Layouts: []artifacts.Layout{artifacts.ReferrersAPI, artifacts.ReferrersTag}}, artifacts.Missing},
		{"layout counted", artifacts.Set{Artifacts: []artifacts.Artifact{whole(artifacts.Signature, artifacts.ReferrersTag, img)}},
			artifacts.Query{Kind: artifacts.Signature, Layouts: []artifacts.Layout{artifacts.ReferrersAPI, artifacts.ReferrersTag}}, artifacts.Present},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set.Image = img
			if got := tt.set.Presence(tt.q); got != tt.want {
				t.Errorf("Presence = %s, want %s", got, tt.want)
			}
		})
	}
}
