package protect

import (
	"slices"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/regtree"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

// TestPlan: on the seed tree (app:v1 an index of two untagged children;
// lone@Old a digest pin whose tag moved), 2.x tags the index, each child
// and the pin; 3.x only the pin its collector deletes. The proof is the
// model over the shielded storage: 0 breaks after. A keep-tag already
// written is still needed, and present.
func TestPlan(t *testing.T) {
	t.Parallel()
	tr, s := regtree.Seeded(t)
	oldTag, err := TagName(DefaultPrefix, "prod", s.Old)
	if err != nil {
		t.Fatal(err)
	}
	written := regtree.New(t)
	ws := struct{ old string }{}
	ws.old, _ = written.Image("lone", "old")
	written.Tag("lone", oldTag, ws.old)
	in := []types.Target{{Ref: "reg.example/app:v1"}, {Ref: "reg.example/lone@" + s.Old}}
	for _, tc := range []struct {
		name    string
		root    string
		model   gcresult.Model
		du      bool
		tagged  []string
		before  int
		present int
	}{
		{name: "2.8 delete-untagged", root: tr.Root, model: gcresult.Distribution28, du: true, tagged: []string{s.Amd, s.Arm, s.Idx, s.Old}, before: 2},
		{name: "2.8 without delete-untagged still shields", root: tr.Root, model: gcresult.Distribution28, tagged: []string{s.Amd, s.Arm, s.Idx, s.Old}},
		{name: "3 delete-untagged tags what it deletes", root: tr.Root, model: gcresult.Distribution3, du: true, tagged: []string{s.Old}, before: 1},
		{name: "3 deletes nothing without delete-untagged", root: tr.Root, model: gcresult.Distribution3},
		{name: "3 keep-tag already written is needed and present", root: written.Root, model: gcresult.Distribution3, du: true, tagged: []string{ws.old}, before: 1, present: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := storage.Open(tc.root)
			if err != nil {
				t.Fatal(err)
			}
			targets := in
			if tc.root == written.Root {
				targets = []types.Target{{Ref: "reg.example/lone@" + ws.old}}
			}
			rep, err := Plan(st, Options{Model: tc.model, DeleteUntagged: tc.du, Owner: "prod"}, targets)
			if err != nil {
				t.Fatal(err)
			}
			var tagged []string
			for _, k := range rep.Keep {
				if k.Tag != "" {
					tagged = append(tagged, k.Digest)
				}
			}
			slices.Sort(tagged)
			want := slices.Sorted(slices.Values(tc.tagged))
			if !slices.Equal(tagged, want) {
				t.Errorf("tagged %v, want %v", tagged, want)
			}
			if rep.Proof.BreakBefore != tc.before || rep.Proof.BreakAfter != 0 || len(rep.Unprotected) != 0 {
				t.Errorf("proof %+v unprotected %+v; want %d before, 0 after", rep.Proof, rep.Unprotected, tc.before)
			}
			if rep.Counts.Present != tc.present || rep.Counts.Planned != len(tc.tagged)-tc.present {
				t.Errorf("counts %+v; want %d present", rep.Counts, tc.present)
			}
			for _, k := range rep.Keep {
				if k.Tag != "" && k.Status != protectresult.Planned && k.Status != protectresult.Present {
					t.Errorf("%s: status %s in a dry run", k.Digest, k.Status)
				}
			}
		})
	}
}
