package cleanup

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// harborSrc names the Harbor sources the rows cite.
const harborSrc = "goharbor/harbor src/pkg/retention/"

// harborRules wraps rules in a retention policy for project 1.
func harborRules(rules ...string) string {
	return `{"id":1,"algorithm":"or","scope":{"level":"project","ref":1},"rules":[` + strings.Join(rules, ",") + `]}`
}

// hrule is a retention rule over every repository: template, parameter,
// tag selectors.
func hrule(template string, n int, selectors ...string) string {
	params := `{}`
	if n >= 0 {
		params = `{"` + template + `":` + strconv.Itoa(n) + `}`
	}
	return `{"action":"retain","template":"` + template + `","params":` + params +
		`,"tag_selectors":[` + strings.Join(selectors, ",") + `],"scope_selectors":{"repository":[{"kind":"doublestar","decoration":"repoMatches","pattern":"**"}]}}`
}

// tagSel is a doublestar tag selector; untagged "" leaves extras out.
func tagSel(decoration, pattern, untagged string) string {
	s := `{"kind":"doublestar","decoration":"` + decoration + `","pattern":"` + pattern + `"`
	if untagged != "" {
		s += `,"extras":"{\"untagged\":` + untagged + `}"`
	}
	return s + "}"
}

func mustHarbor(t *testing.T, doc string) Policy {
	t.Helper()
	ps, err := Read("retention.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

func TestHarborRun(t *testing.T) {
	all := tagSel("matches", "**", "true")
	for _, tc := range []struct {
		name, cites string
		rules       []string
		imgs        []img
		deleted     []string
	}{
		{
			name: "latestPushedK keeps the k pushed last", cites: harborSrc + "policy/rule/latestps",
			rules:   []string{hrule("latestPushedK", 2, all)},
			imgs:    []img{{d: "sha256:a", tags: []string{"a"}, pushed: 30}, {d: "sha256:b", tags: []string{"b"}, pushed: 20}, {d: "sha256:c", tags: []string{"c"}, pushed: 10}},
			deleted: []string{"sha256:a"},
		},
		{
			name: "latestPulledN keeps the n pulled last; never pulled comes last", cites: harborSrc + "policy/rule/latestpl",
			rules:   []string{hrule("latestPulledN", 1, all)},
			imgs:    []img{{d: "sha256:a", tags: []string{"a"}, pushed: 1}, {d: "sha256:b", tags: []string{"b"}, pushed: 50, pulled: 20}},
			deleted: []string{"sha256:a"},
		},
		{
			name: "latestActiveK orders by the later of push and pull", cites: harborSrc + "policy/rule/latestk",
			rules:   []string{hrule("latestActiveK", 1, all)},
			imgs:    []img{{d: "sha256:a", tags: []string{"a"}, pushed: 10}, {d: "sha256:b", tags: []string{"b"}, pushed: 50, pulled: 2}},
			deleted: []string{"sha256:a"},
		},
		{
			name: "nDaysSinceLastPush keeps what was pushed within n days", cites: harborSrc + "policy/rule/daysps",
			rules:   []string{hrule("nDaysSinceLastPush", 7, all)},
			imgs:    []img{{d: "sha256:a", tags: []string{"a"}, pushed: 8}, {d: "sha256:b", tags: []string{"b"}, pushed: 6}},
			deleted: []string{"sha256:a"},
		},
		{
			name: "nDaysSinceLastPull deletes an artifact whose pull time is empty", cites: harborSrc + "policy/rule/dayspl; goharbor/harbor#13152, #20844 (proxy-cache artifacts never get a pull time)",
			rules: []string{hrule("nDaysSinceLastPull", 7, all)},
			imgs: []img{{d: "sha256:proxied", tags: []string{"latest"}, pushed: 1}, {d: "sha256:hot", tags: []string{"v1"}, pushed: 100, pulled: 2},
				{d: "sha256:cold", tags: []string{"v0"}, pushed: 100, pulled: 8}},
			deleted: []string{"sha256:cold", "sha256:proxied"},
		},
		{
			name: "lastXDays keeps what was pushed in the last x days", cites: harborSrc + "policy/rule/lastx",
			rules:   []string{hrule("lastXDays", 3, all)},
			imgs:    []img{{d: "sha256:a", tags: []string{"a"}, pushed: 4}, {d: "sha256:b", tags: []string{"b"}, pushed: 2}},
			deleted: []string{"sha256:a"},
		},
		{
			name: "an in-use tag no rule matches goes with its artifact", cites: "issue 26: in-use tags not matched by a retain rule go; " + harborSrc + "policy/action/performer",
			rules:   []string{hrule("always", -1, tagSel("matches", "release-*", "false"))},
			imgs:    []img{{d: "sha256:rel", tags: []string{"release-1"}, pushed: 9}, {d: "sha256:prod", tags: []string{"prod"}, pushed: 9}},
			deleted: []string{"sha256:prod"},
		},
		{
			name: "rules are OR'd: what any rule retains stays", cites: harborSrc + "policy/alg/or/processor.go",
			rules: []string{hrule("latestPushedK", 1, tagSel("matches", "v*", "false")), hrule("always", -1, tagSel("matches", "main", "false"))},
			imgs: []img{{d: "sha256:v1", tags: []string{"v1"}, pushed: 30}, {d: "sha256:v2", tags: []string{"v2"}, pushed: 20},
				{d: "sha256:main", tags: []string{"main"}, pushed: 90}},
			deleted: []string{"sha256:v1"},
		},
		{
			name: "matches selects an artifact if any of its tags matches, and keeps all its tags", cites: "src/lib/selector/selectors/doublestar tagSelectMatch; performer deletes whole artifacts",
			rules:   []string{hrule("always", -1, tagSel("matches", "release-*", "false"))},
			imgs:    []img{{d: "sha256:both", tags: []string{"dev-1", "release-1"}, pushed: 9}, {d: "sha256:dev", tags: []string{"dev-2"}, pushed: 9}},
			deleted: []string{"sha256:dev"},
		},
		{
			name: "excludes selects an artifact if any of its tags does not match", cites: "src/lib/selector/selectors/doublestar tagSelectExclude",
			rules:   []string{hrule("always", -1, tagSel("excludes", "dev-*", "false"))},
			imgs:    []img{{d: "sha256:dev", tags: []string{"dev-1"}, pushed: 9}, {d: "sha256:mixed", tags: []string{"dev-2", "v1"}, pushed: 9}},
			deleted: []string{"sha256:dev"},
		},
		{
			name: "untagged artifacts go unless a selector keeps untagged", cites: "src/lib/selector/selectors/doublestar New: the untagged extra",
			rules:   []string{hrule("always", -1, tagSel("matches", "**", "false"))},
			imgs:    []img{{d: "sha256:t", tags: []string{"v1"}, pushed: 9}, {d: "sha256:u", pushed: 9}},
			deleted: []string{"sha256:u"},
		},
		{
			name: "excludes with untagged true does not select untagged artifacts: they go", cites: "src/lib/selector/selectors/doublestar tagSelectExclude returns !untagged",
			rules:   []string{hrule("always", -1, tagSel("excludes", "dev-*", "true"))},
			imgs:    []img{{d: "sha256:t", tags: []string{"v1"}, pushed: 9}, {d: "sha256:u", pushed: 9}},
			deleted: []string{"sha256:u"},
		},
		{
			name: "excludes without extras selects untagged artifacts: they stay", cites: "src/lib/selector/selectors/doublestar New: untagged defaults to false for excludes; tagSelectExclude returns !untagged",
			rules:   []string{hrule("always", -1, tagSel("excludes", "dev-*", ""))},
			imgs:    []img{{d: "sha256:t", tags: []string{"v1"}, pushed: 9}, {d: "sha256:u", pushed: 9}},
			deleted: nil,
		},
		{
			name: "a matches selector without extras keeps untagged (Harbor's upgrade default)", cites: "src/lib/selector/selectors/doublestar New: untagged defaults to true for matches",
			rules:   []string{hrule("always", -1, tagSel("matches", "**", ""))},
			imgs:    []img{{d: "sha256:t", tags: []string{"v1"}, pushed: 9}, {d: "sha256:u", pushed: 9}},
			deleted: nil,
		},
		{
			name: "a kept index's children are safe; a deleted index takes its own children, not shared ones", cites: "issue 26: children are safe; " + harborSrc + "dep/client.go lists top-level artifacts",
			rules: []string{hrule("latestPushedK", 1, all)},
			imgs: []img{{d: "sha256:new", tags: []string{"v2"}, children: []string{"sha256:shared", "sha256:new-arm"}, pushed: 1},
				{d: "sha256:old", tags: []string{"v1"}, children: []string{"sha256:shared", "sha256:old-arm"}, pushed: 30},
				{d: "sha256:shared", pushed: 30}, {d: "sha256:new-arm", pushed: 1}, {d: "sha256:old-arm", pushed: 30}},
			deleted: []string{"sha256:old", "sha256:old-arm"},
		},
		{
			name: "accessories follow their subject", cites: "assumption (Harbor 2.8+ keeps cosign signatures and referrers as accessories of their subject)",
			rules: []string{hrule("latestPushedK", 1, all)},
			imgs: []img{{d: "sha256:new", tags: []string{"v2"}, pushed: 1}, {d: "sha256:sig-new", tags: []string{"sha256-new.sig"}, pushed: 1},
				{d: "sha256:old", tags: []string{"v1"}, pushed: 30}, {d: "sha256:sig-old", tags: []string{"sha256-old.sig"}, pushed: 30},
				{d: "sha256:sbom-old", subject: "sha256:old", pushed: 30}},
			deleted: []string{"sha256:old", "sha256:sbom-old", "sha256:sig-old"},
		},
		{
			name: "a rule without tag selectors retains nothing", cites: harborSrc + "policy/alg/or/processor.go keeps only evaluators with selectors",
			rules:   []string{hrule("always", -1), hrule("latestPushedK", 1, all)},
			imgs:    []img{{d: "sha256:a", tags: []string{"a"}, pushed: 2}, {d: "sha256:b", tags: []string{"b"}, pushed: 1}},
			deleted: []string{"sha256:a"},
		},
		{
			name: "a disabled rule is skipped", cites: harborSrc + "launcher.go skips disabled rules",
			rules:   []string{strings.Replace(hrule("always", -1, all), `"action"`, `"disabled":true,"action"`, 1), hrule("latestPushedK", 1, all)},
			imgs:    []img{{d: "sha256:a", tags: []string{"a"}, pushed: 2}, {d: "sha256:b", tags: []string{"b"}, pushed: 1}},
			deleted: []string{"sha256:a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustHarbor(t, harborRules(tc.rules...))
			deleted, archived, untagged := planDigests(p.Run(vendorRepo("proj/app", tc.imgs...), vendorAt))
			if !slices.Equal(deleted, tc.deleted) || len(archived) != 0 || len(untagged) != 0 {
				t.Errorf("deleted %v archived %v untagged %v, want deleted %v (%s)", deleted, archived, untagged, tc.deleted, tc.cites)
			}
		})
	}
}

// TestHarborPlanWords: the rule text names the empty pull time, the time
// rule gives when it became eligible, the keep advice is a retain rule.
func TestHarborPlanWords(t *testing.T) {
	p := mustHarbor(t, harborRules(hrule("nDaysSinceLastPull", 7, tagSel("matches", "**", "true"))))
	plan := p.Run(vendorRepo("proj/team/app",
		img{d: "sha256:never", tags: []string{"latest"}, pushed: 1},
		img{d: "sha256:cold", tags: []string{"v0"}, pushed: 100, pulled: 8}), vendorAt)
	if len(plan.Manifests) != 2 || len(plan.Tags) != 0 {
		t.Fatalf("plan %+v, want two artifact deletions", plan)
	}
	for _, m := range plan.Manifests {
		switch m.Digest {
		case "sha256:never":
			if !strings.Contains(m.Rule.Rule, "pull time is empty") || !m.Eligible.IsZero() {
				t.Errorf("never pulled: rule %q eligible %v", m.Rule.Rule, m.Eligible)
			}
			if !strings.Contains(m.Keep, `matches "latest"`) || !strings.Contains(m.Keep, `"team/app"`) {
				t.Errorf("keep %q: want a retain rule for latest in team/app", m.Keep)
			}
		case "sha256:cold":
			if want := daysAgo(8).Add(7 * 24 * time.Hour); !m.Eligible.Equal(want) {
				t.Errorf("eligible %v, want pull + 7 days %v", m.Eligible, want)
			}
		}
	}
}

func TestHarborScope(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "harbor", "retention.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustHarbor(t, string(data)).(*harborPolicy)
	for repo, want := range map[string]int{"proj/team/app": 2, "proj/other": 1, "proj/app": 1, "team/app": 1} {
		rules, err := p.rulesFor(repo)
		if err != nil || len(rules) != want {
			t.Errorf("%s: %d rules (%v), want %d (scope patterns match the path without its project)", repo, len(rules), err, want)
		}
	}
	scoped := mustHarbor(t, harborRules(strings.Replace(hrule("always", -1, tagSel("matches", "**", "true")), `"pattern":"**"}]}`, `"pattern":"team/**"}]}`, 1)))
	if scoped.Applies("proj/other") || !scoped.Applies("proj/team/app") {
		t.Errorf("Applies(proj/other)=%v Applies(proj/team/app)=%v", scoped.Applies("proj/other"), scoped.Applies("proj/team/app"))
	}
	if plan := scoped.Run(vendorRepo("proj/other", img{d: "sha256:a", tags: []string{"a"}, pushed: 1}), vendorAt); !plan.Empty() {
		t.Errorf("a repository no rule scopes got a plan: %+v", plan)
	}
	for _, bad := range []string{
		`{"algorithm":"and","rules":[{"template":"always","tag_selectors":[]}]}`,
		harborRules(`{"action":"retain","template":"latestPushedK","tag_selectors":[]}`),
		harborRules(`{"action":"retain","template":"nothingLikeIt","tag_selectors":[]}`),
		harborRules(`{"action":"retain","template":"always","tag_selectors":[{"kind":"label","decoration":"withLabels","pattern":"x"}]}`),
	} {
		if _, err := Read("bad.json", []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestDoublestarMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"**", "a/b/c", true},
		{"**", "v1", true},
		{"team/*", "team/a", true},
		{"team/*", "team/a/b", false},
		{"team/**", "team/a/b", true},
		{"**/app", "x/y/app", true},
		{"**/app", "app", true},
		{"v?", "v1", true},
		{"v?", "v10", false},
		{"{dev,rc}-*", "rc-1", true},
		{"{dev,rc}-*", "ga-1", false},
		{"[!d]*", "dev", false},
		{"", "anything", true},
	} {
		if got, err := doublestarMatch(tc.pattern, tc.name); err != nil || got != tc.want {
			t.Errorf("doublestarMatch(%q, %q) = %v, %v; want %v", tc.pattern, tc.name, got, err, tc.want)
		}
	}
}

func TestReadHarborArtifacts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "harbor", "artifacts.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadState("artifacts.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Service != "harbor" || len(s.Manifests) != 2 || len(s.Tags) != 2 {
		t.Fatalf("service %q, %d manifests, %d tags", s.Service, len(s.Manifests), len(s.Tags))
	}
	idx := s.Manifests[0]
	if idx.ID != "12" || len(idx.Children) != 2 || !idx.Pulled.IsZero() || !slices.Equal(idx.Tags, []string{"v1", "stable"}) ||
		!idx.Pushed.Equal(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)) || idx.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index read as %+v", idx)
	}
	v1, stable := s.Tags[0], s.Tags[1]
	if !v1.Pulled.Equal(time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)) || !stable.Pulled.IsZero() || v1.Digest != idx.Digest {
		t.Errorf("tags read as %+v, %+v", v1, stable)
	}
	if len(s.Manifests[1].Tags) != 0 {
		t.Errorf("untagged artifact read with tags %v", s.Manifests[1].Tags)
	}
	// Merged into a repository, the index's push and pull times feed the
	// model: its latest tag pull makes it recently pulled.
	r := &Repository{Name: "proj/app", Tags: map[string]*Tag{}, Manifests: map[string]*Manifest{}}
	s.Merge(r)
	cands := harborCandidates(r)
	if len(cands) != 2 || !cands[0].pulled.Equal(v1.Pulled) && !cands[1].pulled.Equal(v1.Pulled) {
		t.Errorf("candidates %+v: want the index pulled when its tag v1 was", cands)
	}
}

