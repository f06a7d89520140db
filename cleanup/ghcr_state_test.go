package cleanup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestReadGHCRVersions(t *testing.T) {
	for _, tc := range []struct {
		file    string
		n       int
		tagged  string
		tags    []string
		created string
	}{
		// One page, as `gh api /orgs/ORG/packages/container/NAME/versions`.
		{"versions.json", 3, "sha256:1111111111111111111111111111111111111111111111111111111111111111", []string{"v1", "latest"}, "2026-05-01T10:00:00Z"},
		// `gh api --paginate`: one array per page, one after another.
		{"versions-paginated.json", 4, "sha256:4444444444444444444444444444444444444444444444444444444444444444", []string{"v0"}, "2026-03-01T10:00:00Z"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "ghcr", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			s, err := ReadState(tc.file, data)
			if err != nil {
				t.Fatal(err)
			}
			if s.Service != "ghcr" || len(s.Manifests) != tc.n {
				t.Fatalf("service %s with %d manifests, want ghcr with %d", s.Service, len(s.Manifests), tc.n)
			}
			r := &Repository{Name: "acme/app", Tags: map[string]*Tag{}, Manifests: map[string]*Manifest{}}
			s.Merge(r)
			m := r.Manifests[tc.tagged]
			if m == nil {
				t.Fatalf("no manifest %s", tc.tagged)
			}
			if m.ID == "" || m.Pushed.Format(time.RFC3339) != tc.created || m.Updated.Before(m.Pushed) {
				t.Errorf("manifest %s: id %q pushed %s updated %s", tc.tagged, m.ID, m.Pushed, m.Updated)
			}
			if got := r.TagsOf(tc.tagged); !slices.Equal(got, slices.Sorted(slices.Values(tc.tags))) {
				t.Errorf("tags %v, want %v", got, tc.tags)
			}
		})
	}
	if _, err := readGHCRVersions("bad.json", []byte(`[{"id":1,"name":"sha256:aa","created_at":"yesterday","metadata":{"package_type":"container","container":{"tags":[]}}}]`)); err == nil {
		t.Error("a version with an unreadable created_at was accepted")
	}
	if _, err := readGHCRVersions("empty.json", []byte(`[]`)); err == nil {
		t.Error("an export with no versions was accepted")
	}
}
