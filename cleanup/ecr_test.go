package cleanup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// vendorAt is the time the vendor models' tables evaluate at.
var vendorAt = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// img is one manifest of a table's repository: its tags, children, and
// times in days before vendorAt (0: unknown).
type img struct {
	d        string
	tags     []string
	children []string
	subject  string
	pushed   int
	pulled   int
	archived bool
}

// daysAgo is vendorAt minus n days; zero for n == 0.
func daysAgo(n int) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return vendorAt.Add(-time.Duration(n) * 24 * time.Hour)
}

// vendorRepo builds a repository named name from imgs; tags get the
// manifest's push and pull times.
func vendorRepo(name string, imgs ...img) *Repository {
	r := &Repository{Name: name, Tags: map[string]*Tag{}, Manifests: map[string]*Manifest{}}
	for _, m := range imgs {
		r.Manifests[m.d] = &Manifest{Digest: m.d, Children: m.children, Subject: m.subject,
			Pushed: daysAgo(m.pushed), Pulled: daysAgo(m.pulled), Archived: m.archived}
		for _, t := range m.tags {
			r.Tags[t] = &Tag{Name: t, Digest: m.d, Pushed: daysAgo(m.pushed), Pulled: daysAgo(m.pulled)}
		}
	}
	return r
}

// planDigests lists what a plan deletes, archives and untags.
func planDigests(p Plan) (deleted, archived, untagged []string) {
	for _, m := range p.Manifests {
		deleted = append(deleted, m.Digest)
	}
	for _, m := range p.Archived {
		archived = append(archived, m.Digest)
	}
	for _, t := range p.Tags {
		untagged = append(untagged, t.Tag)
	}
	slices.Sort(deleted)
	slices.Sort(archived)
	slices.Sort(untagged)
	return deleted, archived, untagged
}

func mustECR(t *testing.T, text string) Policy {
	t.Helper()
	ps, err := Read("policy.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d policies, want 1", len(ps))
	}
	return ps[0]
}

// ecrRules wraps rules in a policy text.
func ecrRules(rules ...string) string {
	return `{"rules":[` + strings.Join(rules, ",") + `]}`
}

func TestECRRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cites is the documented rule or upstream case the row stands for.
		cites    string
		rules    []string
		imgs     []img
		deleted  []string
		archived []string
	}{
		{
			name:  "count keeps the newest n by push time",
			cites: "AWS lifecycle_policy_parameters: imageCountMoreThan; evaluation rules: expiration is ordered by pushed_at_time, older first",
			rules: []string{`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["v"],"countType":"imageCountMoreThan","countNumber":2},"action":{"type":"expire"}}`},
			imgs: []img{{d: "sha256:v1", tags: []string{"v1"}, pushed: 30}, {d: "sha256:v2", tags: []string{"v2"}, pushed: 20},
				{d: "sha256:v3", tags: []string{"v3"}, pushed: 10}, {d: "sha256:main", tags: []string{"main"}, pushed: 90}},
			deleted: []string{"sha256:v1"},
		},
		{
			name:  "age expires what was pushed more than n days ago",
			cites: "AWS lifecycle_policy_parameters: sinceImagePushed, countUnit days",
			rules: []string{`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPatternList":["prod*"],"countType":"sinceImagePushed","countUnit":"days","countNumber":14},"action":{"type":"expire"}}`},
			imgs: []img{{d: "sha256:old", tags: []string{"prod-1"}, pushed: 15}, {d: "sha256:new", tags: []string{"prod-2"}, pushed: 13},
				{d: "sha256:dev", tags: []string{"dev"}, pushed: 100}},
			deleted: []string{"sha256:old"},
		},
		{
			name:  "several prefixes: every prefix must match one of the image's tags",
			cites: "AWS lifecycle_policy_parameters tagPrefixList: if you specify multiple tags, only the images with all specified tags are selected",
			rules: []string{`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["prod","web"],"countType":"sinceImagePushed","countUnit":"days","countNumber":1},"action":{"type":"expire"}}`},
			imgs: []img{{d: "sha256:both", tags: []string{"prod-1", "web-1"}, pushed: 5}, {d: "sha256:prod", tags: []string{"prod-2"}, pushed: 5},
				{d: "sha256:one", tags: []string{"prodweb"}, pushed: 5}},
			deleted: []string{"sha256:both"},
		},
		{
			name:    "a pattern's wildcard matches the whole tag",
			cites:   "AWS lifecycle_policy_parameters tagPatternList: patterns with wildcards (*), prod* selects prod, prod1, prod2",
			rules:   []string{`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPatternList":["*-rc*"],"countType":"sinceImagePushed","countUnit":"days","countNumber":1},"action":{"type":"expire"}}`},
			imgs:    []img{{d: "sha256:rc", tags: []string{"v1-rc1"}, pushed: 5}, {d: "sha256:ga", tags: []string{"v1"}, pushed: 5}},
			deleted: []string{"sha256:rc"},
		},
		{
			name:  "an image a higher-priority rule matches is not expired by a later rule",
			cites: "AWS evaluation rules: an image that matches the tagging requirements of a higher priority rule cannot be expired by a rule with a lower priority",
			rules: []string{
				`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["v"],"countType":"imageCountMoreThan","countNumber":5},"action":{"type":"expire"}}`,
				`{"rulePriority":2,"selection":{"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":7},"action":{"type":"expire"}}`,
			},
			imgs:    []img{{d: "sha256:v1", tags: []string{"v1"}, pushed: 400}, {d: "sha256:x", pushed: 30}, {d: "sha256:dev", tags: []string{"dev"}, pushed: 30}},
			deleted: []string{"sha256:dev", "sha256:x"},
		},
		{
			name:  "a later count rule still counts the images an earlier rule claimed",
			cites: "AWS evaluation rules: rules can never mark images marked by higher priority rules, but can still identify them as if they haven't been expired",
			rules: []string{
				`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["release"],"countType":"imageCountMoreThan","countNumber":10},"action":{"type":"expire"}}`,
				`{"rulePriority":2,"selection":{"tagStatus":"any","countType":"imageCountMoreThan","countNumber":2},"action":{"type":"expire"}}`,
			},
			imgs: []img{{d: "sha256:r1", tags: []string{"release-1"}, pushed: 1}, {d: "sha256:r2", tags: []string{"release-2"}, pushed: 2},
				{d: "sha256:x1", tags: []string{"x-1"}, pushed: 3}, {d: "sha256:x2", tags: []string{"x-2"}, pushed: 4}},
			deleted: []string{"sha256:x1", "sha256:x2"},
		},
		{
			name:    "cosign's signature tag is a tag like any other and can push the signed image out of a count",
			cites:   "issue 26: cosign's sha256-….sig tags are ordinary tags to every rule",
			rules:   []string{`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPatternList":["*"],"countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`},
			imgs:    []img{{d: "sha256:app", tags: []string{"v1"}, pushed: 3}, {d: "sha256:sig", tags: []string{"sha256-app.sig"}, pushed: 2}},
			deleted: []string{"sha256:app"},
		},
		{
			name:  "pull time archives what nobody pulled, falling back to push time for an image never pulled",
			cites: "AWS lifecycle_policy_examples: countType sinceImagePulled, action transition targetStorageClass archive; archive-image: an archived image's pull fails with 404",
			rules: []string{`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPatternList":["*"],"countType":"sinceImagePulled","countUnit":"days","countNumber":30},"action":{"type":"transition","targetStorageClass":"archive"}}`},
			imgs: []img{{d: "sha256:cold", tags: []string{"v1"}, pushed: 200, pulled: 40}, {d: "sha256:never", tags: []string{"v2"}, pushed: 31},
				{d: "sha256:hot", tags: []string{"v3"}, pushed: 200, pulled: 1}, {d: "sha256:fresh", tags: []string{"v4"}, pushed: 2}},
			archived: []string{"sha256:cold", "sha256:never"},
		},
		{
			name:  "standard-class rules leave archived images alone; archive-class rules select only them",
			cites: "AWS lifecycle_policy_examples: selection storageClass standard|archive",
			rules: []string{
				`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPatternList":["*"],"storageClass":"archive","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`,
				`{"rulePriority":2,"selection":{"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":1000},"action":{"type":"expire"}}`,
			},
			imgs: []img{{d: "sha256:a1", tags: []string{"v1"}, pushed: 400, archived: true}, {d: "sha256:a2", tags: []string{"v2"}, pushed: 300, archived: true},
				{d: "sha256:s", tags: []string{"v3"}, pushed: 400}},
			deleted: []string{"sha256:a1"},
		},
		{
			name:  "an index's children are not expired while the index stays",
			cites: "issue 26: ECR lifecycle policies protect an index's children",
			rules: []string{`{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"sinceImagePushed","countUnit":"days","countNumber":1},"action":{"type":"expire"}}`},
			imgs: []img{{d: "sha256:idx", tags: []string{"v1"}, children: []string{"sha256:amd", "sha256:arm"}, pushed: 50},
				{d: "sha256:amd", pushed: 50}, {d: "sha256:arm", pushed: 50}, {d: "sha256:orphan", pushed: 50}},
			deleted: []string{"sha256:orphan"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustECR(t, ecrRules(tc.rules...))
			deleted, archived, untagged := planDigests(p.Run(vendorRepo("org/app", tc.imgs...), vendorAt))
			if !slices.Equal(deleted, tc.deleted) || !slices.Equal(archived, tc.archived) || len(untagged) != 0 {
				t.Errorf("deleted %v archived %v untagged %v, want deleted %v archived %v (%s)", deleted, archived, untagged, tc.deleted, tc.archived, tc.cites)
			}
		})
	}
}

