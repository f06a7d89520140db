package cleanup

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// dataaxiom/ghcr-cleanup-action, modelled from v1.2.1's source (the v1
// tag): src/config.ts (inputs and defaults), src/manifest-analyzer.ts
// (which versions are top-level images), src/image-filter.ts
// (exclude-tags, older-than, delete-tags matching), src/deletion-strategy.ts
// (delete-tags, keep-n-tagged, keep-n-untagged, delete-untagged),
// src/cleanup-orchestrator.ts (the order of the steps, untagging and the
// keep-n-tagged gate), src/image-validator.ts (ghost, partial, orphaned
// images) and src/image-deleter.ts (an image goes with its children, its
// sha256-* referrer tags and its OCI referrers).

// ghcrCleanupRefs are the refs known; v1 is v1.2.1 upstream.
var ghcrCleanupRefs = map[string]string{"v1": "v1.2.1", "v1.2.1": "v1.2.1"}

// ghcrCleanup is one step using dataaxiom/ghcr-cleanup-action.
type ghcrCleanup struct {
	ghcrBase
	deleteTags, excludeTags    string
	useRegex                   bool
	keepNTagged, keepNUntagged int // -1: unset
	deleteUntagged             bool
	ghost, partial, orphaned   bool
	olderThan                  time.Duration
	olderText, invalid         string
	matchDelete, matchExclude  func(string) bool
}

// newGHCRCleanup reads a step using dataaxiom/ghcr-cleanup-action.
func newGHCRCleanup(st ghcrStep) Policy {
	in := &inputs{with: st.with}
	p := &ghcrCleanup{ghcrBase: newGHCRBase(st)}
	if regexp.MustCompile(`^v1\.[0-9.]+$`).MatchString(st.ref) && st.ref != "v1.2.1" {
		p.model = "v1.2.1"
		p.notes = append(p.notes, "modelled from v1.2.1's source")
	} else {
		p.model = p.version(ghcrCleanupRefs, "v1.2.1")
	}
	in.unknown(p.model, "token owner repository package packages expand-packages delete-tags tags exclude-tags keep-n-untagged keep-n-tagged delete-untagged delete-ghost-images delete-partial-images delete-orphaned-images older-than use-regex validate dry-run log-level registry-url github-api-url")
	p.useRegex = in.boolean("use-regex", false)
	p.readPackages(in)
	p.readSelection(in)
	p.readOlderThan(in)
	p.dryRun = in.boolean("dry-run", false)
	p.notes = append(p.notes, in.notes...)
	if p.invalid != "" {
		p.notes = append(p.notes, "the action rejects its inputs and deletes nothing: "+p.invalid)
	}
	return p
}

// readPackages reads owner and package (or packages); the package
// defaults to the workflow repository's name, unknown here.
func (p *ghcrCleanup) readPackages(in *inputs) {
	if o, ok := in.raw("owner"); ok && !isExpr(o) {
		p.owner = o
	}
	v, ok := in.raw("package")
	if !ok {
		v, ok = in.raw("packages")
	}
	if !ok || isExpr(v) {
		in.note("package is unset (the workflow repository's name) or an expression: applies to every package")
		return
	}
	expand := in.boolean("expand-packages", strings.ContainsAny(v, "*?"))
	if expand && p.useRegex {
		re, err := regexp.Compile(v)
		if err != nil {
			p.invalid = fmt.Sprintf("package %q does not compile", v)
			return
		}
		p.packages = re.MatchString
		return
	}
	names := list(strings.ToLower(v), false)
	pats := globs(names, false)
	p.packages = func(n string) bool {
		if expand {
			return anyGlob(pats, n)
		}
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
}

// readSelection reads what the step deletes and keeps, with
// delete-untagged's default: true when no other delete or keep option is
// set.
func (p *ghcrCleanup) readSelection(in *inputs) {
	p.deleteTags = in.known("tags", "")
	if p.deleteTags == "" {
		p.deleteTags = in.known("delete-tags", "")
	}
	p.excludeTags = in.known("exclude-tags", "")
	p.keepNTagged = p.count(in, "keep-n-tagged")
	p.keepNUntagged = p.count(in, "keep-n-untagged")
	p.ghost = in.boolean("delete-ghost-images", false)
	p.partial = in.boolean("delete-partial-images", false)
	p.orphaned = in.boolean("delete-orphaned-images", false)
	_, set := in.raw("delete-untagged")
	other := false
	for _, k := range []string{"tags", "delete-tags", "delete-ghost-images", "delete-partial-images", "delete-orphaned-images", "keep-n-untagged", "keep-n-tagged"} {
		_, ok := in.raw(k)
		other = other || ok
	}
	p.deleteUntagged = in.boolean("delete-untagged", !other)
	if set && p.keepNUntagged >= 0 {
		p.invalid = "delete-untagged and keep-n-untagged cannot be set at the same time"
	}
	p.matchDelete, p.matchExclude = p.matcher(p.deleteTags, "delete-tags"), p.matcher(p.excludeTags, "exclude-tags")
}

// count reads a keep-n input: -1 when unset.
func (p *ghcrCleanup) count(in *inputs, name string) int {
	v, ok := in.raw(name)
	if !ok {
		return -1
	}
	if isExpr(v) {
		in.note(name + " is an expression: modelled as unset")
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		p.invalid = fmt.Sprintf("%s %q is not a count", name, v)
		return -1
	}
	return n
}

// matcher is delete-tags' or exclude-tags' test: comma-separated
// wildcards, or with use-regex one regular expression (unanchored, as
// RegExp.test is).
func (p *ghcrCleanup) matcher(v, name string) func(string) bool {
	if v == "" {
		return func(string) bool { return false }
	}
	if p.useRegex {
		re, err := regexp.Compile(v)
		if err != nil {
			p.invalid = fmt.Sprintf("%s %q does not compile", name, v)
			return func(string) bool { return false }
		}
		return re.MatchString
	}
	pats := globs(list(v, false), false)
	return func(s string) bool { return anyGlob(pats, s) }
}

// humanIntervalPart is one number and unit of an older-than interval.
var humanIntervalPart = regexp.MustCompile(`(\d+(?:\.\d+)?)?\s*(second|minute|hour|day|week|month|year)s?`)

// humanIntervalUnits are human-interval's units: a month is 30 days, a
// year 365.
var humanIntervalUnits = map[string]time.Duration{
	"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
	"week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour,
}

// humanIntervalUnits are the human-interval package's units: a month is
// 30 days, a year 365.
// readOlderThan reads older-than as the human-interval package does
// ("15 days", "6 months", "1 year 2 weeks").
func (p *ghcrCleanup) readOlderThan(in *inputs) {
	v, ok := in.raw("older-than")
	if !ok {
		return
	}
	if isExpr(v) {
		in.note("older-than is an expression: modelled as unset")
		return
	}
	ms := humanIntervalPart.FindAllStringSubmatch(v, 16)
	if len(ms) == 0 {
		p.invalid = fmt.Sprintf("older-than %q is not an interval", v)
		return
	}
	var d time.Duration
	for _, m := range ms {
		n := 1.0
		if m[1] != "" {
			n, _ = strconv.ParseFloat(m[1], 64)
		}
		d += time.Duration(n * float64(humanIntervalUnits[m[2]]))
	}
	p.olderThan, p.olderText = d, v
}
