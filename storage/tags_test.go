package storage_test

import (
	"slices"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/regtree"
	"github.com/regcheck/regcheck/storage"
)

// TestWithTagsWithoutTags: the copies add or drop tags as a push or a tag
// delete would, leave the original as it was, and add none for a digest
// the repository does not hold.
func TestWithTagsWithoutTags(t *testing.T) {
	t.Parallel()
	tr, s := regtree.Seeded(t)
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		got     *storage.Storage
		repo    string
		want    []string
		current map[string]string
	}{
		{name: "tag added", got: st.WithTags([]storage.TagLink{{Repository: "app", Tag: "keep-amd", Digest: s.Amd}}), repo: "app", want: []string{"keep-amd", "v1"}, current: map[string]string{"keep-amd": s.Amd}},
		{name: "digest not in the repository", got: st.WithTags([]storage.TagLink{{Repository: "app", Tag: "keep-old", Digest: s.Old}}), repo: "app", want: []string{"v1"}},
		{name: "tag dropped", got: st.WithoutTags(func(repo, tag string) bool { return repo == "lone" && tag == "v1" }), repo: "lone", want: nil},
		{name: "original unchanged", got: st, repo: "app", want: []string{"v1"}, current: map[string]string{"v1": s.Idx}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.got.Repositories[tc.repo]
			if !slices.Equal(r.TagOrder, tc.want) || len(r.Tags) != len(tc.want) {
				t.Fatalf("tags %v (%d), want %v", r.TagOrder, len(r.Tags), tc.want)
			}
			for tag, d := range tc.current {
				if r.Tags[tag].Current != d || !r.Tags[tag].Index[d] {
					t.Errorf("%s: current %s index %v, want %s", tag, r.Tags[tag].Current, r.Tags[tag].Index, d)
				}
			}
		})
	}
}
