package gc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/regtree"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

func sorted(ss ...[]string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s...)
	}
	slices.Sort(out)
	return out
}

func TestSimulate(t *testing.T) {
	tr, s := regtree.Seeded(t)
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		model     gcresult.Model
		du        bool
		manifests []string
		blobs     []string
	}{
		{"2.8 keeps everything", gcresult.Distribution28, false, nil, nil},
		{"3 keeps everything", gcresult.Distribution3, false, nil, nil},
		// 2.8 deletes the children's revision links; their manifest data is
		// marked as the index's reference, their blobs are not.
		{"2.8 delete-untagged", gcresult.Distribution28, true, sorted([]string{s.Amd, s.Arm, s.Old}), sorted(s.AmdBlobs, s.ArmBlobs, s.OldBlobs, []string{s.Old})},
		{"3 delete-untagged", gcresult.Distribution3, true, []string{s.Old}, sorted(s.OldBlobs, []string{s.Old})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Simulate(st, tc.model, tc.du)
			if err != nil || p.Abort != nil {
				t.Fatalf("err %v abort %+v", err, p.Abort)
			}
			var ms []string
			for _, m := range p.Manifests {
				ms = append(ms, m.Digest)
			}
			slices.Sort(ms)
			if !slices.Equal(ms, tc.manifests) || !slices.Equal(p.Blobs, sorted(tc.blobs)) {
				t.Errorf("manifests %v blobs %v\nwant %v %v", ms, p.Blobs, tc.manifests, tc.blobs)
			}
		})
	}
}

func TestCheckWouldBreakAndSurvey(t *testing.T) {
	tr, s := regtree.Seeded(t)
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	in := []types.Target{{Ref: "reg.example/app:v1"}, {Ref: "reg.example/lone@" + s.Old}, {Ref: "reg.example/other:v1"}}
	rep, plan, err := Check(st, Options{Model: gcresult.Distribution28, DeleteUntagged: true}, in)
	if err != nil {
		t.Fatal(err)
	}
	var breaks []string
	for _, e := range rep.WouldBreak {
		breaks = append(breaks, e.Reference)
	}
	if want := []string{"reg.example/app:v1", "reg.example/lone@" + s.Old}; !slices.Equal(breaks, want) || len(rep.AlreadyBroken) != 0 ||
		len(rep.Skipped) != 1 || rep.Skipped[0].Reference != "reg.example/other:v1" {
		t.Fatalf("would break %v (want %v), already %+v, skipped %+v", breaks, want, rep.AlreadyBroken, rep.Skipped)
	}
	if e := rep.WouldBreak[0]; e.Verdict != types.Broken || !slices.Equal(e.Lost, sorted([]string{s.Amd, s.Arm})) {
		t.Errorf("app:v1: %+v", e)
	}
	// After the run, the survey finds what the run broke.
	after := Apply(st, plan)
	kinds := map[gcresult.DamageKind][]string{}
	for _, d := range Survey(after, gcresult.Distribution28) {
		kinds[d.Kind] = append(kinds[d.Kind], d.Digest)
	}
	if got, want := sorted(kinds[gcresult.ChildUnlinked]), sorted([]string{s.Amd, s.Arm}); !slices.Equal(got, want) {
		t.Errorf("survey after the run: children unlinked %v, want %v", got, want)
	}
	if got, want := sorted(kinds[gcresult.LayerLinkDangling]), sorted(s.AmdBlobs, s.ArmBlobs, s.OldBlobs); !slices.Equal(got, want) {
		t.Errorf("survey after the run: dangling _layers links %v, want the deleted images' blobs %v", got, want)
	}
	rep3, _, err := Check(st, Options{Model: gcresult.Distribution3, DeleteUntagged: true}, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep3.WouldBreak) != 1 || rep3.WouldBreak[0].Digest != s.Old {
		t.Errorf("distribution 3: %+v", rep3.WouldBreak)
	}
}

