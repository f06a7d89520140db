package cleanup

// One evaluation of an ECR lifecycle policy. What the model holds to, from
// AWS's documentation (see ecr.go for the pages):
//
//   - Rules run by rulePriority, lowest first. An image is expired (or
//     archived) by at most one rule: an image that matches the tag
//     selection of a rule of higher priority (a lower rulePriority) is
//     never marked by a later rule, but later rules "can still identify
//     them as if they haven't been expired". The model reads that as: a
//     count rule counts every image its selection matches, claimed or not,
//     and marks only the unclaimed ones beyond its count. This predicts
//     at least as many deletions as the stricter reading (claimed images
//     not counted at all), which is the safe side for a tool that says
//     what breaks.
//   - tagStatus tagged selects images with a tag; with tagPrefixList every
//     prefix must be the prefix of at least one of the image's tags, with
//     tagPatternList every pattern must match at least one tag ("If you
//     specify multiple tags, only the images with all specified tags are
//     selected"; "an image is successfully matched if all of the tags in
//     the tagPrefixList value are matched against any of the image's
//     tags"). Patterns hold `*` wildcards and match the whole tag.
//     untagged selects images with no tag, any every image. cosign's
//     sha256-<hex>.sig tags are tags like any other.
//   - imageCountMoreThan n keeps the n most recently pushed images the
//     rule matches (imagePushedAt) and marks the rest; sinceImagePushed n
//     days marks images pushed more than n days ago; sinceImagePulled n
//     days by lastRecordedPullTime, falling back to the push time for an
//     image never pulled; sinceImageTransitioned n days (archive rules) by
//     the time the image was archived (lastArchivedAt).
//   - A rule selects from its storageClass: standard (the default) or
//     archive. action expire deletes the image with its tags; transition
//     moves it to the archive, where a pull answers 404 until restored.
//   - Index children are protected: an image an index in the repository
//     lists is not expired while that index stays (the issue: "ECR
//     lifecycle policies protect an index's children"). The model protects
//     them from transition too (an assumption: AWS's pages read do not say
//     so). When the index itself expires its children become untagged
//     images, which a later run's untagged rule may expire (Runs).
//
// Not modelled: the 24-hour delay before ECR acts, the 90-day minimum
// archive duration (a policy cannot expire sooner; the model does not
// check it), OCI referrers' own lifecycle (a referrer is an image like any
// other here, as aws/containers-roadmap#2613 reports count rules counting
// signatures and indexes), replication and pull-through cache rules.

import (
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
	"time"
)

// day is ECR's countUnit days.
const day = 24 * time.Hour

// maxDays is the longest age, in days, the models count: what a
// time.Duration holds (about 292 years). A policy's day count past it is
// out of range, not a cut-off before the epoch that would expire every
// image.
const maxDays = int(math.MaxInt64 / int64(day))

// maxECRWildcards is how many '*' one tagPatternList entry may hold: ECR
// refuses a policy whose pattern has more (its lifecycle policy reference:
// "up to four wildcards (*) per string").
const maxECRWildcards = 4

// ecrMark is one image a rule marks, with when it became eligible (zero
// for a count rule).
type ecrMark struct {
	digest   string
	eligible time.Time
}

// Run is one evaluation of the policy over r at time at.
func (p *ecrPolicy) Run(r *Repository, at time.Time) Plan {
	var plan Plan
	claimed := map[string]bool{}
	for _, rule := range p.rules {
		matched := rule.matches(r)
		for _, m := range rule.mark(r, matched, at) {
			if claimed[m.digest] || len(r.Parents(m.digest)) > 0 {
				continue
			}
			d := ManifestDeletion{Digest: m.digest, Rule: Rule{
				Rule:     rule.text(),
				Eligible: m.eligible,
				Keep:     ecrKeep(r, m.digest, rule),
			}}
			if rule.Action.Type == "transition" {
				plan.Archived = append(plan.Archived, d)
			} else {
				plan.Manifests = append(plan.Manifests, d)
			}
		}
		for _, d := range matched {
			claimed[d] = true
		}
	}
	return plan
}

