package cleanup

// One run of a Harbor retention policy over one repository, as Harbor's
// retention job does it (sources in harbor.go):
//
//   - The candidates are the repository's top-level artifacts, each with
//     all its tags; its push time is the latest of the artifact's and its
//     tags' push times, its pull time likewise. An index's children and an
//     artifact's accessories (an OCI referrer, or a cosign
//     sha256-<hex>.sig/.att/.sbom tag on another manifest, which Harbor
//     keeps as an accessory of its subject: an assumption about Harbor
//     2.8 and later, not read in its source) are not candidates.
//   - Each enabled rule that scopes the repository selects candidates by
//     its tag selectors in turn (AND): matches keeps an artifact if ANY of
//     its tags matches, excludes if ANY of its tags does not match; an
//     untagged artifact by the selector's untagged extra. A rule with no
//     tag selector retains nothing (the OR processor skips it). Then the
//     template retains some of them: always all; latestPushedK the k
//     pushed last; latestPulledN the n pulled last; latestActiveK the k
//     with the latest of push and pull; nDaysSinceLastPush those pushed at
//     or after now minus n days; nDaysSinceLastPull those pulled at or
//     after now minus n days; lastXDays those pushed after now minus x
//     days. Ties in the count templates fall in an order Harbor does not
//     fix; the model breaks them by digest.
//   - What some rule retains stays (OR); every other candidate is deleted
//     as an artifact, with every tag it has: Harbor's retention never
//     removes one tag of an artifact and keeps the artifact, so the plan
//     has no tag deletions. With it go its children no remaining index
//     lists, and its accessories.
//   - An empty pull time ("0001-01-01T00:00:00Z": never pulled, or a
//     proxy-cache artifact whose pull Harbor did not record:
//     goharbor/harbor#13152, #18708, #20844 (an index's pull time stays
//     zero in a proxy cache); #22390 as issue 26 cites it) is year 1 to
//     nDaysSinceLastPull, so the rule never retains it, and the last place
//     to latestPulledN.
//
// Not modelled: immutable-tag rules (Harbor skips immutable artifacts;
// regcheck has no export of them), label selectors, system-level scope,
// the schedule (a run is when --at says).

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// harborCandidate is one top-level artifact as a retention rule sees it.
type harborCandidate struct {
	digest       string
	tags         []string
	pushed       time.Time
	pulled       time.Time
	pulledZeroed bool
}

// Run is one retention run over r at time at.
func (p *harborPolicy) Run(r *Repository, at time.Time) Plan {
	rules, err := p.rulesFor(r.Name)
	if err != nil || len(rules) == 0 {
		return Plan{}
	}
	cands := harborCandidates(r)
	retained := map[string]bool{}
	selectedBy := map[string][]harborRule{}
	for _, rule := range rules {
		sel := rule.selectTags(cands)
		for _, c := range sel {
			selectedBy[c.digest] = append(selectedBy[c.digest], rule)
		}
		for _, c := range rule.retain(sel, at) {
			retained[c.digest] = true
		}
	}
	var plan Plan
	gone := map[string]bool{}
	for _, c := range cands {
		if retained[c.digest] {
			continue
		}
		rule := Rule{
			Rule:     p.why(rules, c, selectedBy[c.digest]),
			Eligible: harborEligible(c, selectedBy[c.digest]),
			Keep:     harborKeep(c, r.Name),
		}
		plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: c.digest, Rule: rule})
		gone[c.digest] = true
		for _, d := range harborDependents(r, c.digest, gone) {
			dep := rule
			dep.Rule = fmt.Sprintf("deleted with %s: %s", c.digest, rule.Rule)
			plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: d, Rule: dep})
		}
	}
	return plan
}

// harborCandidates returns r's top-level artifacts, by digest.
func harborCandidates(r *Repository) []harborCandidate {
	var out []harborCandidate
	for _, d := range r.SortedManifests() {
		if len(r.Parents(d)) > 0 || harborSubject(r, d) != "" {
			continue
		}
		m := r.Manifests[d]
		c := harborCandidate{digest: d, tags: r.TagsOf(d), pushed: m.Pushed, pulled: m.Pulled}
		for _, n := range c.tags {
			t := r.Tags[n]
			if t.Pushed.After(c.pushed) {
				c.pushed = t.Pushed
			}
			if t.Pulled.After(c.pulled) {
				c.pulled = t.Pulled
			}
		}
		c.pulledZeroed = c.pulled.IsZero()
		out = append(out, c)
	}
	return out
}

// harborSubject is the manifest d is an accessory of: its OCI subject, or
// the digest a cosign tag on it names; "" when neither is in r.
func harborSubject(r *Repository, d string) string {
	if s := r.Manifests[d].Subject; s != "" {
		if _, ok := r.Manifests[s]; ok {
			return s
		}
	}
	for _, n := range r.TagsOf(d) {
		for _, suffix := range []string{".sig", ".att", ".sbom"} {
			hex, ok := strings.CutSuffix(n, suffix)
			if !ok || !strings.HasPrefix(hex, "sha256-") {
				continue
			}
			s := "sha256:" + strings.TrimPrefix(hex, "sha256-")
			if _, ok := r.Manifests[s]; ok && s != d {
				return s
			}
		}
	}
	return ""
}

