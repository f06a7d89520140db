package cleanup

// GitLab cleanup policies (container_expiration_policy). The model follows
// GitLab's own service, read 2026-12-03 in gitlabhq/gitlabhq:
// app/services/projects/container_repository/cleanup_tags_base_service.rb,
// gitlab/cleanup_tags_service.rb and third_party/cleanup_tags_service.rb,
// app/services/container_expiration_policies/cleanup_service.rb and
// app/models/container_expiration_policy.rb. Per repository of the project:
//
//  1. every tag but `latest` (keep_latest, true for policies);
//  2. those whose name matches name_regex_delete (or, when that is unset,
//     name_regex) and does not match name_regex_keep (keep wins);
//  3. ordered by push time, newest first (a tag with no time counts as
//     now), the first keep_n are kept;
//  4. of the rest, those pushed before now minus older_than are deleted (a
//     tag with no time is kept).
//
// GitLab anchors each regex by pasting it between \A and \z without a
// group, so an alternation is anchored on its outer branches only:
// name_regex_keep "v1|main" keeps "v1-rc" and "not-main". The model
// builds the same expression (Go's regexp is RE2, as GitLab's
// UntrustedRegexp). An unset name_regex_keep keeps nothing; a name_regex
// (and name_regex_delete) that is explicitly null or empty matches no tag,
// as GitLab's `\A\z` does; a policy file without the key at all gets
// GitLab's default ".*", which deletes cosign's sha256-<hex>.sig tags too.
//
// The cleanup deletes tags, never manifests (a tag's manifest stays until
// the registry's garbage collector removes it): each deletion is a
// TagDeletion. Not modelled: the per-run time limit and GitLab.com's tag
// list truncation (a run may stop early or see a sample of the tags), the
// 1000-tag pages of the GitLab registry (keep_n applies per page there),
// cadence and next_run_at (a run is when --at says), and the arbitrary
// order of tags with equal push times (gitlab-org/gitlab#351538: the model
// orders them by name).

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// gitlabDefaultNameRegex is name_regex of a new project's default policy.
const gitlabDefaultNameRegex = ".*"

// gitlabPolicy is one project's container_expiration_policy.
type gitlabPolicy struct {
	file string
	// project is path_with_namespace; empty for the policy alone.
	project   string
	enabled   bool
	keepN     *int
	olderThan time.Duration
	// the policy's own words, for rule texts.
	keepNText, olderThanText, deleteText, keepText string
	nextRunAt                                      string
	del, keep                                      *regexp.Regexp
}

// gitlabPolicyDoc is the policy as the Projects API serves it; pointers
// tell an absent key from null.
type gitlabPolicyDoc struct {
	Cadence         string          `json:"cadence"`
	Enabled         bool            `json:"enabled"`
	KeepN           json.RawMessage `json:"keep_n"`
	OlderThan       *string         `json:"older_than"`
	NameRegex       json.RawMessage `json:"name_regex"`
	NameRegexDelete json.RawMessage `json:"name_regex_delete"`
	NameRegexKeep   *string         `json:"name_regex_keep"`
	NextRunAt       string          `json:"next_run_at"`
}

// readGitLabPolicy reads the Projects API's project JSON (with
// container_expiration_policy and path_with_namespace) or the policy
// alone.
func readGitLabPolicy(file string, data []byte) ([]Policy, error) {
	var project struct {
		PathWithNamespace string           `json:"path_with_namespace"`
		Policy            *gitlabPolicyDoc `json:"container_expiration_policy"`
	}
	if err := yaml.Unmarshal(data, &project); err != nil {
		return nil, fmt.Errorf("reading the project: %w", err)
	}
	doc := project.Policy
	if doc == nil {
		doc = &gitlabPolicyDoc{}
		if err := yaml.Unmarshal(data, doc); err != nil {
			return nil, fmt.Errorf("reading the policy: %w", err)
		}
	}
	p, err := newGitLabPolicy(file, project.PathWithNamespace, doc)
	if err != nil {
		return nil, err
	}
	return []Policy{p}, nil
}

func newGitLabPolicy(file, project string, doc *gitlabPolicyDoc) (*gitlabPolicy, error) {
	p := &gitlabPolicy{file: file, project: project, enabled: doc.Enabled, nextRunAt: doc.NextRunAt}
	if err := p.readKeepN(doc.KeepN); err != nil {
		return nil, err
	}
	if doc.OlderThan != nil && *doc.OlderThan != "" {
		d, err := gitlabDuration(*doc.OlderThan)
		if err != nil {
			return nil, fmt.Errorf("older_than: %w", err)
		}
		p.olderThan, p.olderThanText = d, *doc.OlderThan
	}
	del, err := gitlabDeleteRegex(doc)
	if err != nil {
		return nil, err
	}
	p.deleteText = del
	if doc.NameRegexKeep != nil {
		p.keepText = *doc.NameRegexKeep
	}
	if p.del, err = gitlabAnchored(p.deleteText); err != nil {
		return nil, fmt.Errorf("name_regex: %w", err)
	}
	if p.keep, err = gitlabAnchored(p.keepText); err != nil {
		return nil, fmt.Errorf("name_regex_keep: %w", err)
	}
	return p, nil
}

// readKeepN reads keep_n: a number, a numeric string, or null.
func (p *gitlabPolicy) readKeepN(raw json.RawMessage) error {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	if s == "" || s == "null" {
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("keep_n %s is not a count", raw)
	}
	p.keepN, p.keepNText = &n, s
	return nil
}

