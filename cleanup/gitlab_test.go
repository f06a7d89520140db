package cleanup

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// gitlabSvc names the GitLab service the rows cite.
const gitlabSvc = "gitlabhq app/services/projects/container_repository/cleanup_tags_base_service.rb"

func mustGitLab(t *testing.T, doc string) *gitlabPolicy {
	t.Helper()
	ps, err := Read("policy.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := ps[0].(*gitlabPolicy)
	if !ok || len(ps) != 1 {
		t.Fatalf("read %T ×%d, want one GitLab policy", ps[0], len(ps))
	}
	return p
}

func TestGitLabRun(t *testing.T) {
	for _, tc := range []struct {
		name, cites, policy string
		imgs                []img
		untagged            []string
	}{
		{
			name: "a disabled policy deletes nothing", cites: "ContainerExpirationPolicy enabled; only active policies run",
			policy:   `{"enabled":false,"keep_n":1,"older_than":"7d","name_regex":".*"}`,
			imgs:     []img{{d: "sha256:a", tags: []string{"a"}, pushed: 100}, {d: "sha256:b", tags: []string{"b"}, pushed: 90}},
			untagged: nil,
		},
		{
			name: "latest is always kept", cites: gitlabSvc + " filter_out_latest! (keep_latest defaults to true)",
			policy:   `{"enabled":true,"older_than":"7d","name_regex":".*"}`,
			imgs:     []img{{d: "sha256:a", tags: []string{"latest", "v1"}, pushed: 100}, {d: "sha256:b", tags: []string{"v2"}, pushed: 90}},
			untagged: []string{"v1", "v2"},
		},
		{
			name: "keep_n keeps the most recently pushed tags", cites: gitlabSvc + " partition_by_keep_n: ordered by push time, newest first",
			policy: `{"enabled":true,"keep_n":2,"name_regex":".*"}`,
			imgs: []img{{d: "sha256:a", tags: []string{"a"}, pushed: 40}, {d: "sha256:b", tags: []string{"b"}, pushed: 10},
				{d: "sha256:c", tags: []string{"c"}, pushed: 30}, {d: "sha256:d", tags: []string{"d"}, pushed: 20}},
			untagged: []string{"a", "c"},
		},
		{
			name: "older_than spares what is newer than the interval", cites: gitlabSvc + " partition_by_older_than",
			policy:   `{"enabled":true,"older_than":"30d","name_regex":".*"}`,
			imgs:     []img{{d: "sha256:a", tags: []string{"old"}, pushed: 31}, {d: "sha256:b", tags: []string{"new"}, pushed: 29}},
			untagged: []string{"old"},
		},
		{
			name: "keep_n and older_than together: only the old ones beyond the n newest", cites: "GitLab docs, how the cleanup policy works (steps 5-7, as quoted in gitlab-org/gitlab#325429)",
			policy: `{"enabled":true,"keep_n":1,"older_than":"7d","name_regex":".*"}`,
			imgs: []img{{d: "sha256:a", tags: []string{"newest"}, pushed: 3}, {d: "sha256:b", tags: []string{"old"}, pushed: 30},
				{d: "sha256:c", tags: []string{"recent"}, pushed: 5}},
			untagged: []string{"old"},
		},
		{
			name: "a tag with no time counts as now: first for keep_n, never older than older_than", cites: gitlabSvc + " order_by_date_desc (pushed_at || now) and partition_by_older_than (timestamp &&)",
			policy: `{"enabled":true,"keep_n":1,"older_than":"7d","name_regex":".*"}`,
			imgs: []img{{d: "sha256:a", tags: []string{"untimed"}}, {d: "sha256:b", tags: []string{"old"}, pushed: 30},
				{d: "sha256:c", tags: []string{"older"}, pushed: 40}},
			untagged: []string{"old", "older"},
		},
		{
			name: "name_regex_keep wins over name_regex, and its tags take no keep_n place", cites: gitlabSvc + " filter_by_name! (regex_retain overrides regex_delete) before partition_by_keep_n",
			policy: `{"enabled":true,"keep_n":1,"name_regex":".*","name_regex_keep":"release-.*"}`,
			imgs: []img{{d: "sha256:a", tags: []string{"release-1"}, pushed: 1}, {d: "sha256:b", tags: []string{"feat-1"}, pushed: 2},
				{d: "sha256:c", tags: []string{"feat-2"}, pushed: 3}},
			untagged: []string{"feat-2"},
		},
		{
			name: "regexes match the whole tag", cites: gitlabSvc + ` filter_by_name!: \A<regex>\z`,
			policy:   `{"enabled":true,"name_regex":"v1","name_regex_keep":"main"}`,
			imgs:     []img{{d: "sha256:a", tags: []string{"v1"}, pushed: 5}, {d: "sha256:b", tags: []string{"v10", "xv1"}, pushed: 5}},
			untagged: []string{"v1"},
		},
		{
			name: "GitLab's anchors hold an alternation's outer branches only", cites: gitlabSvc + ` filter_by_name!: "\\A#{name_regex_keep}\\z" without a group`,
			policy: `{"enabled":true,"name_regex":".*","name_regex_keep":"v1|main"}`,
			imgs: []img{{d: "sha256:a", tags: []string{"v1-rc"}, pushed: 5}, {d: "sha256:b", tags: []string{"not-main"}, pushed: 5},
				{d: "sha256:c", tags: []string{"main-2"}, pushed: 5}},
			untagged: []string{"main-2"},
		},
		{
			name: "the default name_regex .* deletes cosign's signature tags", cites: "issue 26: the default name_regex: .* deletes cosign tags too",
			policy: `{"enabled":true,"keep_n":1,"older_than":"7d"}`,
			imgs: []img{{d: "sha256:app", tags: []string{"v1"}, pushed: 30}, {d: "sha256:sig", tags: []string{"sha256-app.sig"}, pushed: 29},
				{d: "sha256:app2", tags: []string{"v2"}, pushed: 1}},
			untagged: []string{"sha256-app.sig", "v1"},
		},
		{
			name: "a null name_regex matches no tag", cites: gitlabSvc + ` filter_by_name!: \A\z when name_regex and name_regex_delete are unset`,
			policy:   `{"enabled":true,"keep_n":1,"name_regex":null}`,
			imgs:     []img{{d: "sha256:a", tags: []string{"a"}, pushed: 30}, {d: "sha256:b", tags: []string{"b"}, pushed: 20}},
			untagged: nil,
		},
		{
			name: "name_regex_delete takes the place of name_regex", cites: gitlabSvc + " filter_by_name!: name_regex_delete || name_regex",
			policy:   `{"enabled":true,"name_regex":".*","name_regex_delete":"feat-.*"}`,
			imgs:     []img{{d: "sha256:a", tags: []string{"feat-1", "v1"}, pushed: 30}},
			untagged: []string{"feat-1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustGitLab(t, tc.policy)
			plan := p.Run(vendorRepo("group/app", tc.imgs...), vendorAt)
			deleted, archived, untagged := planDigests(plan)
			if len(deleted) != 0 || len(archived) != 0 || !slices.Equal(untagged, tc.untagged) {
				t.Errorf("untagged %v deleted %v archived %v, want untagged %v only (%s)", untagged, deleted, archived, tc.untagged, tc.cites)
			}
		})
	}
}

// TestGitLabKeepAdvice: the name_regex_keep the advice gives, applied as
// GitLab applies it, keeps the tag and everything the old one kept.
func TestGitLabKeepAdvice(t *testing.T) {
	tags := []string{"v1-rc", "not-main", "main-2", "a.b", "axb", "v1", "main", "x"}
	for _, keep := range []string{"", "main", "v1|main", "(a|b)|c", `[|]x|y`} {
		p := mustGitLab(t, `{"enabled":true,"name_regex":".*","name_regex_keep":"`+strings.ReplaceAll(keep, `\`, `\\`)+`"}`)
		advice := p.keepAdvice("a.b")
		m := regexp.MustCompile(`set it to "(.*)"$`).FindStringSubmatch(advice)
		if m == nil {
			t.Fatalf("advice %q names no regex", advice)
		}
		newKeep, err := gitlabAnchored(strings.ReplaceAll(m[1], `\\`, `\`))
		if err != nil {
			t.Fatalf("advice %q: %v", advice, err)
		}
		for _, tag := range tags {
			before := p.keep.MatchString(tag)
			after := newKeep.MatchString(tag)
			want := before || tag == "a.b"
			if after != want {
				t.Errorf("keep %q → advice %q: %s kept %v, want %v", keep, m[1], tag, after, want)
			}
		}
	}
}

func TestReadGitLabPolicy(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gitlab", "project.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustGitLab(t, string(data))
	for repo, want := range map[string]bool{"group/app": true, "group/app/api": true, "Group/App/web": true, "group/application": false, "other/app": false} {
		if got := p.Applies(repo); got != want {
			t.Errorf("Applies(%q) = %v, want %v", repo, got, want)
		}
	}
	if !strings.Contains(p.Name(), "Group/App") || *p.keepN != 2 || p.olderThan != 7*24*time.Hour || p.keepText != `v\d+\.\d+\.\d+` {
		t.Errorf("read as %q keep_n %v older_than %v keep %q", p.Name(), *p.keepN, p.olderThan, p.keepText)
	}

	data, err = os.ReadFile(filepath.Join("testdata", "gitlab", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	alone := mustGitLab(t, string(data))
	if !alone.Applies("any/repo") || alone.deleteText != ".*" || alone.olderThan != 14*24*time.Hour {
		t.Errorf("policy alone: Applies=%v name_regex %q older_than %v", alone.Applies("any/repo"), alone.deleteText, alone.olderThan)
	}
	for _, bad := range []string{`{"enabled":true,"older_than":"soon"}`, `{"enabled":true,"keep_n":"many"}`, `{"enabled":true,"name_regex":"(("}`} {
		if _, err := Read("bad.json", []byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestReadGitLabTags(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gitlab", "tags.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadState("tags.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Service != "gitlab" || s.Repository != "group/app/api" || len(s.Tags) != 3 {
		t.Fatalf("service %q repository %q %d tags", s.Service, s.Repository, len(s.Tags))
	}
	v1 := s.Tags[0]
	if v1.Name != "v1.0.0" || v1.Digest != "sha256:1111111111111111111111111111111111111111111111111111111111111111" ||
		!v1.Pushed.Equal(time.Date(2026, 10, 1, 13, 39, 8, 229e6, time.UTC)) {
		t.Errorf("v1.0.0 read as %+v", v1)
	}
	mixed := `[{"name":"a","path":"g/p/x:a","location":"r/g/p/x:a"},{"name":"b","path":"g/p/y:b","location":"r/g/p/y:b"}]`
	if _, err := ReadState("mixed.json", []byte(mixed)); err == nil {
		t.Error("two repositories in one export accepted")
	}
}