// TestECRIndexThenChildren: the issue's --runs example. Run 1 expires the
// index (its tag is old) and leaves its children; run 2 finds them
// untagged and orphaned, and the untagged rule expires them.
func TestECRIndexThenChildren(t *testing.T) {
	p := mustECR(t, ecrRules(
		`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["v"],"countType":"sinceImagePushed","countUnit":"days","countNumber":7},"action":{"type":"expire"}}`,
		`{"rulePriority":2,"selection":{"tagStatus":"untagged","countType":"sinceImagePushed","countUnit":"days","countNumber":1},"action":{"type":"expire"}}`,
	))
	r := vendorRepo("org/app",
		img{d: "sha256:idx", tags: []string{"v1"}, children: []string{"sha256:amd", "sha256:arm"}, pushed: 10},
		img{d: "sha256:amd", pushed: 10}, img{d: "sha256:arm", pushed: 10},
		img{d: "sha256:new", tags: []string{"v2"}, children: []string{"sha256:amd2"}, pushed: 2}, img{d: "sha256:amd2", pushed: 2})
	steps, after, err := Runs(p, r, vendorAt, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("%d runs removed something, want 2", len(steps))
	}
	for i, want := range [][]string{{"sha256:idx"}, {"sha256:amd", "sha256:arm"}} {
		got, _, _ := planDigests(steps[i].Plan)
		if !slices.Equal(got, want) {
			t.Errorf("run %d deleted %v, want %v", i+1, got, want)
		}
	}
	if got := after.SortedManifests(); !slices.Equal(got, []string{"sha256:amd2", "sha256:new"}) {
		t.Errorf("left %v, want the kept index and its child", got)
	}
	m := steps[0].Plan.Manifests[0]
	if want := daysAgo(10).Add(7 * 24 * time.Hour); !m.Eligible.Equal(want) {
		t.Errorf("index eligible %v, want push + 7 days %v", m.Eligible, want)
	}
	if !strings.Contains(m.Rule.Rule, "rulePriority 1") || !strings.Contains(m.Keep, `tagPatternList ["v1"]`) {
		t.Errorf("rule %q keep %q: want the rule named and a concrete keep rule for v1", m.Rule.Rule, m.Keep)
	}
}