func TestAbort(t *testing.T) {
	tr, _ := regtree.Seeded(t)
	tr.Image("notags", "pushed by digest")
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Simulate(st, gcresult.Distribution28, true)
	if err != nil || p.Abort == nil || p.Abort.Repository != "notags" || len(p.Blobs) != 0 {
		t.Fatalf("2.8: err %v plan %+v", err, p)
	}
	p, err = Simulate(st, gcresult.Distribution3, true)
	if err != nil || p.Abort != nil {
		t.Fatalf("3: err %v abort %+v", err, p.Abort)
	}
	// 3.x skips the repository: its manifest and blobs go, its revision link stays.
	if len(p.Blobs) != 3+3 || len(p.LayerLinks) != 2+2 { // lone's old image, and notags
		t.Errorf("3: blobs %v layer links %v", p.Blobs, p.LayerLinks)
	}
	if p, _ := Simulate(st, gcresult.Distribution28, false); p.Abort != nil {
		t.Errorf("2.8 without --delete-untagged aborts: %+v", p.Abort)
	}
}

// A model the caller did not give is said on the report's first line and in
// its JSON, and its advice is conditional on it: never "upgrade" to what the
// registry may already run.
func TestModelAssumed(t *testing.T) {
	tr, s := regtree.Seeded(t)
	tr.Image("notags", "pushed by digest") // 2.x aborts on it
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	noAbort, _ := regtree.Seeded(t)
	clean, err := storage.Open(noAbort.Root)
	if err != nil {
		t.Fatal(err)
	}
	in := []types.Target{{Ref: "reg.example/app:v1"}, {Ref: "reg.example/lone@" + s.Old}}
	for _, tc := range []struct {
		name  string
		st    *storage.Storage
		model gcresult.Model
		du    bool
	}{
		{"2.8 delete-untagged", clean, gcresult.Distribution28, true},
		{"2.8 abort", st, gcresult.Distribution28, true},
		{"2.8", clean, gcresult.Distribution28, false},
		{"3 delete-untagged", clean, gcresult.Distribution3, true},
	} {
		for _, assumed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s assumed=%v", tc.name, assumed), func(t *testing.T) {
				rep, _, err := Check(tc.st, Options{Model: tc.model, ModelAssumed: assumed, DeleteUntagged: tc.du}, in)
				if err != nil {
					t.Fatal(err)
				}
				// The table's first line (report.GCCheck, tested there) and
				// the JSON say both.
				js, err := json.Marshal(rep)
				if err != nil {
					t.Fatal(err)
				}
				var doc struct {
					Model        gcresult.Model `json:"model"`
					ModelAssumed *bool          `json:"modelAssumed"`
				}
				if err := json.Unmarshal(js, &doc); err != nil {
					t.Fatal(err)
				}
				if doc.Model != tc.model || doc.ModelAssumed == nil || *doc.ModelAssumed != assumed {
					t.Errorf("JSON model %q modelAssumed %v, want %q %v", doc.Model, doc.ModelAssumed, tc.model, assumed)
				}
				advice := slices.Clone(rep.Advice)
				for _, e := range append(slices.Clone(rep.WouldBreak), rep.AlreadyBroken...) {
					advice = append(advice, e.Advice)
				}
				if tc.du && len(rep.Advice) == 0 {
					t.Fatalf("no advice: %+v", rep)
				}
				for _, a := range advice {
					if !assumed {
						continue
					}
					if strings.Contains(a, "upgrade") {
						t.Errorf("assumed %s, advice says upgrade: %q", tc.model, a)
					}
					if !strings.HasPrefix(a, "if the registry runs "+tc.model.Release()) && !strings.HasPrefix(a, "rebuild") && !strings.HasPrefix(a, "already broken") {
						t.Errorf("assumed %s, advice is not conditional on it: %q", tc.model, a)
					}
				}
			})
		}
	}
}