// TestHarborFromExports reads the retention policy and the artifacts
// export, merges them into a repository, and runs the policy on two days:
// the untagged never-pulled artifact goes at once; the index, pulled by
// its tag v1 on 20 November, stays until the 7-day pull rule lets it go,
// and takes its children with it.
func TestHarborFromExports(t *testing.T) {
	pdata, err := os.ReadFile(filepath.Join("testdata", "harbor", "retention.json"))
	if err != nil {
		t.Fatal(err)
	}
	adata, err := os.ReadFile(filepath.Join("testdata", "harbor", "artifacts.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := mustHarbor(t, string(pdata))
	s, err := ReadState("artifacts.json", adata)
	if err != nil {
		t.Fatal(err)
	}
	const idx, untagged = "sha256:1111111111111111111111111111111111111111111111111111111111111111", "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	const amd, arm = "sha256:aaaa111111111111111111111111111111111111111111111111111111111111", "sha256:bbbb111111111111111111111111111111111111111111111111111111111111"
	for _, tc := range []struct {
		at   time.Time
		want []string
	}{
		{time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), []string{untagged}},
		{time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), []string{idx, untagged, amd, arm}},
	} {
		// The walk sees the children; the export lists top-level artifacts.
		r := vendorRepo("proj/app", img{d: amd}, img{d: arm})
		s.Merge(r)
		got, _, _ := planDigests(p.Run(r, tc.at))
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("at %s: deleted %v, want %v", tc.at.Format(time.DateOnly), got, want)
		}
	}
}