func TestReadECRPolicy(t *testing.T) {
	wrapped, err := os.ReadFile(filepath.Join("testdata", "ecr", "get-lifecycle-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustECR(t, string(wrapped))
	if !p.Applies("org/app") || p.Applies("org/other") || !strings.Contains(p.Name(), "org/app") {
		t.Errorf("get-lifecycle-policy output: Applies(org/app)=%v Applies(org/other)=%v Name %q", p.Applies("org/app"), p.Applies("org/other"), p.Name())
	}
	text, err := os.ReadFile(filepath.Join("testdata", "ecr", "policy-text.json"))
	if err != nil {
		t.Fatal(err)
	}
	bare := mustECR(t, string(text))
	if !bare.Applies("anything/at/all") || !strings.Contains(bare.Name(), "every repository") {
		t.Errorf("bare text: Applies=%v Name %q, want every repository", bare.Applies("anything/at/all"), bare.Name())
	}

	for _, tc := range []struct{ name, text, want string }{
		{"duplicate priority", ecrRules(
			`{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`,
			`{"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["v"],"countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`), "not unique"},
		{"any not last", ecrRules(
			`{"rulePriority":1,"selection":{"tagStatus":"any","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`,
			`{"rulePriority":2,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`), "highest rulePriority"},
		{"tagged without a list", ecrRules(`{"rulePriority":1,"selection":{"tagStatus":"tagged","countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`), "tagPrefixList or tagPatternList"},
		{"untagged with a list", ecrRules(`{"rulePriority":1,"selection":{"tagStatus":"untagged","tagPrefixList":["v"],"countType":"imageCountMoreThan","countNumber":1},"action":{"type":"expire"}}`), "takes no"},
		{"age without days", ecrRules(`{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"sinceImagePushed","countNumber":1},"action":{"type":"expire"}}`), "countUnit days"},
		{"transition elsewhere", ecrRules(`{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"sinceImagePulled","countUnit":"days","countNumber":1},"action":{"type":"transition","targetStorageClass":"glacier"}}`), "targetStorageClass archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("policy.json", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestReadECRImages: describe-images prints times as ISO 8601 or as epoch
// seconds depending on the CLI's cli_timestamp_format; both exports of
// the same images read the same.
func TestReadECRImages(t *testing.T) {
	var states []*State
	for _, f := range []string{"describe-images-iso.json", "describe-images-epoch.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "ecr", f))
		if err != nil {
			t.Fatal(err)
		}
		s, err := ReadState(f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		states = append(states, s)
	}
	for _, s := range states {
		if s.Service != "ecr" || s.Repository != "org/app" || len(s.Manifests) != 2 {
			t.Fatalf("%s: service %q repository %q %d manifests", s.File, s.Service, s.Repository, len(s.Manifests))
		}
		idx, old := s.Manifests[0], s.Manifests[1]
		if want := time.Date(2026, 11, 1, 10, 0, 0, 5e8, time.UTC); !idx.Pushed.Equal(want) {
			t.Errorf("%s: pushed %v, want %v", s.File, idx.Pushed, want)
		}
		if want := time.Date(2026, 11, 20, 8, 30, 0, 0, time.UTC); !idx.Pulled.Equal(want) {
			t.Errorf("%s: pulled %v, want %v", s.File, idx.Pulled, want)
		}
		if !slices.Equal(idx.Tags, []string{"v1", "latest"}) || idx.Archived || idx.MediaType != "application/vnd.oci.image.index.v1+json" {
			t.Errorf("%s: index read as %+v", s.File, idx)
		}
		if !old.Archived || !old.Pulled.IsZero() || !old.Updated.Equal(time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("%s: archived image read as %+v", s.File, old)
		}
	}
	if _, err := ReadState("bad.json", []byte(`{"imageDetails":[{"imageDigest":"sha256:1","imagePushedAt":"yesterday"}]}`)); err == nil {
		t.Error("a time in neither form was accepted")
	}
	if _, err := ReadState("two.json", []byte(`{"imageDetails":[{"repositoryName":"a","imageDigest":"sha256:1"},{"repositoryName":"b","imageDigest":"sha256:2"}]}`)); err == nil {
		t.Error("two repositories in one export were accepted")
	}
}

// TestECRFromExports reads the policy as get-lifecycle-policy prints it
// and the times as describe-images prints them, merges them into the
// repository a walk sees, and runs the policy until it stops: the old
// release index goes in run 1 with an orphan, its children in run 2.
func TestECRFromExports(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "ecr", "get-lifecycle-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustECR(t, string(text))
	images := `{"imageDetails":[
	 {"repositoryName":"org/app","imageDigest":"sha256:idx","imageTags":["v1"],"imagePushedAt":"2026-11-01T00:00:00+00:00"},
	 {"repositoryName":"org/app","imageDigest":"sha256:amd","imagePushedAt":1793491200},
	 {"repositoryName":"org/app","imageDigest":"sha256:arm","imagePushedAt":1793491200},
	 {"repositoryName":"org/app","imageDigest":"sha256:v2","imageTags":["v2"],"imagePushedAt":"2026-11-10T00:00:00+00:00"},
	 {"repositoryName":"org/app","imageDigest":"sha256:v3","imageTags":["v3"],"imagePushedAt":"2026-11-20T00:00:00+00:00"},
	 {"repositoryName":"org/app","imageDigest":"sha256:orphan","imagePushedAt":"2026-10-01T00:00:00+00:00"}]}`
	s, err := ReadState("images.json", []byte(images))
	if err != nil {
		t.Fatal(err)
	}
	// The walk knows the index's children; the export knows the times.
	r := vendorRepo("org/app", img{d: "sha256:idx", tags: []string{"v1"}, children: []string{"sha256:amd", "sha256:arm"}},
		img{d: "sha256:amd"}, img{d: "sha256:arm"}, img{d: "sha256:v2", tags: []string{"v2"}}, img{d: "sha256:v3", tags: []string{"v3"}})
	s.Merge(r)
	if !p.Applies(s.Repository) {
		t.Fatalf("policy of %s does not apply to the export's repository %q", p.Name(), s.Repository)
	}
	steps, _, err := Runs(p, r, vendorAt, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, st := range steps {
		d, _, _ := planDigests(st.Plan)
		got = append(got, d)
	}
	want := [][]string{{"sha256:idx", "sha256:orphan"}, {"sha256:amd", "sha256:arm"}}
	if len(got) != len(want) || !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Errorf("runs deleted %v, want %v", got, want)
	}
}
