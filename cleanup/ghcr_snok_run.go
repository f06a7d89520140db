package cleanup

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// runV2 is one run of v1 or v2 (main.py's get_and_delete_old_versions):
// the versions newest first, each deleted when older than the cut-off and
// passing untagged-only, filter-include-untagged, filter-tags,
// keep-at-least and skip-tags.
func (p *snok) runV2(r *Repository, at time.Time) Plan {
	vs := ghcrVersions(r)
	if p.model == snokV1 {
		vs = vs[min(p.keepAtLeast, len(vs)):]
	}
	cut := p.cut.before(at)
	var cands []ghcrVer
	for idx, v := range vs {
		ts := p.stamp(v)
		if ts.IsZero() || cut.Before(ts) {
			continue
		}
		if (p.untaggedOnly && len(v.tags) > 0) || (len(v.tags) == 0 && !p.includeUntagged) {
			continue
		}
		del := len(p.filterTags) == 0
		for _, t := range v.tags {
			del = del || anyGlob(p.filterTags, t)
		}
		if p.model == snokV213 && p.keepAtLeast > 0 {
			del = idx+1-len(cands) > p.keepAtLeast
		}
		for _, t := range v.tags {
			if anyGlob(p.skipTags, t) {
				del = false
			}
		}
		if del {
			cands = append(cands, v)
		}
	}
	if (p.model == snokV20 || p.model == snokV21) && p.keepAtLeast > 0 {
		cands = cands[min(p.keepAtLeast, len(cands)):]
	}
	var plan Plan
	for _, v := range cands {
		plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: v.digest, Rule: Rule{
			Rule:     p.ruleV2(v),
			Eligible: p.cut.eligible(p.stamp(v)),
			Keep:     p.keepV2(r, v),
		}})
	}
	return plan
}

// ruleV2 is a v1/v2 deletion's rule in the action's words.
func (p *snok) ruleV2(v ghcrVer) string {
	s := fmt.Sprintf("cut-off %q (%s)", p.cut.text, p.tsName())
	if p.untaggedOnly {
		s += ", untagged-only"
	}
	if len(v.tags) == 0 {
		s += ": untagged version"
	} else {
		s += fmt.Sprintf(": version tagged %s", strings.Join(v.tags, ", "))
	}
	if p.keepAtLeast > 0 {
		s += fmt.Sprintf(", beyond keep-at-least %d", p.keepAtLeast)
	}
	return s
}

// keepV2 says how a v1/v2 step would keep v.
func (p *snok) keepV2(r *Repository, v ghcrVer) string {
	if len(v.tags) > 0 {
		return fmt.Sprintf("add %s to skip-tags", v.tags[0])
	}
	k := "no input of v1/v2 keeps an untagged version past the cut-off but keep-at-least"
	if parent := indexChildOfTagged(r, v.digest); parent != "" {
		k = fmt.Sprintf("it is a child of the tagged index %s: upgrade snok/container-retention-policy to v3.1.0, which keeps the children of kept tagged images", parent)
	}
	return k
}

// runV3 is one run of v3 (select_package_versions.rs): skip-shas, the
// cut-off, tag-selection and image-tags pick candidates; the newest
// keep-n-most-recent tagged candidates stay; from v3.1.0 the children of
// every tagged version that stays are protected.
func (p *snok) runV3(r *Repository, at time.Time) Plan {
	cut := p.cut.before(at)
	var tagged, untagged []ghcrVer
	for _, v := range ghcrVersions(r) {
		ts := p.stamp(v)
		if p.shas[v.digest] || ts.IsZero() || !ts.Before(cut) {
			continue
		}
		switch {
		case len(v.tags) == 0 && p.selection != "tagged":
			untagged = append(untagged, v)
		case len(v.tags) > 0 && p.selection != "untagged" && p.matchTags(v.tags):
			tagged = append(tagged, v)
		}
	}
	sort.SliceStable(tagged, func(i, j int) bool { return p.stamp(tagged[i]).Before(p.stamp(tagged[j])) })
	tagged = tagged[:max(len(tagged)-p.keepN, 0)]
	protected := map[string]string{}
	if p.model == snokV31 {
		protected = p.keptChildren(r, tagged)
	}
	var plan Plan
	for _, v := range append(untagged, tagged...) {
		if _, ok := protected[v.digest]; ok {
			continue
		}
		plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: v.digest, Rule: Rule{
			Rule:     p.ruleV3(v),
			Eligible: p.cut.eligible(p.stamp(v)),
			Keep:     p.keepV3(r, v),
		}})
	}
	return plan
}

// matchTags is filter_by_matchers: no image-tags selects every version;
// a negative match on any tag keeps it; otherwise every tag must match a
// positive pattern (with no positive patterns, every tag does).
func (p *snok) matchTags(tags []string) bool {
	if len(p.tagsPos) == 0 && len(p.tagsNeg) == 0 {
		return true
	}
	for _, t := range tags {
		if anyGlob(p.tagsNeg, t) {
			return false
		}
	}
	for _, t := range tags {
		if len(p.tagsPos) > 0 && !anyGlob(p.tagsPos, t) {
			return false
		}
	}
	return true
}

// keptChildren maps each child of a tagged version the run keeps to that
// version (v3.1.0's multi-arch protection: every tagged version, old
// enough or not, less the tagged ones it deletes).
func (p *snok) keptChildren(r *Repository, deleted []ghcrVer) map[string]string {
	gone := map[string]bool{}
	for _, v := range deleted {
		gone[v.digest] = true
	}
	out := map[string]string{}
	for _, d := range r.SortedManifests() {
		if gone[d] || len(r.TagsOf(d)) == 0 {
			continue
		}
		for _, c := range r.Manifests[d].Children {
			out[c] = d
		}
	}
	return out
}

// ruleV3 is a v3 deletion's rule in the action's words.
func (p *snok) ruleV3(v ghcrVer) string {
	s := fmt.Sprintf("cut-off %s (%s), tag-selection %s", p.cut.text, p.tsName(), p.selection)
	if len(v.tags) == 0 {
		return s + ": untagged version"
	}
	if p.imageTags != "" {
		s += fmt.Sprintf(", image-tags %q", p.imageTags)
	}
	return s + fmt.Sprintf(": version tagged %s, beyond keep-n-most-recent %d", strings.Join(v.tags, ", "), p.keepN)
}

// keepV3 says how a v3 step would keep v.
func (p *snok) keepV3(r *Repository, v ghcrVer) string {
	if len(v.tags) > 0 {
		return fmt.Sprintf("add !%s to image-tags, or %s to skip-shas", v.tags[0], v.digest)
	}
	k := fmt.Sprintf("add %s to skip-shas", v.digest)
	if parent := indexChildOfTagged(r, v.digest); parent != "" && p.model == snokV30 {
		k = fmt.Sprintf("upgrade snok/container-retention-policy to v3.1.0, which keeps the children of kept tagged images (%s is a child of %s); or %s", v.digest, parent, k)
	}
	return k
}
