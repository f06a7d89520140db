package cleanup

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// ghcrBase is what every GHCR cleanup step has: its name and version, the
// notes on what the model assumed, where it was read, and which packages
// it cleans.
type ghcrBase struct {
	action, ref, model string
	notes              []string
	source             string
	// owner is the package owner, "" when unknown (an expression or the
	// token's user): then Applies matches on the package name alone.
	owner string
	// packages says whether a package name is one the step cleans; nil
	// means every package of the owner (the step's package is unknown).
	packages func(name string) bool
	dryRun   bool
}

// newGHCRBase is the base of a policy read from st.
func newGHCRBase(st ghcrStep) ghcrBase {
	return ghcrBase{action: st.action, ref: st.ref, source: fmt.Sprintf("%s:%d", st.file, st.line)}
}

// Name is the action at its ref, with what the model assumed.
func (b *ghcrBase) Name() string {
	n := b.action + "@" + b.ref
	notes := b.notes
	if b.dryRun {
		notes = append([]string{"dry-run: deletes nothing"}, notes...)
	}
	if len(notes) == 0 {
		return n
	}
	return n + " (" + strings.Join(notes, "; ") + ")"
}

// Source is the step's file:line.
func (b *ghcrBase) Source() string { return b.source }

// Applies says whether the repository ("owner/package", the package name
// possibly holding slashes) is one the step cleans.
func (b *ghcrBase) Applies(repository string) bool {
	owner, pkg, ok := strings.Cut(repository, "/")
	if !ok {
		owner, pkg = "", repository
	}
	if b.owner != "" && owner != "" && !strings.EqualFold(b.owner, owner) {
		return false
	}
	return b.packages == nil || b.packages(strings.ToLower(pkg))
}

// version names the model's version for a ref: the ref itself when it is
// one of known, else latest with a note saying the ref is unknown.
func (b *ghcrBase) version(known map[string]string, latest string) string {
	if v, ok := known[b.ref]; ok {
		return v
	}
	b.notes = append(b.notes, fmt.Sprintf("version unknown: modelled as %s", latest))
	return latest
}

// ghcrVer is one GHCR package version: one manifest, with the tags that
// name it and the times GitHub records.
type ghcrVer struct {
	digest, id       string
	tags             []string
	created, updated time.Time
	m                *Manifest
}

// ghcrVersions lists r's manifests as GitHub lists package versions:
// newest first (created_at, then id, descending). A manifest without a
// created_at (the export lacks it) counts as the newest.
func ghcrVersions(r *Repository) []ghcrVer {
	vs := make([]ghcrVer, 0, len(r.Manifests))
	for _, d := range r.SortedManifests() {
		m := r.Manifests[d]
		vs = append(vs, ghcrVer{digest: d, id: m.ID, tags: r.TagsOf(d), created: m.Pushed, updated: m.Updated, m: m})
	}
	sort.SliceStable(vs, func(i, j int) bool {
		ci, cj := vs[i].created, vs[j].created
		if ci.IsZero() != cj.IsZero() {
			return ci.IsZero() // not in the export: pushed after it was taken
		}
		if !ci.Equal(cj) {
			return ci.After(cj)
		}
		return versionID(vs[i].id) > versionID(vs[j].id)
	})
	return vs
}

// updatedAt is the version's updated_at, or created_at where the export
// has no updated_at.
func (v ghcrVer) updatedAt() time.Time {
	if v.updated.IsZero() {
		return v.created
	}
	return v.updated
}

// glob compiles a shell-style pattern (`*` any run, `?` one character;
// with brackets, `[seq]` and `[!seq]` too, as Python's fnmatch) to an
// anchored regular expression. `*` matches `/` too, as in fnmatch.
func glob(pattern string, brackets bool) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '*':
			b.WriteString(".*")
		case c == '?':
			b.WriteString(".")
		case c == '[' && brackets:
			j := strings.IndexByte(pattern[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			set := pattern[i+1 : i+1+j]
			if strings.HasPrefix(set, "!") {
				set = "^" + set[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(set, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile("^" + regexp.QuoteMeta(pattern) + "$")
	}
	return re
}

// anyGlob says whether s matches one of the patterns.
func anyGlob(patterns []*regexp.Regexp, s string) bool {
	for _, p := range patterns {
		if p.MatchString(s) {
			return true
		}
	}
	return false
}

// globs compiles a list of patterns.
func globs(patterns []string, brackets bool) []*regexp.Regexp {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		out = append(out, glob(p, brackets))
	}
	return out
}

// indexChildOfTagged is a tagged index listing d as a child, or "".
func indexChildOfTagged(r *Repository, d string) string {
	for _, p := range r.Parents(d) {
		if len(r.TagsOf(p)) > 0 {
			return p
		}
	}
	return ""
}

// reversed returns vs oldest first.
func reversed(vs []ghcrVer) []ghcrVer {
	out := make([]ghcrVer, len(vs))
	for i, v := range vs {
		out[len(vs)-1-i] = v
	}
	return out
}