// TestReadHarborBadPattern: a pattern Harbor's doublestar cannot match
// with, or one whose braces stand for more patterns than fit in memory, is
// refused when the policy is read, naming it (before: "app[" switched the
// policy off, "v{1" deleted everything, 30 {a,b} groups ran out of memory).
func TestReadHarborBadPattern(t *testing.T) {
	repoSel := func(p string) string {
		return `{"action":"retain","template":"always","params":{},"tag_selectors":[` + tagSel("matches", "**", "true") +
			`],"scope_selectors":{"repository":[{"kind":"doublestar","decoration":"repoMatches","pattern":"` + p + `"}]}}`
	}
	braces := strings.Repeat("{a,b}", 30)
	for _, tc := range []struct {
		name, rule, want string
	}{
		{"an unclosed class in a repository pattern", repoSel("app["), `repository selector: pattern "app[": syntax error in pattern`},
		{"an unclosed brace in a tag pattern", hrule("always", -1, tagSel("matches", "v{1", "")), `tag selector: pattern "v{1": a { is never closed`},
		{"an unclosed class after a brace", hrule("always", -1, tagSel("matches", "{a,b[}", "")), `pattern "{a,b[}"`},
		{"30 {a,b} groups", hrule("always", -1, tagSel("matches", braces, "")), `pattern "` + braces + `": its {a,b} groups stand for more than 1024 patterns`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("retention.json", []byte(harborRules(tc.rule)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestDoublestarBound: matching with a pattern of more alternatives than
// the bound returns the error, not every expansion.
func TestDoublestarBound(t *testing.T) {
	p := strings.Repeat("{a,b}", 30)
	if _, err := doublestarMatch(p, strings.Repeat("a", 30)); err == nil || !strings.Contains(err.Error(), "more than 1024") {
		t.Fatalf("doublestarMatch: %v; want the bound", err)
	}
	if ok, err := doublestarMatch(strings.Repeat("{a,b}", 10), strings.Repeat("b", 10)); err != nil || !ok {
		t.Fatalf("doublestarMatch of 10 groups: %v, %v; want a match", ok, err)
	}
}