// gitlabDeleteRegex is name_regex_delete, or else name_regex; GitLab's
// default when the file has neither key; "" when set to null or empty.
func gitlabDeleteRegex(doc *gitlabPolicyDoc) (string, error) {
	for _, raw := range []json.RawMessage{doc.NameRegexDelete, doc.NameRegex} {
		if len(raw) == 0 {
			continue
		}
		var s *string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("name_regex: %w", err)
		}
		if s != nil && *s != "" {
			return *s, nil
		}
	}
	if len(doc.NameRegexDelete) == 0 && len(doc.NameRegex) == 0 {
		return gitlabDefaultNameRegex, nil
	}
	return "", nil
}

// gitlabAnchored anchors re as GitLab does: \A, the text, \z, no group.
func gitlabAnchored(re string) (*regexp.Regexp, error) {
	return regexp.Compile(`\A` + re + `\z`)
}

// gitlabDurationRE is the part of ChronicDuration's language policies use:
// GitLab offers 7d, 14d, 30d and 90d; the API takes phrases like "1 day".
var gitlabDurationRE = regexp.MustCompile(`^\s*(\d+)\s*(d|days?|w|weeks?|h|hours?)\s*$`)

func gitlabDuration(s string) (time.Duration, error) {
	m := gitlabDurationRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a duration regcheck reads (7d, 14d, 30d, 90d, \"2 weeks\")", s)
	}
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour, 'h': time.Hour}[m[2][0]]
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n > int64(math.MaxInt64/unit) {
		return 0, fmt.Errorf("%q is out of range (at most %d days, about 292 years)", s, maxDays)
	}
	return time.Duration(n) * unit, nil
}

// Name says which cleanup this is and where it applies.
func (p *gitlabPolicy) Name() string {
	where := "every repository (the policy alone names no project)"
	if p.project != "" {
		where = "project " + p.project
	}
	state := "enabled"
	if !p.enabled {
		state = "disabled"
	}
	name := fmt.Sprintf("GitLab cleanup policy of %s (%s)", where, state)
	if p.nextRunAt != "" {
		name += ", next run " + p.nextRunAt
	}
	return name
}

// Source is the file the policy was read from.
func (p *gitlabPolicy) Source() string { return p.file }

// Applies says whether the repository is the project's: its path or below
// it. GitLab's registry paths are the project path in lower case.
func (p *gitlabPolicy) Applies(repository string) bool {
	if p.project == "" {
		return true
	}
	proj, repo := strings.ToLower(p.project), strings.ToLower(repository)
	return repo == proj || strings.HasPrefix(repo, proj+"/")
}

// Run is one cleanup of r at time at: the tags it deletes.
func (p *gitlabPolicy) Run(r *Repository, at time.Time) Plan {
	if !p.enabled {
		return Plan{}
	}
	var cands []*Tag
	for _, n := range r.SortedTags() {
		if n == "latest" || !p.del.MatchString(n) || p.keep.MatchString(n) {
			continue
		}
		cands = append(cands, r.Tags[n])
	}
	pushed := func(t *Tag) time.Time {
		if t.Pushed.IsZero() {
			return at
		}
		return t.Pushed
	}
	sort.SliceStable(cands, func(i, j int) bool { return pushed(cands[i]).After(pushed(cands[j])) })
	if p.keepN != nil {
		cands = cands[min(*p.keepN, len(cands)):]
	}
	var plan Plan
	for _, t := range cands {
		var eligible time.Time
		if p.olderThan > 0 {
			if t.Pushed.IsZero() || !t.Pushed.Before(at.Add(-p.olderThan)) {
				continue
			}
			eligible = t.Pushed.Add(p.olderThan)
		}
		plan.Tags = append(plan.Tags, TagDeletion{Tag: t.Name, Digest: t.Digest, Rule: Rule{
			Rule: p.ruleText(), Eligible: eligible, Keep: p.keepAdvice(t.Name),
		}})
	}
	return plan
}

// ruleText is the policy in its own words.
func (p *gitlabPolicy) ruleText() string {
	parts := []string{fmt.Sprintf("name_regex %q", p.deleteText)}
	if p.keepText != "" {
		parts = append(parts, fmt.Sprintf("name_regex_keep %q", p.keepText))
	}
	if p.keepN != nil {
		parts = append(parts, "keep_n "+p.keepNText)
	}
	if p.olderThanText != "" {
		parts = append(parts, "older_than "+p.olderThanText)
	}
	return "container_expiration_policy: " + strings.Join(parts, ", ")
}

// keepAdvice says how to keep tag: add it to name_regex_keep. What is
// there is rewritten so it keeps what it kept under GitLab's anchors
// (topLevelBranches), and the tag is matched whole.
func (p *gitlabPolicy) keepAdvice(tag string) string {
	q := regexp.QuoteMeta(tag)
	if p.keepText == "" {
		return fmt.Sprintf("add %s to name_regex_keep: set it to %q", tag, q)
	}
	branches := topLevelBranches(p.keepText)
	if len(branches) > 1 {
		last := len(branches) - 1
		for i, b := range branches {
			switch i {
			case 0:
				branches[i] = "(?:" + b + ").*"
			case last:
				branches[i] = ".*(?:" + b + ")"
			default:
				branches[i] = ".*(?:" + b + ").*"
			}
		}
	}
	return fmt.Sprintf("add %s to name_regex_keep: set it to %q", tag, "(?:"+strings.Join(append(branches, q), "|")+")")
}

// topLevelBranches splits re at the '|' outside groups and classes: the
// branches GitLab's \A and \z anchor one end of each.
func topLevelBranches(re string) []string {
	var out []string
	depth, class, start := 0, false, 0
	for i := 0; i < len(re); i++ {
		switch c := re[i]; {
		case c == '\\':
			i++
		case class:
			class = c != ']'
		case c == '[':
			class = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			out = append(out, re[start:i])
			start = i + 1
		}
	}
	return append(out, re[start:])
}
