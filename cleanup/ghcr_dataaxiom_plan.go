package cleanup

import (
	"fmt"
	"strings"
	"time"
)

// daRun is one run in progress: the top-level images chosen, in order,
// with why, and the tags untagged.
type daRun struct {
	order []string
	why   map[string]Rule
	tags  []TagDeletion
}

// add chooses digest for deletion by r, unless already chosen.
func (d *daRun) add(digest string, r Rule) {
	if _, ok := d.why[digest]; ok {
		return
	}
	d.order = append(d.order, digest)
	d.why[digest] = r
}

// remaining is the set less what the run already chose (the action
// takes each chosen image out of its filter set).
func (d *daRun) remaining(set []string) []string {
	var out []string
	for _, x := range set {
		if _, ok := d.why[x]; !ok {
			out = append(out, x)
		}
	}
	return out
}

// Run is one run of the step over r at at (CleanupOrchestrator.run).
func (p *ghcrCleanup) Run(r *Repository, at time.Time) Plan {
	if p.invalid != "" || p.dryRun {
		return Plan{}
	}
	run := &daRun{why: map[string]Rule{}}
	s := loadDARepo(r)
	set, excluded := p.filterSet(s, at)
	s, set = p.runTags(run, s, set, excluded, at)
	p.runValidation(run, s, run.remaining(set))
	if p.keepNTagged >= 0 {
		order := p.keepNTaggedOrder(s, run.remaining(set))
		for _, d := range order[min(p.keepNTagged, len(order)):] {
			run.add(d, p.ruleFor(s, d, fmt.Sprintf("keep-n-tagged %d: a tagged image beyond the newest %d", p.keepNTagged, p.keepNTagged)))
		}
	}
	var untagged []string
	for _, d := range run.remaining(set) {
		if len(s.r.TagsOf(d)) == 0 {
			untagged = append(untagged, d)
		}
	}
	switch {
	case p.keepNUntagged >= 0:
		sortNewest(s, untagged)
		for _, d := range untagged[min(p.keepNUntagged, len(untagged)):] {
			run.add(d, p.ruleFor(s, d, fmt.Sprintf("keep-n-untagged %d: an untagged image beyond the newest %d", p.keepNUntagged, p.keepNUntagged)))
		}
	case p.deleteUntagged:
		for _, d := range untagged {
			run.add(d, p.ruleFor(s, d, "delete-untagged: an untagged image"))
		}
	}
	return p.expand(run, s)
}

// runTags handles delete-tags: untag what keep-n-tagged does not gate
// and, when anything was untagged, load the repository again (as the
// action does) and take the deletions of a second pass.
func (p *ghcrCleanup) runTags(run *daRun, s *daRepo, set []string, excluded map[string]bool, at time.Time) (*daRepo, []string) {
	del, untag := p.tagDeletions(s, set, excluded)
	if p.keepNTagged >= 0 {
		order := p.keepNTaggedOrder(s, set)
		for _, d := range order[:min(p.keepNTagged, len(order))] {
			delete(untag, d)
		}
	}
	removed := map[string]string{}
	for d, tags := range untag {
		for _, t := range tags[:min(len(tags), len(s.r.TagsOf(d))-1)] {
			removed[t] = d
		}
	}
	if len(removed) > 0 {
		after := s.r.Clone()
		for t := range removed {
			delete(after.Tags, t)
		}
		s = loadDARepo(after)
		set, excluded = p.filterSet(s, at)
		del, _ = p.tagDeletions(s, set, excluded)
	}
	for _, d := range del {
		run.add(d, p.ruleFor(s, d, fmt.Sprintf("delete-tags %q: every tag of the image matches", p.deleteTags)))
	}
	for _, t := range sortedKeys(removed) {
		d := removed[t]
		if _, gone := run.why[d]; gone {
			continue
		}
		run.tags = append(run.tags, TagDeletion{Tag: t, Digest: d, Rule: Rule{
			Rule: fmt.Sprintf("delete-tags %q: tag %s untagged (the image keeps its other tags)", p.deleteTags, t),
			Keep: fmt.Sprintf("add %s to exclude-tags", t),
		}})
	}
	return s, set
}

