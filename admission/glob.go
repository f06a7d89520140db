package admission

import (
	"regexp"
	"strings"
	"sync"

	"github.com/regcheck/regcheck/imageref"
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

// kyvernoMatches reports whether any of patterns matches ref as Kyverno
// reads them.
func kyvernoMatches(patterns []string, ref imageref.Ref) bool {
	for _, n := range ref.KyvernoNames() {
		for _, p := range patterns {
			if wildcard(p, n) {
				return true
			}
		}
	}
	return false
}

var (
	globMu    sync.Mutex
	globCache = map[string]*regexp.Regexp{}
	validGlob = regexp.MustCompile(`^[a-zA-Z0-9-_:/*.@]+$`)
)

// compileGlob reads a ClusterImagePolicy's images[].glob as
// policy-controller does (pkg/apis/glob): "*" matches within one path
// element, "**" across "/", the whole name; "*" alone means
// index.docker.io/library/* and "*/*" index.docker.io/*/*. A glob with
// other characters matches nothing.
func compileGlob(glob string) *regexp.Regexp {
	globMu.Lock()
	defer globMu.Unlock()
	if re, ok := globCache[glob]; ok {
		return re
	}
	g := glob
	switch g {
	case "*/*":
		g = "index.docker.io/*/*"
	case "*":
		g = "index.docker.io/library/*"
	}
	var re *regexp.Regexp
	if validGlob.MatchString(g) {
		g = strings.ReplaceAll(g, ".", `\.`)
		g = strings.ReplaceAll(g, "**", "#")
		g = strings.ReplaceAll(g, "*", "[^/]*")
		g = strings.ReplaceAll(g, "#", ".*")
		re = regexp.MustCompile("^" + g + "$")
	}
	globCache[glob] = re
	return re
}

// globMatches reports whether any of globs matches ref as
// policy-controller reads them.
func globMatches(globs []string, ref imageref.Ref) bool {
	for _, n := range ref.PolicyControllerNames() {
		for _, g := range globs {
			if re := compileGlob(g); re != nil && re.MatchString(n) {
				return true
			}
		}
	}
	return false
}
