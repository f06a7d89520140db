package artifacts

import (
	"cmp"
	"slices"

	"github.com/regcheck/regcheck/types"
)

// sort orders the artifacts by kind, subject, layout, ref.
func (s *Set) sort() {
	slices.SortFunc(s.Artifacts, func(a, b Artifact) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Subject, b.Subject),
			cmp.Compare(a.Layout, b.Layout), cmp.Compare(a.Ref, b.Ref), cmp.Compare(a.Digest, b.Digest))
	})
	slices.SortFunc(s.Faults, func(a, b types.Finding) int {
		return cmp.Or(cmp.Compare(a.Digest, b.Digest), cmp.Compare(a.Platform, b.Platform), cmp.Compare(a.Message, b.Message))
	})
}

// Query says which artifacts a requirement is met by.
type Query struct {
	Kind Kind
	// Subject is the digest the artifact must be about; "" is the Set's
	// Image (what cosign verify and admission controllers check for the
	// digest a pod names).
	Subject string
	// PredicateType, for an attestation, is the in-toto predicate type it
	// must carry; "" accepts any. An attestation whose manifest names no
	// predicate type meets any query (regcheck cannot tell).
	PredicateType string
	// Layouts, when set, are the layouts that count: a policy that reads
	// cosign's tags ([CosignTag]) is not met by a bundle referrer, one
	// that reads bundles ([ReferrersAPI, ReferrersTag]) not by a .sig tag.
	Layouts []Layout
}

// Presence is whether a Set holds what a Query asks for.
type Presence string

// Presences.
const (
	// Present: at least one matching artifact is whole.
	Present Presence = "present"
	// Missing: the registry proved every place looked at holds no whole
	// matching artifact; none was hidden by a fault.
	Missing Presence = "missing"
	// Unknown: no whole matching artifact was found, but a fault (of the
	// search, or of a matching artifact's walk) may hide one.
	Unknown Presence = "unknown"
)

// Presence says whether the Set holds a whole artifact q asks for.
func (s Set) Presence(q Query) Presence {
	subject := cmp.Or(q.Subject, s.Image)
	hidden := false
	for _, f := range s.Faults {
		if f.Digest == "" || f.Digest == subject {
			hidden = true
		}
	}
	for _, a := range s.Match(q) {
		if a.Whole {
			return Present
		}
		for _, f := range a.Findings {
			if f.Code.Fault() {
				hidden = true
			}
		}
	}
	if hidden {
		return Unknown
	}
	return Missing
}

// Match returns the artifacts q asks for, whole or not.
func (s Set) Match(q Query) []Artifact {
	subject := cmp.Or(q.Subject, s.Image)
	var out []Artifact
	for _, a := range s.Artifacts {
		if a.Kind != q.Kind || a.Subject != subject || len(q.Layouts) > 0 && !slices.Contains(q.Layouts, a.Layout) {
			continue
		}
		if q.PredicateType != "" && len(a.PredicateTypes) > 0 && !slices.Contains(a.PredicateTypes, q.PredicateType) {
			continue
		}
		out = append(out, a)
	}
	return out
}