// The survey names each loss's parent, and tells a child whose revision
// link is gone from one whose data is; an unreadable manifest is damage,
// and an in-use image it belongs to is unknown: skipped, the check incomplete.
func TestSurveyKinds(t *testing.T) {
	tr, s := regtree.Seeded(t)
	for _, d := range []string{s.Amd, s.Arm} {
		os.Remove(filepath.Join(tr.Root, "docker", "registry", "v2", "blobs", "sha256", regtree.Hex(d)[:2], regtree.Hex(d), "data"))
	}
	os.RemoveAll(filepath.Join(tr.Root, "docker", "registry", "v2", "repositories", "app", "_manifests", "revisions", "sha256", regtree.Hex(s.Arm)))
	corrupt := tr.Blob(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"sha256:nothex"}}`)
	tr.Write(filepath.Join("repositories", "bad", "_manifests", "revisions", "sha256", regtree.Hex(corrupt), "link"), corrupt)
	tr.Tag("bad", "v1", corrupt)
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]gcresult.Damage{}
	for _, d := range Survey(st, gcresult.Distribution3) {
		got[string(d.Kind)+" "+d.Digest+" "+d.Tag] = d
	}
	for _, want := range []gcresult.Damage{
		{Kind: gcresult.RevisionDataGone, Digest: s.Amd, Tag: "v1", Parent: s.Idx},
		{Kind: gcresult.RevisionDataGone, Digest: s.Amd},
		{Kind: gcresult.ChildUnlinked, Digest: s.Arm, Tag: "v1", Parent: s.Idx},
		{Kind: gcresult.ManifestUnreadable, Digest: corrupt, Tag: "v1"},
	} {
		d, ok := got[string(want.Kind)+" "+want.Digest+" "+want.Tag]
		if !ok || d.Parent != want.Parent {
			t.Errorf("no %s damage for %s (tag %q, parent %q) in %v", want.Kind, want.Digest, want.Tag, want.Parent, got)
		}
	}
	rep, _, err := Check(st, Options{Model: gcresult.Distribution3}, []types.Target{{Ref: "reg.example/bad:v1"}, {Ref: "reg.example/app:v1"}})
	if err == nil || rep == nil || len(rep.Skipped) != 1 || rep.Skipped[0].Reference != "reg.example/bad:v1" {
		t.Fatalf("err %v, report %+v: want bad:v1 skipped and the check incomplete", err, rep)
	}
	if len(rep.AlreadyBroken) != 1 || rep.AlreadyBroken[0].Verdict != types.Broken || len(rep.AlreadyBroken[0].Losses) != 2 {
		t.Fatalf("already broken: %+v", rep.AlreadyBroken)
	}
	for _, l := range rep.AlreadyBroken[0].Losses {
		if l.Code != types.ChildMissing || l.Parent != s.Idx {
			t.Errorf("loss %+v: want a child of %s", l, s.Idx)
		}
	}
}

// A blob lost under an index child names the child as its parent, and
// the blobs the run deletes from under an image are listed with it, those
// already unlinked included.
func TestCheckParents(t *testing.T) {
	tr, s := regtree.Seeded(t)
	os.RemoveAll(filepath.Join(tr.Root, "docker", "registry", "v2", "repositories", "app", "_layers", "sha256", regtree.Hex(s.ArmBlobs[1])))
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := Check(st, Options{Model: gcresult.Distribution28, DeleteUntagged: true}, []types.Target{{Ref: "reg.example/app:v1"}})
	if err != nil || len(rep.AlreadyBroken) != 1 || len(rep.WouldBreak) != 1 {
		t.Fatalf("err %v, already %+v, would %+v", err, rep.AlreadyBroken, rep.WouldBreak)
	}
	if l := rep.AlreadyBroken[0].Losses; len(l) != 1 || l[0].Code != types.BlobMissing || l[0].Digest != s.ArmBlobs[1] || l[0].Parent != s.Arm || l[0].Platform != "linux/arm64" {
		t.Errorf("already broken losses %+v", l)
	}
	e := rep.WouldBreak[0]
	// 2.8 keeps the children's data (the index references it), not their blobs.
	if want := sorted(s.AmdBlobs, s.ArmBlobs); !slices.Equal(e.DeletedBlobs, want) {
		t.Errorf("deleted blobs %v, want %v", e.DeletedBlobs, want)
	}
}
