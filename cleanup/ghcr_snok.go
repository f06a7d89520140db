package cleanup

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// snok/container-retention-policy, modelled from its own source: main.py
// of v1.5.1, v2.0.0, v2.1.0, v2.1.3 and v2.2.1 (Python), and
// src/core/select_package_versions.rs, src/core/select_packages.rs,
// src/matchers.rs and (v3.1.0) src/core/filter_out_multi_arch_children.rs
// of v3.0.1 and v3.1.0 (Rust). Its generations differ in how they keep:
//
//   - v1: keep-at-least skips the newest N versions before any filter.
//   - v2.0.0 to v2.1.2: keep-at-least spares the newest N candidates.
//   - v2.1.3 and v2.2.x (v2): keep-at-least keeps a version while fewer than N
//     newer versions (deleted ones aside) remain, and then overrides
//     filter-tags.
//   - v3.0.x: cut-off is a duration, tag-selection picks tagged/untagged,
//     keep-n-most-recent keeps the newest N tagged candidates; the children
//     of a kept multi-arch image are untagged versions and go.
//   - v3.1.0: the children of every kept tagged version are protected.
//
// Dry runs (dry-run: true, from v2.1.0) delete nothing.

// snok generations.
const (
	snokV1   = "v1.5.1"
	snokV20  = "v2.0.1"
	snokV21  = "v2.1.2"
	snokV213 = "v2.2.1"
	snokV30  = "v3.0.1"
	snokV31  = "v3.1.0"
)

// snokRef maps a ref to the generation whose behaviour it runs; the
// floating v1 and v2 tags point at v1.5.1 and v2.2.1 upstream. There is
// no floating v3 tag.
func snokRef(ref string) (string, bool) {
	switch {
	case regexp.MustCompile(`^v1(\.\d+)*$`).MatchString(ref):
		return snokV1, true
	case regexp.MustCompile(`^v2\.0(\.\d+)?$`).MatchString(ref):
		return snokV20, true
	case regexp.MustCompile(`^v2\.1\.[012]$`).MatchString(ref):
		return snokV21, true
	case regexp.MustCompile(`^v2(\.1(\.3)?|\.2(\.\d+)?)?$`).MatchString(ref):
		return snokV213, true
	case regexp.MustCompile(`^v?3\.0\.\d+(-[a-z0-9]+)?$`).MatchString(ref):
		return snokV30, true
	case ref == "v3.1.0":
		return snokV31, true
	}
	return "", false
}

// snok is one step using snok/container-retention-policy.
type snok struct {
	ghcrBase
	cut        snokCutOff
	useCreated bool
	// v1, v2
	untaggedOnly, includeUntagged bool
	skipTags, filterTags          []*regexp.Regexp
	keepAtLeast                   int
	// v3
	tagsPos, tagsNeg []*regexp.Regexp
	imageTags        string
	shas             map[string]bool
	selection        string
	keepN            int
	invalid          string
}

// newSnok reads a step using snok/container-retention-policy.
func newSnok(st ghcrStep) Policy {
	in := &inputs{with: st.with}
	p := &snok{ghcrBase: newGHCRBase(st), shas: map[string]bool{}}
	gen, ok := snokRef(st.ref)
	if !ok {
		gen = snokV31
		if _, v2 := st.with["account-type"]; v2 {
			gen = snokV213
		}
		p.notes = append(p.notes, "version unknown: modelled as "+gen)
	}
	p.model = gen
	in.unknown(gen, snokInputs(gen))
	p.useCreated = in.known("timestamp-to-use", "updated_at") == "created_at"
	if p.v3() {
		p.readV3(in)
	} else {
		p.readV2(in)
	}
	p.notes = append(p.notes, in.notes...)
	if p.invalid != "" {
		p.notes = append(p.notes, "the action rejects its inputs and deletes nothing: "+p.invalid)
	}
	return p
}

// snokInputs are the inputs a generation's action.yml declares (dry-run
// for v1 and v2.0 too: their missing dry-run is noted apart).
func snokInputs(gen string) string {
	switch gen {
	case snokV30, snokV31:
		return "account token cut-off image-names image-tags skip-shas tag-selection keep-n-most-recent timestamp-to-use dry-run rust-log"
	case snokV1:
		return "account-type org-name image-names timestamp-to-use cut-off token untagged-only skip-tags keep-at-least filter-tags filter-include-untagged dry-run"
	}
	return "account-type org-name image-names timestamp-to-use cut-off token untagged-only skip-tags keep-at-least filter-tags filter-include-untagged dry-run token-type"
}

// v3 says whether the model is a v3 (Rust) release.
func (p *snok) v3() bool { return p.model == snokV30 || p.model == snokV31 }

