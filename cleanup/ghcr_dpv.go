package cleanup

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// actions/delete-package-versions, modelled from its src/input.ts,
// src/delete.ts and src/version/get-versions.ts (v4.0.0, v4.1.x, v5.0.0).
// It lists every version of one package, sorts them oldest first
// (created_at, then id), drops those whose name matches ignore-versions
// (for a container the name is the digest), keeps only the untagged ones
// with delete-only-untagged-versions (from v4.1.0), and deletes the oldest
// of what is left: all but min-versions-to-keep, or
// num-old-versions-to-delete, at most 100 per run.

// dpvRateLimit is the most versions one run deletes (RATE_LIMIT).
const dpvRateLimit = 100

// dpvReleaseRE is the pattern delete-only-pre-release-versions puts in
// ignore-versions: a release number. A container version's name is a
// digest, which never matches, so every version counts as a pre-release.
var dpvReleaseRE = regexp.MustCompile(`^(0|[1-9]\d*)((\.(0|[1-9]\d*))*)$`)

// dpvRefs are the refs whose behaviour is known, by the model that
// follows them: v4.0.0 predates delete-only-untagged-versions.
var dpvRefs = map[string]string{
	"v4.0.0": "v4.0.0", "v4": "v5", "v4.1.0": "v5", "v4.1.1": "v5", "v5": "v5", "v5.0.0": "v5",
}

// dpvOldRef matches the v1 to v3 refs (the GraphQL API releases), not
// modelled apart.
var dpvOldRef = regexp.MustCompile(`^v[123](\.\d+)*$`)

// deletePackageVersions is one step using actions/delete-package-versions.
type deletePackageVersions struct {
	ghcrBase
	ids                  []string
	numOld, minKeep      int
	ignore               *regexp.Regexp
	untagged, preRelease bool
	// invalid says why the action rejects its inputs (it then deletes
	// nothing); empty when they are valid.
	invalid string
}

// newDeletePackageVersions reads a step using
// actions/delete-package-versions.
func newDeletePackageVersions(st ghcrStep) Policy {
	in := &inputs{with: st.with}
	p := &deletePackageVersions{ghcrBase: newGHCRBase(st)}
	if old := dpvOldRef.MatchString(st.ref); old {
		p.model = "v5"
		p.notes = append(p.notes, "v1 to v3 are not modelled apart: modelled as v5")
	} else {
		p.model = p.version(dpvRefs, "v5")
	}
	declared := "package-version-ids owner package-name package-type num-old-versions-to-delete min-versions-to-keep ignore-versions delete-only-pre-release-versions delete-only-untagged-versions token"
	in.unknown(p.model, declared) // v4.0.0's missing delete-only-untagged-versions is noted below
	p.readPackage(in)
	p.ids = list(in.known("package-version-ids", ""), false)
	p.numOld = in.integer("num-old-versions-to-delete", 1)
	p.minKeep = in.integer("min-versions-to-keep", -1)
	ignore := in.known("ignore-versions", "^$")
	re, err := regexp.Compile(ignore)
	if err != nil {
		p.invalid = fmt.Sprintf("ignore-versions %q does not compile", ignore)
		re = regexp.MustCompile("^$")
	}
	p.ignore = re
	p.preRelease = in.boolean("delete-only-pre-release-versions", false)
	p.untagged = in.boolean("delete-only-untagged-versions", false)
	if p.model == "v4.0.0" && p.untagged {
		in.note("v4.0.0 has no delete-only-untagged-versions input: ignored, tagged versions are candidates too")
		p.untagged = false
	}
	p.checkInput()
	p.notes = append(p.notes, in.notes...)
	if p.invalid != "" {
		p.notes = append(p.notes, "the action rejects its inputs and deletes nothing: "+p.invalid)
	}
	return p
}

// readPackage reads owner, package-name and package-type.
func (p *deletePackageVersions) readPackage(in *inputs) {
	if o, ok := in.raw("owner"); ok && !isExpr(o) {
		p.owner = o
	}
	name, ok := in.raw("package-name")
	switch {
	case !ok:
		p.invalid = "package-name is not set"
	case isExpr(name):
		in.note("package-name is an expression: applies to every package")
	default:
		p.packages = func(n string) bool { return strings.EqualFold(n, name) }
	}
	typ, ok := in.raw("package-type")
	switch {
	case !ok:
		p.invalid = "package-type is not set"
	case isExpr(typ):
		in.note("package-type is an expression: modelled as container")
	case !strings.EqualFold(typ, "container"):
		in.note(fmt.Sprintf("package-type %s: not a container package", typ))
		p.packages = func(string) bool { return false }
	}
}

