package gc_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

// rawManifest is manifest bytes as remote.Put takes them.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }
func (m rawManifest) MediaType() (ggcrtypes.MediaType, error) {
	return ggcrtypes.OCIManifestSchema1, nil
}

// putArtifact pushes a one-layer artifact manifest (with subject, a
// referrer: go-containerregistry then keeps the referrers tag's index, as
// cosign does) to ref, and returns its digest.
func putArtifact(t *testing.T, ref name.Reference, artifactType, subject, content string, annotations map[string]string) string {
	t.Helper()
	repo := ref.Context()
	cfg := static.NewLayer([]byte("{}"), "application/vnd.oci.empty.v1+json")
	layer := static.NewLayer([]byte(content), "application/vnd.dev.sigstore.bundle.v0.3+json")
	for _, l := range []v1.Layer{cfg, layer} {
		if err := remote.WriteLayer(repo, l); err != nil {
			t.Fatal(err)
		}
	}
	cd, _ := cfg.Digest()
	ld, _ := layer.Digest()
	m := map[string]any{"schemaVersion": 2, "mediaType": ggcrtypes.OCIManifestSchema1,
		"config": map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": cd.String(), "size": 2},
		"layers": []any{map[string]any{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json", "digest": ld.String(), "size": len(content)}}}
	if artifactType != "" {
		m["artifactType"] = artifactType
	}
	if subject != "" {
		m["subject"] = map[string]any{"mediaType": ggcrtypes.DockerManifestSchema2, "digest": subject, "size": 1}
	}
	if annotations != nil {
		m["annotations"] = annotations
	}
	body, _ := json.Marshal(m)
	h, _, _ := v1.SHA256(strings.NewReader(string(body)))
	if tag, ok := ref.(name.Tag); !ok || tag.TagStr() == "" {
		ref = repo.Digest(h.String())
	}
	if err := remote.Put(ref, rawManifest(body)); err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// TestCheckArtifacts seeds a real registry's storage with an image signed
// the legacy way (.sig tag) and with a bundle under the referrers tag, and
// an old build whose tag moved, signed, and checks what each model's run
// is predicted to do to them: distribution 2.8's --delete-untagged
// deletes the referrers tag's entries (untagged), 3.x keeps them (a
// tagged index lists them); either deletes the old build and orphans its
// .sig tag.
func TestCheckArtifacts(t *testing.T) {
	bin, err := registry.Binary(registry.V3)
	bins.Require(t, err, "registry")
	ctx := context.Background()
	reg, err := registry.Start(ctx, bin, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	repo, _ := name.NewRepository(reg.Host()+"/app", name.Insecure)
	cur, err := fixture.PushSingle(ctx, repo.Tag("v1").String(), "current")
	if err != nil {
		t.Fatal(err)
	}
	old, err := fixture.PushSingle(ctx, repo.Tag("moving").String(), "old build")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.PushSingle(ctx, repo.Tag("moving").String(), "new build"); err != nil {
		t.Fatal(err)
	}
	putArtifact(t, repo.Tag(scan.ReferrersTag(cur)+".sig"), "", "", "legacy sig of current", nil)
	putArtifact(t, repo.Tag(scan.ReferrersTag(old)+".sig"), "", "", "legacy sig of old", nil)
	bundle := putArtifact(t, repo.Digest(cur), "application/vnd.dev.sigstore.bundle.v0.3+json", cur, "bundle of current",
		map[string]string{"dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": "https://sigstore.dev/cosign/sign/v1"})
	if err := reg.Stop(); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(reg.Root)
	if err != nil {
		t.Fatal(err)
	}
	targets := []types.Target{{Ref: repo.Tag("v1").String()}, {Ref: repo.Digest(old).String()}}
	orphan := scan.ReferrersTag(old) + ".sig"
	for _, tt := range []struct {
		model   gcresult.Model
		du      bool
		lost    []string // "kind layout digest"
		orphans []string
	}{
		{gcresult.Distribution3, false, nil, nil},
		{gcresult.Distribution3, true, nil, []string{orphan}},
		{gcresult.Distribution28, false, nil, nil},
		{gcresult.Distribution28, true, []string{"signature referrers-tag " + bundle}, []string{orphan}},
	} {
		t.Run(string(tt.model)+map[bool]string{true: "/delete-untagged"}[tt.du], func(t *testing.T) {
			rep, _, err := gc.Check(st, gc.Options{Model: tt.model, DeleteUntagged: tt.du}, targets)
			if err != nil {
				t.Fatal(err)
			}
			var lost, orphans []string
			for _, l := range rep.WouldLoseArtifacts {
				lost = append(lost, string(l.Kind)+" "+string(l.Layout)+" "+l.Digest)
				if l.Kind != string(artifacts.Signature) || l.Subject != cur || l.Reason == "" {
					t.Errorf("loss %+v", l)
				}
			}
			for _, o := range rep.WouldOrphanArtifacts {
				orphans = append(orphans, o.Tag)
			}
			if !slices.Equal(lost, tt.lost) || !slices.Equal(orphans, tt.orphans) {
				t.Errorf("lost %q orphans %q; want %q %q", lost, orphans, tt.lost, tt.orphans)
			}
			if rep.Counts.ArtifactsLost != len(tt.lost) || rep.Counts.ArtifactsOrphaned != len(tt.orphans) {
				t.Errorf("counts %+v", rep.Counts)
			}
			if len(tt.lost) > 0 && !slices.ContainsFunc(rep.Advice, func(a string) bool { return strings.Contains(a, "wouldLoseArtifacts") }) {
				t.Errorf("no advice about the lost signatures: %q", rep.Advice)
			}
		})
	}
}
