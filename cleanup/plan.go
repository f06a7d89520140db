package cleanup

import (
	"fmt"
	"sort"
	"time"
)

// Policy is one cleanup as configured: a workflow step, an ECR lifecycle
// policy, a GitLab cleanup policy or a Harbor retention policy.
type Policy interface {
	// Name says which cleanup and which version decides its behaviour, as a
	// person names it ("snok/container-retention-policy@v2", "ECR lifecycle
	// policy").
	Name() string
	// Source says where it was read: file:line, or file alone.
	Source() string
	// Applies says whether the policy cleans the repository (its path on
	// the registry, "org/app").
	Applies(repository string) bool
	// Run is one run of the policy over r at time at. It does not change r.
	Run(r *Repository, at time.Time) Plan
}

// Plan is what one run of a policy does to one repository.
type Plan struct {
	// Tags are tags removed while their manifest stays (unless it is in
	// Manifests too).
	Tags []TagDeletion
	// Manifests are manifests deleted, and with each every tag naming it.
	Manifests []ManifestDeletion
	// Archived are manifests moved to an archive tier: still listed, not
	// pullable until restored.
	Archived []ManifestDeletion
}

// Rule says why a run removes something: which rule, from when, and what
// in the policy's own terms would have kept it.
type Rule struct {
	// Rule names the rule in the policy's words ("rules[0] (rulePriority
	// 1): tagStatus tagged, tagPrefixList [v], imageCountMoreThan 3").
	Rule string
	// Eligible is when it became eligible for this rule (zero when the
	// rule is not about time).
	Eligible time.Time
	// Keep says how to keep it, in the policy's terms ("add v1.2 to
	// exclude-tags"), or which version of the cleanup would keep it.
	Keep string
}

// TagDeletion is one tag a run removes.
type TagDeletion struct {
	Tag    string
	Digest string
	Rule
}

// ManifestDeletion is one manifest a run deletes or archives.
type ManifestDeletion struct {
	Digest string
	Rule
}

// Empty says the plan removes nothing.
func (p Plan) Empty() bool {
	return len(p.Tags) == 0 && len(p.Manifests) == 0 && len(p.Archived) == 0
}

// Apply returns a copy of r as the plan leaves it: the deleted manifests
// gone with every tag naming them, the removed tags gone, the archived
// manifests marked. r is not changed.
func Apply(r *Repository, p Plan) *Repository {
	out := r.Clone()
	for _, m := range p.Manifests {
		for _, n := range r.TagsOf(m.Digest) {
			delete(out.Tags, n)
		}
	}
	for _, t := range p.Tags {
		delete(out.Tags, t.Tag)
	}
	for _, m := range p.Manifests {
		delete(out.Manifests, m.Digest)
	}
	for _, m := range p.Archived {
		if mf, ok := out.Manifests[m.Digest]; ok {
			mf.Archived = true
		}
	}
	return out
}

// Step is one run's plan for one repository.
type Step struct {
	// Run counts from 1.
	Run  int
	Plan Plan
}

// Runs applies p to r n times at the same time at (a policy that deletes
// an index in one run may delete its children in the next), stopping early
// when a run removes nothing. It returns each run's plan and r as the
// last run leaves it.
func Runs(p Policy, r *Repository, at time.Time, n int) ([]Step, *Repository, error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("runs must be at least 1, not %d", n)
	}
	var steps []Step
	cur := r
	for i := 1; i <= n; i++ {
		plan := p.Run(cur, at)
		if plan.Empty() {
			break
		}
		plan.sort()
		steps = append(steps, Step{Run: i, Plan: plan})
		cur = Apply(cur, plan)
	}
	if cur == r {
		cur = r.Clone()
	}
	return steps, cur, nil
}

func (p *Plan) sort() {
	sort.Slice(p.Tags, func(i, j int) bool { return p.Tags[i].Tag < p.Tags[j].Tag })
	sort.Slice(p.Manifests, func(i, j int) bool { return p.Manifests[i].Digest < p.Manifests[j].Digest })
	sort.Slice(p.Archived, func(i, j int) bool { return p.Archived[i].Digest < p.Archived[j].Digest })
}
