package cleanup

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// daRepo is a repository as the action loads it: versions in the API's
// order, tags, the sha256-* referrer tags by the digest they name, the
// parents of each child present, the referrers of each subject.
type daRepo struct {
	r        *Repository
	order    []string
	tag      map[string]string
	refTags  map[string][]string
	usedBy   map[string]map[string]bool
	subjects map[string][]string
}

// loadDARepo loads r as the action does (PackageRepo.loadPackages and
// ManifestAnalyzer.loadDigestUsedByMap).
func loadDARepo(r *Repository) *daRepo {
	s := &daRepo{r: r, tag: map[string]string{}, refTags: map[string][]string{}, usedBy: map[string]map[string]bool{}, subjects: map[string][]string{}}
	for _, v := range ghcrVersions(r) {
		s.order = append(s.order, v.digest)
	}
	for _, n := range r.SortedTags() {
		t := r.Tags[n]
		if _, ok := r.Manifests[t.Digest]; !ok {
			continue
		}
		s.tag[n] = t.Digest
		if parent := referrerTagParent(n); parent != "" {
			s.refTags[parent] = append(s.refTags[parent], n)
		}
	}
	for _, d := range s.order {
		m := r.Manifests[d]
		for _, c := range m.Children {
			if _, ok := r.Manifests[c]; ok {
				if s.usedBy[c] == nil {
					s.usedBy[c] = map[string]bool{}
				}
				s.usedBy[c][d] = true
			}
		}
		if m.Subject != "" {
			s.subjects[m.Subject] = append(s.subjects[m.Subject], d)
		}
	}
	return s
}

// referrerTagParent is the digest a sha256-<hex>[.sig|.att|...] tag names
// (cosign's tags, the OCI referrers tag schema), or "".
func referrerTagParent(tag string) string {
	hex, ok := strings.CutPrefix(tag, "sha256-")
	if !ok || len(hex) < 64 {
		return ""
	}
	return "sha256:" + hex[:64]
}

// updated is the version's updated_at (created_at where absent).
func (s *daRepo) updated(d string) time.Time {
	m := s.r.Manifests[d]
	if m.Updated.IsZero() {
		return m.Pushed
	}
	return m.Updated
}

// filterSet is the top-level images the action considers (reload()):
// every version but index children, referrers and what sha256-* tags
// name, less exclude-tags' and those newer than older-than. It returns
// the set in the API's order and what exclude-tags matched.
func (p *ghcrCleanup) filterSet(s *daRepo, at time.Time) ([]string, map[string]bool) {
	gone := map[string]bool{}
	for _, refs := range s.subjects {
		for _, d := range refs {
			gone[d] = true
		}
	}
	for _, d := range s.order {
		if gone[d] {
			continue // a JavaScript Set skips entries deleted before they are visited
		}
		for _, c := range s.r.Manifests[d].Children {
			gone[c] = true
		}
		for _, t := range s.refTags[d] {
			gone[s.tag[t]] = true
			for _, c := range s.r.Manifests[s.tag[t]].Children {
				gone[c] = true
			}
		}
	}
	excluded := map[string]bool{}
	for t, d := range s.tag {
		if p.matchExclude(t) {
			gone[d], excluded[t] = true, true
		}
	}
	for _, d := range s.order {
		if p.matchExclude(d) {
			gone[d], excluded[d] = true, true
		}
	}
	var set []string
	for _, d := range s.order {
		if gone[d] || (p.olderThan > 0 && !s.updated(d).IsZero() && !s.updated(d).Before(at.Add(-p.olderThan))) {
			continue
		}
		set = append(set, d)
	}
	return set, excluded
}

// matchTags is expandTags: the tags of the set's versions that
// delete-tags matches, then the set's digests it matches.
func (p *ghcrCleanup) matchTags(s *daRepo, set []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range set {
		for _, t := range s.r.TagsOf(d) {
			if p.matchDelete(t) && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	for _, d := range set {
		if p.matchDelete(d) && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// tagDeletions is processTagDeletions: a matched tag that is its
// version's only tag (or a matched digest) deletes the version, unless
// keep-n-tagged is set; a matched tag of a version with more tags is
// untagged.
func (p *ghcrCleanup) tagDeletions(s *daRepo, set []string, excluded map[string]bool) (del []string, untag map[string][]string) {
	untag = map[string][]string{}
	if p.deleteTags == "" {
		return nil, untag
	}
	for _, t := range p.matchTags(s, set) {
		if excluded[t] {
			continue
		}
		d := t
		if !strings.HasPrefix(t, "sha256:") {
			d = s.tag[t]
			if n := len(s.r.TagsOf(d)); n > 1 {
				untag[d] = append(untag[d], t)
				continue
			}
		}
		if p.keepNTagged < 0 {
			del = append(del, d)
		}
	}
	return del, untag
}

// keepNTaggedOrder is collectKeepNTaggedCandidates: the versions matched
// by delete-tags (or, without it, the tagged ones of the set), newest
// updated_at first.
func (p *ghcrCleanup) keepNTaggedOrder(s *daRepo, set []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(d string) {
		if d != "" && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	if p.deleteTags != "" {
		for _, t := range p.matchTags(s, set) {
			add(s.tag[t])
		}
	} else {
		for _, d := range set {
			if len(s.r.TagsOf(d)) > 0 {
				add(d)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return s.updated(out[i]).After(s.updated(out[j])) })
	return out
}

// ruleFor builds a Rule for a top-level image of the run.
func (p *ghcrCleanup) ruleFor(s *daRepo, d, why string) Rule {
	r := Rule{Rule: why, Keep: fmt.Sprintf("add %s to exclude-tags (exclude-tags matches digests too)", d)}
	if tags := s.r.TagsOf(d); len(tags) > 0 {
		r.Keep = fmt.Sprintf("add %s to exclude-tags", strings.Join(tags, ","))
	}
	if p.olderThan > 0 {
		r.Rule += fmt.Sprintf(", older-than %s (updated_at)", p.olderText)
		r.Eligible = s.updated(d).Add(p.olderThan)
	}
	return r
}