// matches returns the images the rule's selection matches, most recently
// pushed first (an image with no known push time first: without the
// service's export the model cannot order it, and takes it as new).
func (rule ecrRule) matches(r *Repository) []string {
	var out []string
	for _, d := range r.SortedManifests() {
		if r.Manifests[d].Archived != rule.archiveClass() {
			continue
		}
		if rule.selectsTags(r.TagsOf(d)) {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := r.Manifests[out[i]].Pushed, r.Manifests[out[j]].Pushed
		if a.IsZero() != b.IsZero() {
			return a.IsZero()
		}
		return a.After(b)
	})
	return out
}

// selectsTags applies tagStatus, tagPrefixList and tagPatternList to one
// image's tags.
func (rule ecrRule) selectsTags(tags []string) bool {
	s := rule.Selection
	switch s.TagStatus {
	case "untagged":
		return len(tags) == 0
	case "any":
		return true
	}
	if len(tags) == 0 {
		return false
	}
	for _, prefix := range s.TagPrefixList {
		if !anyTag(tags, func(t string) bool { return strings.HasPrefix(t, prefix) }) {
			return false
		}
	}
	for _, pattern := range s.TagPatternList {
		if !anyTag(tags, func(t string) bool { return ecrWildcard(pattern, t) }) {
			return false
		}
	}
	return true
}

func anyTag(tags []string, f func(string) bool) bool {
	for _, t := range tags {
		if f(t) {
			return true
		}
	}
	return false
}

// ecrWildcard matches a whole tag against a pattern whose only special
// character is `*` (any run of characters, possibly none). Tags cannot
// hold '/', so path.Match's other metacharacters are escaped first.
func ecrWildcard(pattern, tag string) bool {
	var b strings.Builder
	for _, c := range pattern {
		switch c {
		case '*':
			b.WriteRune('*')
		case '?', '[', ']', '\\':
			b.WriteRune('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	ok, err := path.Match(b.String(), tag)
	return err == nil && ok
}

// mark returns the matched images the rule's count marks.
func (rule ecrRule) mark(r *Repository, matched []string, at time.Time) []ecrMark {
	s := rule.Selection
	var out []ecrMark
	if s.CountType == "imageCountMoreThan" {
		for i, d := range matched {
			if i >= s.CountNumber {
				out = append(out, ecrMark{digest: d})
			}
		}
		return out
	}
	age := time.Duration(s.CountNumber) * day
	for _, d := range matched {
		since := rule.since(r.Manifests[d])
		if since.IsZero() {
			continue
		}
		if eligible := since.Add(age); !at.Before(eligible) {
			out = append(out, ecrMark{digest: d, eligible: eligible})
		}
	}
	return out
}

// since is the time an age rule counts from (zero when unknown: the model
// then never marks the image).
func (rule ecrRule) since(m *Manifest) time.Time {
	switch rule.Selection.CountType {
	case "sinceImagePulled":
		if !m.Pulled.IsZero() {
			return m.Pulled
		}
		return m.Pushed
	case "sinceImageTransitioned":
		// readECRImages keeps lastArchivedAt as Updated.
		return m.Updated
	}
	return m.Pushed
}

// ecrKeep says, in the policy's terms, how to keep the image.
func ecrKeep(r *Repository, d string, rule ecrRule) string {
	tags := r.TagsOf(d)
	if len(tags) == 0 {
		return fmt.Sprintf("it is untagged: tag it, and add a rule with a lower rulePriority than %d that selects the tag (tagStatus tagged, tagPatternList [\"<tag>\"], countType imageCountMoreThan 1)", rule.Priority)
	}
	return fmt.Sprintf("add a rule with a lower rulePriority than %d: tagStatus tagged, tagPatternList [%q], countType imageCountMoreThan 1, action expire (it claims the image, and keeps the one image the tag names)", rule.Priority, tags[0])
}