// runValidation is delete-partial-images (else delete-ghost-images) and
// delete-orphaned-images.
func (p *ghcrCleanup) runValidation(run *daRun, s *daRepo, set []string) {
	for _, d := range set {
		kids := s.r.Manifests[d].Children
		missing := 0
		for _, c := range kids {
			if _, ok := s.r.Manifests[c]; !ok {
				missing++
			}
		}
		switch {
		case len(kids) == 0:
		case p.partial && missing > 0 && missing < len(kids):
			run.add(d, p.ruleFor(s, d, fmt.Sprintf("delete-partial-images: %d of its %d platform images are missing", missing, len(kids))))
		case !p.partial && p.ghost && missing == len(kids):
			run.add(d, p.ruleFor(s, d, "delete-ghost-images: all its platform images are missing"))
		}
	}
	if !p.orphaned {
		return
	}
	for _, t := range sortedKeys(s.tag) {
		if parent := referrerTagParent(t); parent != "" && s.r.Manifests[parent] == nil {
			run.add(s.tag[t], Rule{Rule: fmt.Sprintf("delete-orphaned-images: tag %s names %s, which is not in the repository", t, parent), Keep: "drop delete-orphaned-images"})
		}
	}
	for _, subj := range sortedKeys(s.subjects) {
		if s.r.Manifests[subj] == nil {
			for _, d := range s.subjects[subj] {
				run.add(d, Rule{Rule: fmt.Sprintf("delete-orphaned-images: its subject %s is not in the repository", subj), Keep: "drop delete-orphaned-images"})
			}
		}
	}
}

// sortNewest sorts digests by updated_at, newest first (stable).
func sortNewest(s *daRepo, ds []string) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && s.updated(ds[j]).After(s.updated(ds[j-1])); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// expand is ImageDeleter.deleteImages: each chosen image goes with its
// platform images (those no other remaining index lists), the versions
// its sha256-* tags name, and its OCI referrers.
func (p *ghcrCleanup) expand(run *daRun, s *daRepo) Plan {
	var plan Plan
	deleted := map[string]bool{}
	usedBy := map[string]map[string]bool{}
	for c, ps := range s.usedBy {
		usedBy[c] = map[string]bool{}
		for x := range ps {
			usedBy[c][x] = true
		}
	}
	var del func(d string, r Rule, depth int)
	del = func(d string, r Rule, depth int) {
		if deleted[d] || depth > 8 {
			return
		}
		deleted[d] = true
		plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: d, Rule: r})
		for _, c := range s.r.Manifests[d].Children {
			ps := usedBy[c]
			if s.r.Manifests[c] == nil || deleted[c] || ps == nil {
				continue
			}
			if len(ps) == 1 && ps[d] {
				deleted[c] = true
				delete(usedBy, c)
				plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: c, Rule: derived(r, "a platform image (or attestation) of the deleted index "+d, d)})
				continue
			}
			delete(ps, d)
		}
		for _, t := range s.refTags[d] {
			del(s.tag[t], derived(r, fmt.Sprintf("tag %s names the deleted image %s (a signature, attestation or referrers tag)", t, d), d), depth+1)
		}
		for _, ref := range s.subjects[d] {
			del(ref, derived(r, "a referrer of the deleted image "+d, d), depth+1)
		}
	}
	for _, d := range run.order {
		del(d, run.why[d], 0)
	}
	plan.Tags = run.tags
	return plan
}

// derived is the rule for what goes with a deleted image.
func derived(parent Rule, what, d string) Rule {
	return Rule{
		Rule:     what + ", deleted by " + parent.Rule,
		Eligible: parent.Eligible,
		Keep:     "keep " + d + ": " + strings.TrimSpace(parent.Keep),
	}
}