// harborDependents returns what goes with a deleted artifact: its
// accessories, and its children no remaining manifest lists, recursively.
// gone holds what the run deletes so far; it is added to.
func harborDependents(r *Repository, d string, gone map[string]bool) []string {
	var out []string
	queue := []string{d}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		var next []string
		for _, c := range r.Manifests[cur].Children {
			if _, ok := r.Manifests[c]; ok && !gone[c] && !listedByRemaining(r, c, gone) {
				next = append(next, c)
			}
		}
		for _, a := range r.SortedManifests() {
			if !gone[a] && harborSubject(r, a) == cur {
				next = append(next, a)
			}
		}
		for _, n := range next {
			if !gone[n] {
				gone[n] = true
				out = append(out, n)
				queue = append(queue, n)
			}
		}
	}
	return out
}

func listedByRemaining(r *Repository, d string, gone map[string]bool) bool {
	for _, p := range r.Parents(d) {
		if !gone[p] {
			return true
		}
	}
	return false
}

// selectTags applies the rule's tag selectors in turn.
func (rule harborRule) selectTags(cands []harborCandidate) []harborCandidate {
	if len(rule.TagSelectors) == 0 {
		return nil
	}
	sel := cands
	for _, s := range rule.TagSelectors {
		var next []harborCandidate
		for _, c := range sel {
			if s.selects(c.tags) {
				next = append(next, c)
			}
		}
		sel = next
	}
	return sel
}

// selects is one doublestar tag selector over one artifact's tags.
func (s harborSelector) selects(tags []string) bool {
	if len(tags) == 0 {
		// tagSelectExclude returns the negation of the untagged extra
		// (which defaults to false for excludes): excludes with untagged
		// true leaves untagged artifacts unselected, so not retained.
		if s.Decoration == "excludes" {
			return !s.untagged()
		}
		return s.untagged()
	}
	for _, t := range tags {
		m, err := doublestarMatch(s.Pattern, t)
		if err != nil {
			return false
		}
		if m == (s.Decoration == "matches") {
			return true
		}
	}
	return false
}

// retain returns the selected candidates the template retains.
func (rule harborRule) retain(sel []harborCandidate, at time.Time) []harborCandidate {
	since := at.Add(-time.Duration(rule.n) * day)
	switch rule.Template {
	case "always":
		return sel
	case "latestPushedK":
		return harborLatest(sel, rule.n, func(c harborCandidate) time.Time { return c.pushed })
	case "latestPulledN":
		return harborLatest(sel, rule.n, func(c harborCandidate) time.Time { return c.pulled })
	case "latestActiveK":
		return harborLatest(sel, rule.n, func(c harborCandidate) time.Time {
			if c.pulled.After(c.pushed) {
				return c.pulled
			}
			return c.pushed
		})
	}
	var out []harborCandidate
	for _, c := range sel {
		switch rule.Template {
		case "nDaysSinceLastPush":
			if !c.pushed.Before(since) {
				out = append(out, c)
			}
		case "nDaysSinceLastPull":
			if !c.pulled.Before(since) {
				out = append(out, c)
			}
		case "lastXDays":
			if c.pushed.After(since) {
				out = append(out, c)
			}
		}
	}
	return out
}

// harborLatest is the k candidates latest by key, ties by digest.
func harborLatest(sel []harborCandidate, k int, key func(harborCandidate) time.Time) []harborCandidate {
	s := append([]harborCandidate(nil), sel...)
	sort.SliceStable(s, func(i, j int) bool {
		a, b := key(s[i]), key(s[j])
		if a.Equal(b) {
			return s[i].digest < s[j].digest
		}
		return a.After(b)
	})
	return s[:min(k, len(s))]
}

// why says why no rule retained c.
func (p *harborPolicy) why(rules []harborRule, c harborCandidate, selected []harborRule) string {
	var texts []string
	for _, r := range rules {
		texts = append(texts, r.text())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: no rule retains it (%s)", p.Name(), strings.Join(texts, "; "))
	if len(selected) == 0 {
		b.WriteString("; no rule's tag selectors select it")
	}
	for _, r := range selected {
		if c.pulledZeroed && (r.Template == "nDaysSinceLastPull" || r.Template == "latestPulledN") {
			b.WriteString("; its pull time is empty, which " + r.Template + " counts as never pulled (goharbor/harbor#20844)")
			break
		}
	}
	return b.String()
}

// harborEligible is when the last time rule that selected c stopped
// retaining it; zero when a count rule selected it or a time is unknown.
func harborEligible(c harborCandidate, selected []harborRule) time.Time {
	var out time.Time
	for _, r := range selected {
		var base time.Time
		switch r.Template {
		case "nDaysSinceLastPush", "lastXDays":
			base = c.pushed
		case "nDaysSinceLastPull":
			base = c.pulled
		}
		if base.IsZero() {
			return time.Time{}
		}
		if e := base.Add(time.Duration(r.n) * day); e.After(out) {
			out = e
		}
	}
	return out
}

// harborKeep says how to keep c, in Harbor's terms.
func harborKeep(c harborCandidate, repository string) string {
	_, rest := harborSplit(repository)
	if len(c.tags) == 0 {
		return fmt.Sprintf(`add a retain rule for repositories matching %q that keeps untagged artifacts: template always, tag selector doublestar matches "**" with extras {"untagged":true}`, rest)
	}
	return fmt.Sprintf(`add a retain rule matching %s: template always, tag selector doublestar matches %q, repositories matching %q`, c.tags[0], c.tags[0], rest)
}
