package mirrorsets

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// The kinds of mirror set objects.
const (
	// KindIDMS is config.openshift.io/v1 ImageDigestMirrorSet.
	KindIDMS = "ImageDigestMirrorSet"
	// KindITMS is config.openshift.io/v1 ImageTagMirrorSet.
	KindITMS = "ImageTagMirrorSet"
	// KindICSP is operator.openshift.io/v1alpha1 ImageContentSourcePolicy.
	KindICSP = "ImageContentSourcePolicy"
)

// The pull-from-mirror values the MCO writes (sysregistriesv2).
const (
	digestOnly = "digest-only"
	tagOnly    = "tag-only"
)

// Rule is one entry of a mirror set: a source and its mirrors in the
// order given.
type Rule struct {
	Source  string
	Mirrors []string
	// NeverContactSource is mirrorSourcePolicy: NeverContactSource (IDMS and
	// ITMS only; an ICSP has no policy).
	NeverContactSource bool
}

// Object is one mirror set object.
type Object struct {
	// Kind is KindIDMS, KindITMS or KindICSP.
	Kind string
	Name string
	// Rules are its imageDigestMirrors, imageTagMirrors or
	// repositoryDigestMirrors.
	Rules []Rule
}

// Sets is what the MCO renders registries.conf from.
type Sets struct {
	Objects []Object
	// Insecure are the scopes of images.config.openshift.io/cluster
	// spec.registrySources.insecureRegistries.
	Insecure []string
}

// Empty reports whether the sets hold no mirror and no insecure scope: the
// rendered file would change nothing.
func (s Sets) Empty() bool {
	if len(s.Insecure) > 0 {
		return false
	}
	for _, o := range s.Objects {
		for _, r := range o.Rules {
			if realMirror(r) {
				return false
			}
		}
	}
	return true
}

type confMirror struct {
	Location       string `toml:"location"`
	Insecure       bool   `toml:"insecure,omitempty"`
	PullFromMirror string `toml:"pull-from-mirror"`
}

type confRegistry struct {
	Prefix   string       `toml:"prefix,omitempty"`
	Location string       `toml:"location,omitempty"`
	Insecure bool         `toml:"insecure,omitempty"`
	Blocked  bool         `toml:"blocked,omitempty"`
	Mirrors  []confMirror `toml:"mirror,omitempty"`
}

type confFile struct {
	Registries []confRegistry `toml:"registry"`
}

// Render is the registries.conf (v2) the MCO writes for s: its
// [[registry]] tables only (the MCO's base file adds search registries,
// which a fully qualified reference never uses).
func Render(s Sets) ([]byte, error) {
	var regs []confRegistry
	for _, family := range []struct {
		kinds []string
		pull  string
	}{{[]string{KindIDMS, KindICSP}, digestOnly}, {[]string{KindITMS}, tagOnly}} {
		merged, err := merge(s.Objects, family.kinds)
		if err != nil {
			return nil, err
		}
		for _, m := range merged {
			reg := entry(&regs, m.source)
			reg.Blocked = reg.Blocked || m.never
			for _, loc := range m.mirrors {
				reg.Mirrors = append(reg.Mirrors, confMirror{Location: loc, PullFromMirror: family.pull})
			}
		}
	}
	for _, scope := range s.Insecure {
		markInsecure(&regs, scope)
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(confFile{Registries: regs}); err != nil {
		return nil, fmt.Errorf("rendering registries.conf: %w", err)
	}
	return buf.Bytes(), nil
}

// entry is getRegistryEntry: the [[registry]] of scope, added when there
// is none (prefix for a wildcard, location otherwise).
func entry(regs *[]confRegistry, scope string) *confRegistry {
	for i := range *regs {
		if scopeOf(&(*regs)[i]) == scope {
			return &(*regs)[i]
		}
	}
	reg := confRegistry{Location: scope}
	if strings.HasPrefix(scope, "*.") {
		reg = confRegistry{Prefix: scope}
	}
	*regs = append(*regs, reg)
	return &(*regs)[len(*regs)-1]
}

func scopeOf(reg *confRegistry) string {
	if reg.Prefix != "" {
		return reg.Prefix
	}
	return reg.Location
}

// markInsecure is EditRegistriesConfig's insecureScopes loop.
func markInsecure(regs *[]confRegistry, scope string) {
	entry(regs, scope).Insecure = true
	for i := range *regs {
		reg := &(*regs)[i]
		if nested(scopeOf(reg), scope) {
			reg.Insecure = true
		}
		for j := range reg.Mirrors {
			if nested(reg.Mirrors[j].Location, scope) {
				reg.Mirrors[j].Insecure = true
			}
		}
	}
}

// nested is ScopeIsNestedInsideScope.
func nested(sub, super string) bool {
	if sub == super {
		return true
	}
	if len(sub) > len(super) && strings.HasPrefix(sub, super) && sub[len(super)] == '/' {
		return true
	}
	if !strings.HasPrefix(super, "*.") {
		return false
	}
	if host, _, ok := strings.Cut(sub, ":"); ok {
		return strings.HasSuffix(host, super[1:]) && !strings.Contains(host, "/")
	}
	host, _, _ := strings.Cut(sub, "/")
	return strings.HasSuffix(host, super[1:])
}

// mergedSet is one source's merged mirrors.
type mergedSet struct {
	source  string
	mirrors []string
	never   bool
}

func realMirror(r Rule) bool {
	for _, m := range r.Mirrors {
		if m != r.Source {
			return true
		}
	}
	return false
}

// merge is mergedDigestMirrorSets / mergedTagMirrorSets: the rules of the
// objects of kinds, one set per source, sources sorted.
func merge(objs []Object, kinds []string) ([]mergedSet, error) {
	chains := map[string][][]string{}
	never := map[string]bool{}
	for _, o := range objs {
		if !contains(kinds, o.Kind) {
			continue
		}
		for _, r := range o.Rules {
			if !realMirror(r) {
				continue // addMirrorSet: not a mirror set; its policy ignored
			}
			chains[r.Source] = append(chains[r.Source], r.Mirrors)
			never[r.Source] = never[r.Source] || r.NeverContactSource
		}
	}
	sources := make([]string, 0, len(chains))
	for s := range chains {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	out := make([]mergedSet, 0, len(sources))
	for _, s := range sources {
		mirrors, err := mergedMirrors(s, chains[s])
		if err != nil {
			return nil, fmt.Errorf("merging the mirrors of %s: %w", s, err)
		}
		out = append(out, mergedSet{source: s, mirrors: mirrors, never: never[s]})
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mergedMirrors is mirrorSets.mergedMirrors: each chain's mirrors in order,
// then the source when the chain lacks it, sorted topologically; the
// source dropped when last.
func mergedMirrors(source string, chains [][]string) ([]string, error) {
	g := newTopo()
	for _, c := range chains {
		for i := 0; i+1 < len(c); i++ {
			g.edge(c[i], c[i+1])
		}
		if !contains(c, source) {
			g.edge(c[len(c)-1], source)
		}
	}
	sorted, err := g.sorted()
	if err != nil {
		return nil, err
	}
	if n := len(sorted); n > 0 && sorted[n-1] == source {
		sorted = sorted[:n-1]
	}
	return sorted, nil
}
