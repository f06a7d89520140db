package cleanup

// Harbor tag retention: reading a retention policy as
// /api/v2.0/retentions/{id} serves it. The evaluation is in harbor_run.go.
//
// Sources read (2026-12-03), goharbor/harbor: src/pkg/retention/launcher.go
// (which repositories a rule scopes), dep/client.go (candidates are
// artifacts with all their tags; push and pull times the latest of the
// artifact's and its tags'), policy/alg/or/processor.go (rules OR'd, a
// rule's selectors AND'd, a rule without tag selectors skipped),
// policy/action/performer/performer.go (every candidate no rule retains is
// deleted, as an artifact), policy/rule/{latestps,latestpl,latestk,daysps,
// dayspl,lastx,always,index}, and src/lib/selector/selectors/doublestar
// (matches/excludes over an artifact's tags, the untagged extra,
// repoMatches/repoExcludes).

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// harborPolicy is one retention policy.
type harborPolicy struct {
	file      string
	ID        int64        `json:"id"`
	Algorithm string       `json:"algorithm"`
	Rules     []harborRule `json:"rules"`
	Scope     struct {
		Level string `json:"level"`
		Ref   int64  `json:"ref"`
	} `json:"scope"`
}

// harborRule is one retention rule.
type harborRule struct {
	index          int
	ID             int64                       `json:"id"`
	Disabled       bool                        `json:"disabled"`
	Action         string                      `json:"action"`
	Template       string                      `json:"template"`
	Params         map[string]json.RawMessage  `json:"params"`
	TagSelectors   []harborSelector            `json:"tag_selectors"`
	ScopeSelectors map[string][]harborSelector `json:"scope_selectors"`
	// n is the template's parameter (a count or a number of days).
	n int
}

// harborSelector is one doublestar selector.
type harborSelector struct {
	Kind       string `json:"kind"`
	Decoration string `json:"decoration"`
	Pattern    string `json:"pattern"`
	Extras     string `json:"extras"`
}

// harborTemplates are the rule templates Harbor registers, with whether
// each takes a parameter (named as the template) and whether it is about
// time.
var harborTemplates = map[string]struct{ param, days bool }{
	"always":             {},
	"latestPushedK":      {param: true},
	"latestPulledN":      {param: true},
	"latestActiveK":      {param: true},
	"nDaysSinceLastPush": {param: true, days: true},
	"nDaysSinceLastPull": {param: true, days: true},
	"lastXDays":          {param: true, days: true},
}

// readHarborPolicy reads a retention policy.
func readHarborPolicy(file string, data []byte) ([]Policy, error) {
	p := &harborPolicy{file: file}
	if err := yaml.Unmarshal(data, p); err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	if p.Algorithm != "or" {
		return nil, fmt.Errorf("algorithm %q: Harbor runs only \"or\"", p.Algorithm)
	}
	if p.Scope.Level != "" && p.Scope.Level != "project" {
		return nil, fmt.Errorf("scope level %q: regcheck models project retention policies only", p.Scope.Level)
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		r.index = i
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
	}
	return []Policy{p}, nil
}

