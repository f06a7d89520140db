package admission

import (
	"strings"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// wildcard reports whether s matches pattern as Kyverno's imageReferences
// do (github.com/IGLOU-EU/go-wildcard, which Kyverno's ext/wildcard
// wraps): "*" matches any run of characters, "/" included, "?" exactly
// one, over the whole string; everything else is literal.
func wildcard(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	// match[j]: pattern[:i] matches s[:j], row by row.
	match := make([]bool, len(s)+1)
	match[0] = true
	for i := 0; i < len(pattern); i++ {
		next := make([]bool, len(s)+1)
		switch pattern[i] {
		case '*':
			seen := false
			for j := 0; j <= len(s); j++ {
				seen = seen || match[j]
				next[j] = seen
			}
		default:
			for j := 1; j <= len(s); j++ {
				next[j] = match[j-1] && (pattern[i] == '?' || pattern[i] == s[j-1])
			}
		}
		match = next
	}
	return match[len(s)]
}

// kyvernoNames are the names Kyverno matches a use's image against: the
// one name Kyverno makes of the image as the use wrote it
// (imageref.KyvernoName: "nginx" is docker.io/nginx:latest, never
// docker.io/library/nginx), or, where the use does not say how it was
// written (a result read back, the watcher), every name the normalised
// reference may have been written as.
func kyvernoNames(u types.Use, ref imageref.Ref) []string {
	if u.Written != "" {
		if n, err := imageref.KyvernoName(u.Written); err == nil {
			return []string{n}
		}
	}
	return ref.KyvernoNames()
}

// kyvernoMatches reports whether any of patterns matches any of names as
// Kyverno's wildcard does (wildcard).
func kyvernoMatches(patterns []string, names []string) bool {
	for _, n := range names {
		for _, p := range patterns {
			if wildcard(p, n) {
				return true
			}
		}
	}
	return false
}

// MaxGlobLength bounds a ClusterImagePolicy glob regcheck matches: a
// longer one (no image name is longer than 4,096 bytes) matches nothing
// and is said once, where a 2 MB glob compiled as a regular expression
// cost 13 s and 1.25 GB, and a larger one panicked.
const MaxGlobLength = 4096

// validGlob reports whether glob uses only the characters
// policy-controller accepts (pkg/apis/glob: [a-zA-Z0-9-_:/*.@]).
func validGlob(glob string) bool {
	if glob == "" {
		return false
	}
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-_:/*.@", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// globMatch reports whether name matches a ClusterImagePolicy's
// images[].glob as policy-controller reads it (pkg/apis/glob): "*"
// matches within one path element, "**" across "/", over the whole name;
// "*" alone means index.docker.io/library/* and "*/*"
// index.docker.io/*/*. A glob with other characters, or longer than
// MaxGlobLength, matches nothing. It matches without regular expressions,
// in time proportional to len(glob)×len(name) and no more memory than
// the name's length.
func globMatch(glob, name string) bool {
	switch glob {
	case "*/*":
		glob = "index.docker.io/*/*"
	case "*":
		glob = "index.docker.io/library/*"
	}
	if len(glob) > MaxGlobLength || !validGlob(glob) {
		return false
	}
	// match[j]: the glob read so far matches name[:j].
	match := make([]bool, len(name)+1)
	next := make([]bool, len(name)+1)
	match[0] = true
	for i := 0; i < len(glob); i++ {
		clear(next)
		switch {
		case strings.HasPrefix(glob[i:], "**"):
			seen := false
			for j := 0; j <= len(name); j++ {
				seen = seen || match[j]
				next[j] = seen
			}
			for i+1 < len(glob) && glob[i+1] == '*' {
				i++ // "***" reads as "**" then "*", which adds nothing to it
			}
		case glob[i] == '*':
			for j := 0; j <= len(name); j++ {
				next[j] = match[j] || j > 0 && next[j-1] && name[j-1] != '/'
			}
		default:
			for j := 1; j <= len(name); j++ {
				next[j] = match[j-1] && glob[i] == name[j-1]
			}
		}
		match, next = next, match
	}
	return match[len(name)]
}

// globMatches reports whether any of globs matches ref as
// policy-controller reads them: on ref.Name() alone
// (imageref.PolicyControllerName; pkg/webhook/validator.go calls
// GetMatchingPolicies(ref.Name(), ...)), so an image with a tag and a
// digest is matched on repository@digest, never on its tag.
func globMatches(globs []string, ref imageref.Ref) bool {
	n := ref.PolicyControllerName()
	for _, g := range globs {
		if globMatch(g, n) {
			return true
		}
	}
	return false
}
