package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// gcReport is a storage-mode prediction with every section filled.
func gcReport() *gcresult.Report {
	d := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	use := types.Use{Namespace: "prod", Kind: "Deployment", Name: "app", Container: "app"}
	return &gcresult.Report{
		SchemaVersion: gcresult.SchemaVersion, Model: gcresult.Distribution28, Mode: gcresult.ModeStorage, Storage: "/var/lib/registry", DeleteUntagged: true,
		WouldBreak: []gcresult.Entry{{Reference: "reg.example/app:v1", Repository: "app", Digest: d("1"), Verdict: types.Broken,
			Reason: "index kept, child manifest linux/arm64 sha256:2222 unlinked", Lost: []string{d("2")},
			Losses:       []gcresult.Loss{{Code: types.ChildMissing, Digest: d("2"), Parent: d("1"), Platform: "linux/arm64", Message: "child gone"}},
			DeletedBlobs: []string{d("3")}, Advice: "tag the children", Uses: []types.Use{use}}},
		AlreadyBroken: []gcresult.Entry{{Reference: "reg.example/old:v0\x1b[31m", Repository: "old", Verdict: types.Broken, Reason: "blob gone", Advice: "rebuild"}},
		WouldLoseArtifacts: []gcresult.ArtifactLoss{{Reference: "reg.example/app:v1", Subject: d("1"), Kind: "signature", Layout: "cosign-tag",
			Ref: "reg.example/app:sha256-" + strings.Repeat("1", 64) + ".sig", Digest: d("4"), Reason: "deleted"}},
		WouldOrphanArtifacts: []gcresult.OrphanedArtifact{{Repository: "gone", Tag: "sha256-" + strings.Repeat("5", 64) + ".sig", Subject: d("5")}},
		WouldDelete: gcresult.Deletions{Repositories: []gcresult.RepositoryDeletions{{Repository: "app",
			Manifests: []gcresult.ManifestDeletion{{Repository: "app", Digest: d("2"), TagIndex: []string{"v0"}}},
			Blobs:     []string{d("3")}, LayerLinks: []string{d("3")}}}, Blobs: []string{d("3")}},
		Damage:  []gcresult.Damage{{Repository: "old", Kind: gcresult.RevisionDataGone, Digest: d("6"), Tag: "v0", Message: "data gone"}},
		Skipped: []gcresult.Skipped{{Reference: "other.example/x:1", Reason: "not in this storage"}},
		Counts:  gcresult.Counts{WouldBreak: 1, AlreadyBroken: 1, Manifests: 1, Blobs: 1, LayerLinks: 1, TagIndexEntries: 1, Damage: 1, Skipped: 1, ArtifactsLost: 1, ArtifactsOrphaned: 1},
		Advice:  []string{"do not run it", "or tag the children"},
		Notes:   []gcresult.Note{{Kind: gcresult.NoteInUseOnly, Text: "only in-use repositories were examined"}},
	}
}

// Every format of gc-check, pin and pin --check stays byte for byte what
// it was when these results moved out of the engines that make them: the
// golden files were written by the code before the move.
func TestResultsGolden(t *testing.T) {
	api := gcReport()
	api.Mode, api.Storage, api.Registries, api.ModelAssumed = gcresult.ModeAPI, "", []string{"reg.example"}, true
	cases := []struct {
		name   string
		render func(out, notes *bytes.Buffer) error
	}{
		{"gccheck.table", func(out, _ *bytes.Buffer) error { return GCCheck(out, gcReport()) }},
		{"gccheck.json", func(out, _ *bytes.Buffer) error { return GCCheckJSON(out, gcReport()) }},
		{"gccheck-api.table", func(out, _ *bytes.Buffer) error { return GCCheck(out, api) }},
		{"pin-preview.text", func(out, notes *bytes.Buffer) error { return Pin(out, notes, pinReport(false)) }},
		{"pin-written.text", func(out, notes *bytes.Buffer) error { return Pin(out, notes, pinReport(true)) }},
	}
	for _, format := range PinCheckFormats {
		cases = append(cases, struct {
			name   string
			render func(out, notes *bytes.Buffer) error
		}{"pincheck." + format, func(out, notes *bytes.Buffer) error { return PinCheck(out, notes, format, pinReport(false)) }})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, notes bytes.Buffer
			if err := tc.render(&out, &notes); err != nil {
				t.Fatal(err)
			}
			got := append(out.Bytes(), "\n--- notes ---\n"...)
			goldenFile(t, filepath.Join("testdata", tc.name+".golden"), append(got, notes.Bytes()...))
		})
	}
}