// check refuses a rule Harbor would refuse or regcheck cannot model, and
// reads its parameter.
func (r *harborRule) check() error {
	if r.Action != "" && r.Action != "retain" {
		return fmt.Errorf("action %q: Harbor's only action is retain", r.Action)
	}
	tmpl, ok := harborTemplates[r.Template]
	if !ok {
		return fmt.Errorf("template %q is not one Harbor registers", r.Template)
	}
	if tmpl.param {
		raw, ok := r.Params[r.Template]
		if !ok {
			return fmt.Errorf("missing required parameter %s", r.Template)
		}
		n, err := strconv.Atoi(strings.Trim(string(raw), `"`))
		if err != nil || n < 0 {
			return fmt.Errorf("parameter %s = %s is not a count", r.Template, raw)
		}
		if tmpl.days && n > maxDays {
			return fmt.Errorf("parameter %s = %d days is out of range (at most %d, about 292 years)", r.Template, n, maxDays)
		}
		r.n = n
	}
	for _, s := range r.TagSelectors {
		if s.Kind != "doublestar" || (s.Decoration != "matches" && s.Decoration != "excludes") {
			return fmt.Errorf("tag selector %s/%s: regcheck models doublestar matches and excludes only", s.Kind, s.Decoration)
		}
		if err := checkPattern(s.Pattern); err != nil {
			return fmt.Errorf("tag selector: %w", err)
		}
	}
	for kind, sels := range r.ScopeSelectors {
		if kind != "repository" {
			return fmt.Errorf("scope selector %q: a project policy scopes repositories only", kind)
		}
		for _, s := range sels {
			if s.Kind != "doublestar" || (s.Decoration != "repoMatches" && s.Decoration != "repoExcludes") {
				return fmt.Errorf("repository selector %s/%s: regcheck models doublestar repoMatches and repoExcludes only", s.Kind, s.Decoration)
			}
			if err := checkPattern(s.Pattern); err != nil {
				return fmt.Errorf("repository selector: %w", err)
			}
		}
	}
	return nil
}

// untagged says whether a tag selector selects untagged artifacts: its
// extras say, else true for matches and false for excludes (Harbor's
// default "for upgrade").
func (s harborSelector) untagged() bool {
	u := s.Decoration == "matches"
	if s.Extras != "" {
		var x struct {
			Untagged bool `json:"untagged"`
		}
		if json.Unmarshal([]byte(s.Extras), &x) == nil {
			u = x.Untagged
		}
	}
	return u
}

// text is the rule in Harbor's words.
func (r harborRule) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rules[%d]: %s", r.index, r.Template)
	if harborTemplates[r.Template].param {
		fmt.Fprintf(&b, " %d", r.n)
	}
	for _, s := range r.TagSelectors {
		fmt.Fprintf(&b, ", tags %s %q", s.Decoration, s.Pattern)
		if s.untagged() {
			b.WriteString(" with untagged")
		}
	}
	for _, s := range r.ScopeSelectors["repository"] {
		fmt.Fprintf(&b, ", repositories %s %q", s.Decoration, s.Pattern)
	}
	return b.String()
}

// Name says which cleanup this is.
func (p *harborPolicy) Name() string {
	if p.ID != 0 {
		return fmt.Sprintf("Harbor tag retention policy %d (project id %d)", p.ID, p.Scope.Ref)
	}
	return "Harbor tag retention policy"
}

// Source is the file the policy was read from.
func (p *harborPolicy) Source() string { return p.file }

// Applies says whether some enabled rule scopes the repository. Harbor's
// repository selectors match the path without the project (the first
// segment: "proj/team/app" is matched as "team/app"). The policy names
// its project by id only, which a registry path does not carry: regcheck
// takes the first segment of every path as the project and does not
// check it is the policy's.
func (p *harborPolicy) Applies(repository string) bool {
	rules, err := p.rulesFor(repository)
	return err == nil && len(rules) > 0
}

// rulesFor returns the enabled rules whose repository selectors (AND'd)
// select the repository.
func (p *harborPolicy) rulesFor(repository string) ([]harborRule, error) {
	_, rest := harborSplit(repository)
	var out []harborRule
	for _, r := range p.Rules {
		if r.Disabled {
			continue
		}
		in := true
		for _, s := range r.ScopeSelectors["repository"] {
			m, err := doublestarMatch(s.Pattern, rest)
			if err != nil {
				return nil, err
			}
			in = in && rest != "" && m == (s.Decoration == "repoMatches")
		}
		if in {
			out = append(out, r)
		}
	}
	return out, nil
}

// harborSplit splits a repository path into project and the rest, as
// Harbor's utils.ParseRepository does: at the first '/'.
func harborSplit(repository string) (project, rest string) {
	repository = strings.Trim(repository, "/")
	project, rest, ok := strings.Cut(repository, "/")
	if !ok {
		return "", repository
	}
	return project, rest
}
