package cleanup

import (
	"fmt"
	"slices"
	"testing"
)

// TestGraphIndexedOnce: asking every manifest's tags, parents and
// referrers reads one index of the repository, built in one pass (before:
// TagsOf scanned every tag for each manifest, and a GHCR export of 20,000
// versions took 29 s); adding a tag builds it again.
func TestGraphIndexedOnce(t *testing.T) {
	const n = 20000
	r := &Repository{Name: "org/app", Tags: map[string]*Tag{}, Manifests: map[string]*Manifest{}}
	idx := &Manifest{Digest: "sha256:idx"}
	r.Manifests[idx.Digest] = idx
	for i := range n {
		d := fmt.Sprintf("sha256:%064d", i)
		r.Manifests[d] = &Manifest{Digest: d, Subject: "sha256:idx"}
		idx.Children = append(idx.Children, d)
		r.Tags[fmt.Sprintf("v%d", i)] = &Tag{Name: fmt.Sprintf("v%d", i), Digest: d}
		r.Tags[fmt.Sprintf("w%d", i)] = &Tag{Name: fmt.Sprintf("w%d", i), Digest: d}
	}
	first := r.index()
	for i := range n {
		d := fmt.Sprintf("sha256:%064d", i)
		if got, want := r.TagsOf(d), []string{fmt.Sprintf("v%d", i), fmt.Sprintf("w%d", i)}; !slices.Equal(got, want) {
			t.Fatalf("TagsOf(%s) = %v, want %v", d, got, want)
		}
		if got := r.Parents(d); !slices.Equal(got, []string{"sha256:idx"}) {
			t.Fatalf("Parents(%s) = %v", d, got)
		}
	}
	if got := len(r.Referrers("sha256:idx")); got != n {
		t.Fatalf("Referrers: %d, want %d", got, n)
	}
	if r.ix != first {
		t.Fatal("the index was built again without a change to the repository")
	}
	r.Tags["latest"] = &Tag{Name: "latest", Digest: "sha256:idx"}
	if got := r.TagsOf("sha256:idx"); !slices.Equal(got, []string{"latest"}) {
		t.Fatalf("after a tag is added, TagsOf = %v", got)
	}
}
