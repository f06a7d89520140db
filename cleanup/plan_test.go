package cleanup

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// indexRepo is a tagged index with two children and a signature tag.
func indexRepo() *Repository {
	return &Repository{
		Name: "org/app",
		Tags: map[string]*Tag{
			"v1":           {Name: "v1", Digest: "sha256:i"},
			"latest":       {Name: "latest", Digest: "sha256:i"},
			"sha256-i.sig": {Name: "sha256-i.sig", Digest: "sha256:s"},
		},
		Manifests: map[string]*Manifest{
			"sha256:i": {Digest: "sha256:i", Children: []string{"sha256:a", "sha256:b"}},
			"sha256:a": {Digest: "sha256:a", Platform: "linux/amd64"},
			"sha256:b": {Digest: "sha256:b", Platform: "linux/arm64"},
			"sha256:s": {Digest: "sha256:s"},
		},
	}
}

// untaggedPolicy deletes every manifest no tag names, as the oldest GHCR
// actions do: children of a kept index included.
type untaggedPolicy struct{}

func (untaggedPolicy) Name() string        { return "test" }
func (untaggedPolicy) Source() string      { return "test" }
func (untaggedPolicy) Applies(string) bool { return true }
func (untaggedPolicy) Run(r *Repository, _ time.Time) Plan {
	var p Plan
	for _, d := range r.SortedManifests() {
		if len(r.TagsOf(d)) == 0 {
			p.Manifests = append(p.Manifests, ManifestDeletion{Digest: d})
		}
	}
	return p
}

func TestApply(t *testing.T) {
	r := indexRepo()
	after := Apply(r, Plan{
		Tags:      []TagDeletion{{Tag: "latest", Digest: "sha256:i"}},
		Manifests: []ManifestDeletion{{Digest: "sha256:s"}},
		Archived:  []ManifestDeletion{{Digest: "sha256:b"}},
	})
	if got := after.SortedTags(); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("tags after = %v, want [v1] (latest removed, the .sig tag gone with its manifest)", got)
	}
	if _, ok := after.Manifests["sha256:s"]; ok {
		t.Error("deleted manifest still there")
	}
	if !after.Manifests["sha256:b"].Archived {
		t.Error("archived manifest not marked")
	}
	if len(r.Tags) != 3 || r.Manifests["sha256:b"].Archived {
		t.Error("Apply changed its input")
	}
}

func TestRuns(t *testing.T) {
	steps, after, err := Runs(untaggedPolicy{}, indexRepo(), time.Time{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 {
		t.Fatalf("%d runs removed something, want 1 (the second finds nothing)", len(steps))
	}
	var got []string
	for _, m := range steps[0].Plan.Manifests {
		got = append(got, m.Digest)
	}
	if !slices.Equal(got, []string{"sha256:a", "sha256:b"}) {
		t.Errorf("run 1 deleted %v, want both children", got)
	}
	if len(after.Manifests) != 2 {
		t.Errorf("%d manifests left, want 2", len(after.Manifests))
	}
	if _, _, err := Runs(untaggedPolicy{}, indexRepo(), time.Time{}, 0); err == nil {
		t.Error("0 runs accepted")
	}
}

func TestReadTellsFormatsApart(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       func(map[string]any) bool
	}{
		{"workflow", "on: {schedule: [{cron: '0 0 * * *'}]}\njobs: {clean: {runs-on: ubuntu-latest}}\n", isWorkflow},
		{"ecr text", `{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}]}`, isECRPolicy},
		{"ecr get-lifecycle-policy", `{"registryId":"1","repositoryName":"app","lifecyclePolicyText":"{}"}`, isECRPolicy},
		{"gitlab project", `{"id":1,"container_expiration_policy":{"keep_n":10}}`, isGitLabPolicy},
		{"harbor", `{"algorithm":"or","rules":[{"template":"latestPushedK","tag_selectors":[]}]}`, isHarborPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("f.yaml", []byte(tc.data))
			if errors.Is(err, ErrUnknownFormat) {
				t.Fatalf("not recognised: %v", err)
			}
		})
	}
	if _, err := Read("x.yaml", []byte("kind: Pod\n")); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("a Pod read as a cleanup: %v", err)
	}
}
