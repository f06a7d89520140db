package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// cleanupReport is a cleanup prediction as CheckCleanup makes one: a
// GHCR action that deletes an index's children, a tag an ECR rule
// expires, and a cosign signature.
func cleanupReport() *gcresult.Report {
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	eligible := at.Add(-40 * 24 * time.Hour)
	keep := "upgrade to snok/container-retention-policy@v3.1.0 (it keeps the children of kept tagged indexes), or list the digests in skip-shas"
	return &gcresult.Report{SchemaVersion: gcresult.SchemaVersion, Mode: gcresult.ModeCleanup, Registries: []string{"ghcr.io"},
		WouldBreak: []gcresult.Entry{
			{Reference: "ghcr.io/org/app:v1", Repository: "ghcr.io/org/app", Digest: "sha256:1111", Verdict: types.Broken,
				Losses: []gcresult.Loss{
					{Code: types.ChildMissing, Digest: "sha256:aaaa", Parent: "sha256:1111", Platform: "linux/arm64", Policy: "snok/container-retention-policy@v2", Rule: "cut-off 1w, untagged", Keep: keep,
						Message: "the index's linux/arm64 manifest sha256:aaaa is deleted by snok/container-retention-policy@v2 (cut-off 1w, untagged, run 1)"}},
				Lost: []string{"sha256:aaaa"}, Advice: keep, Reason: "child deleted",
				Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "shop", Name: "web"}}},
			{Reference: "ghcr.io/org/api:v2", Repository: "ghcr.io/org/api", Digest: "sha256:2222", Verdict: types.Broken,
				Losses: []gcresult.Loss{{Code: types.TagDeleted, Policy: "ECR lifecycle policy", Rule: "rules[0]", Keep: "add a rule of higher priority with tagPrefixList [v2]",
					Message: "tag v2 is deleted by ECR lifecycle policy (rules[0], run 1): the next pull of ghcr.io/org/api:v2 says manifest unknown"}},
				Advice: "add a rule of higher priority with tagPrefixList [v2]", Uses: []types.Use{{Source: "file", File: "k8s/api.yaml", Line: 7}}},
		},
		AlreadyBroken:      []gcresult.Entry{},
		WouldLoseArtifacts: []gcresult.ArtifactLoss{{Reference: "ghcr.io/org/app:v1", Subject: "sha256:1111", Kind: "signature", Layout: "cosign-tag", Ref: "ghcr.io/org/app:sha256-1111.sig", Digest: "sha256:5555", Reason: "deleted by snok/container-retention-policy@v2 (cut-off 1w, untagged, run 1)"}},
		Skipped:            []gcresult.Skipped{{Reference: "ghcr.io/org/db:v1", Reason: "listing the tags of ghcr.io/org/db: 503"}},
		Counts:             gcresult.Counts{WouldBreak: 2, Manifests: 2, Skipped: 1},
		Advice:             []string{"do not run the cleanup as configured"},
		Notes:              []gcresult.Note{{Text: "times come from the exports"}},
		Cleanup: &gcresult.Cleanup{At: at, Runs: 1,
			Policies: []gcresult.CleanupPolicy{{Name: "snok/container-retention-policy@v2", Source: ".github/workflows/cleanup.yml:14", Repositories: []string{"ghcr.io/org/app"}}},
			States:   []gcresult.CleanupState{{File: "versions.json", Service: "ghcr", Repository: "ghcr.io/org/app"}},
			Deletions: []gcresult.CleanupDeletion{
				{Policy: "snok/container-retention-policy@v2", Repository: "ghcr.io/org/app", Run: 1, Kind: gcresult.ManifestDeleted, Digest: "sha256:5555", Rule: "cut-off 1w, untagged", Eligible: &eligible, Keep: keep},
				{Policy: "snok/container-retention-policy@v2", Repository: "ghcr.io/org/app", Run: 1, Kind: gcresult.TagRemoved, Tag: "sha256-1111.sig", Digest: "sha256:5555", Rule: "cut-off 1w, untagged", WithManifest: true},
				{Policy: "snok/container-retention-policy@v2", Repository: "ghcr.io/org/app", Run: 1, Kind: gcresult.ManifestDeleted, Digest: "sha256:aaaa", Rule: "cut-off 1w, untagged", Eligible: &eligible, Keep: keep},
			}},
	}
}

// TestGCCleanupGolden: the cleanup table leads with the cleanups read and
// what breaks, each loss with its rule and fix; JSON has it all.
func TestGCCleanupGolden(t *testing.T) {
	for _, tc := range []struct {
		file   string
		render func(*bytes.Buffer, *gcresult.Report) error
	}{
		{"testdata/gccheck-cleanup.table.golden", func(b *bytes.Buffer, r *gcresult.Report) error { return GCCheck(b, r) }},
		{"testdata/gccheck-cleanup.json.golden", func(b *bytes.Buffer, r *gcresult.Report) error { return GCCheckJSON(b, r) }},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(&b, cleanupReport()); err != nil {
				t.Fatal(err)
			}
			goldenFile(t, tc.file, b.Bytes())
		})
	}
	var b bytes.Buffer
	if err := GCCheck(&b, cleanupReport()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Index(out, "WOULD BREAK") > strings.Index(out, "WOULD DELETE") {
		t.Error("the table does not lead with what breaks")
	}
}