// checkInput is the action's own check and normalisation of its inputs.
func (p *deletePackageVersions) checkInput() {
	if p.numOld > 1 && (p.minKeep >= 0 || p.preRelease || p.untagged) {
		p.invalid = "num-old-versions-to-delete above 1 with min-versions-to-keep, delete-only-pre-release-versions or delete-only-untagged-versions"
	}
	if p.preRelease {
		p.minKeep = max(p.minKeep, 0)
		p.ignore = dpvReleaseRE
	}
	if p.untagged {
		p.minKeep = max(p.minKeep, 0)
	}
	if p.minKeep >= 0 {
		p.numOld = 0
	}
}

// Run is one run of the step over r.
func (p *deletePackageVersions) Run(r *Repository, _ time.Time) Plan {
	if p.invalid != "" {
		return Plan{}
	}
	if len(p.ids) > 0 {
		return p.runIDs(r)
	}
	if p.numOld <= 0 && p.minKeep < 0 {
		return Plan{}
	}
	var cands []ghcrVer
	for _, v := range reversed(ghcrVersions(r)) {
		if p.ignore.MatchString(v.digest) || (p.untagged && len(v.tags) > 0) {
			continue
		}
		cands = append(cands, v)
	}
	n := min(len(cands)-p.minKeep, dpvRateLimit)
	if p.minKeep < 0 {
		n = min(len(cands), p.numOld, dpvRateLimit)
	}
	var plan Plan
	for _, v := range cands[:max(n, 0)] {
		plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: v.digest, Rule: Rule{Rule: p.rule(len(cands)), Keep: p.keep(r, v)}})
	}
	return plan
}

// runIDs deletes the versions package-version-ids names (at most 100).
func (p *deletePackageVersions) runIDs(r *Repository) Plan {
	ids := p.ids[:min(len(p.ids), dpvRateLimit)]
	var plan Plan
	for _, d := range r.SortedManifests() {
		for _, id := range ids {
			if r.Manifests[d].ID == id {
				plan.Manifests = append(plan.Manifests, ManifestDeletion{Digest: d, Rule: Rule{
					Rule: "package-version-ids " + id,
					Keep: "remove " + id + " from package-version-ids",
				}})
			}
		}
	}
	return plan
}

// rule says which inputs chose a version, in the action's words.
func (p *deletePackageVersions) rule(n int) string {
	var s string
	switch {
	case p.untagged:
		s = fmt.Sprintf("delete-only-untagged-versions: true: every untagged version but the newest %d (min-versions-to-keep) of %d", p.minKeep, n)
	case p.preRelease:
		s = fmt.Sprintf("delete-only-pre-release-versions: true: a container version's name is its digest, never a release number, so all %d versions count as pre-releases; the newest %d (min-versions-to-keep) stay", n, p.minKeep)
	case p.minKeep >= 0:
		s = fmt.Sprintf("min-versions-to-keep %d: every version but the newest %d of %d, tagged or not", p.minKeep, p.minKeep, n)
	default:
		s = fmt.Sprintf("num-old-versions-to-delete %d: the oldest versions, tagged or not", p.numOld)
	}
	if p.ignore.String() != "^$" && !p.preRelease {
		s += fmt.Sprintf(", ignore-versions %q", p.ignore.String())
	}
	return s + fmt.Sprintf(" (at most %d a run)", dpvRateLimit)
}

// keep says how the step's inputs would keep v.
func (p *deletePackageVersions) keep(r *Repository, v ghcrVer) string {
	k := fmt.Sprintf("add %s to ignore-versions (a regex over the version name, which for a container is its digest, not a tag)", regexp.QuoteMeta(v.digest))
	if p.preRelease {
		k = "drop delete-only-pre-release-versions (it ignores no container version)"
	}
	if parent := indexChildOfTagged(r, v.digest); parent != "" {
		k += fmt.Sprintf("; it is a child of the tagged index %s and no version of actions/delete-package-versions keeps an index's children (snok/container-retention-policy v3.1.0 and dataaxiom/ghcr-cleanup-action do)", parent)
	}
	return k
}