// readV3 reads v3's inputs: account, image-names, cut-off, image-tags,
// skip-shas, tag-selection, keep-n-most-recent, dry-run.
func (p *snok) readV3(in *inputs) {
	if a, ok := in.raw("account"); ok && a != "user" && !isExpr(a) {
		p.owner = a
	}
	p.readNames(in, true)
	if c, ok := in.raw("cut-off"); ok && !isExpr(c) {
		d, err := parseHumantime(c)
		if err != nil {
			p.invalid = err.Error()
		}
		p.cut = snokCutOff{text: c, dur: d}
	} else {
		p.cut = snokCutOff{text: "0"}
		in.note("cut-off is unset or an expression: modelled as 0")
	}
	p.imageTags = in.known("image-tags", "")
	for _, t := range list(p.imageTags, true) {
		if neg, ok := strings.CutPrefix(t, "!"); ok {
			p.tagsNeg = append(p.tagsNeg, glob(neg, false))
		} else {
			p.tagsPos = append(p.tagsPos, glob(t, false))
		}
	}
	for _, s := range list(in.known("skip-shas", ""), true) {
		if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(s) {
			p.invalid = fmt.Sprintf("skip-shas %q is not a sha256 digest", s)
		}
		p.shas[s] = true
	}
	p.selection = in.known("tag-selection", "both")
	if p.selection != "both" && p.selection != "tagged" && p.selection != "untagged" {
		p.invalid = fmt.Sprintf("tag-selection %q is none of tagged, untagged, both", p.selection)
	}
	p.keepN = in.integer("keep-n-most-recent", 0)
	if p.keepN < 0 {
		// main.rs reads it as a u32: clap refuses a negative value.
		p.invalid = fmt.Sprintf("keep-n-most-recent %d is not a count (the action reads an unsigned number)", p.keepN)
		p.keepN = 0
	}
	p.dryRun = in.boolean("dry-run", false)
}

// readV2 reads v1's and v2's inputs: account-type, org-name, image-names,
// cut-off, untagged-only, skip-tags, keep-at-least, filter-tags,
// filter-include-untagged, dry-run (from v2.1.0).
func (p *snok) readV2(in *inputs) {
	if in.known("account-type", "") == "org" {
		if o, ok := in.raw("org-name"); ok && !isExpr(o) {
			p.owner = o
		}
	}
	p.readNames(in, false)
	p.readDateCutOff(in)
	p.untaggedOnly = in.boolean("untagged-only", false)
	p.skipTags = globs(list(in.known("skip-tags", ""), false), true)
	p.filterTags = globs(list(in.known("filter-tags", ""), false), true)
	p.includeUntagged = in.boolean("filter-include-untagged", true)
	p.keepAtLeast = in.integer("keep-at-least", 0)
	if p.keepAtLeast < 0 {
		p.invalid = "keep-at-least is negative"
	}
	if p.model == snokV1 || p.model == snokV20 {
		if in.boolean("dry-run", false) {
			in.note(p.model + " has no dry-run input: ignored, the step deletes")
		}
		return
	}
	p.dryRun = in.boolean("dry-run", false)
}

// readDateCutOff reads a v1/v2 cut-off ("2 days ago UTC").
func (p *snok) readDateCutOff(in *inputs) {
	c, ok := in.raw("cut-off")
	if !ok || isExpr(c) {
		p.cut = snokCutOff{text: "0"}
		in.note("cut-off is unset or an expression: modelled as now")
		return
	}
	cut, read, err := parseDateparser(c)
	switch {
	case err != nil:
		p.invalid = err.Error()
	case !read:
		in.note(fmt.Sprintf("cut-off %q is not a form the model reads: modelled as now", c))
		cut = snokCutOff{text: c}
	}
	p.cut = cut
}

// readNames reads image-names: v3's wildcards with !negations, split on
// commas and spaces; v1/v2's fnmatch patterns, split on commas.
func (p *snok) readNames(in *inputs, v3 bool) {
	v, ok := in.raw("image-names")
	if !ok || isExpr(v) {
		in.note("image-names is unset or an expression: applies to every package")
		return
	}
	var pos, neg []*regexp.Regexp
	for _, n := range list(v, v3) {
		if s, ok := strings.CutPrefix(n, "!"); ok && v3 {
			neg = append(neg, glob(strings.ToLower(s), false))
		} else {
			pos = append(pos, glob(strings.ToLower(n), !v3))
		}
	}
	p.packages = func(name string) bool {
		return !anyGlob(neg, name) && (len(pos) == 0 || anyGlob(pos, name))
	}
}

// Run is one run of the step over r at at.
func (p *snok) Run(r *Repository, at time.Time) Plan {
	if p.invalid != "" || p.dryRun {
		return Plan{}
	}
	if p.v3() {
		return p.runV3(r, at)
	}
	return p.runV2(r, at)
}

// stamp is the timestamp the cut-off is held against (timestamp-to-use).
func (p *snok) stamp(v ghcrVer) time.Time {
	if p.useCreated {
		return v.created
	}
	if p.v3() {
		return v.updatedAt()
	}
	return v.updated
}

// tsName names the timestamp for rules.
func (p *snok) tsName() string {
	if p.useCreated {
		return "created_at"
	}
	return "updated_at"
}
