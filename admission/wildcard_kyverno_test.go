package admission

import (
	"math/rand/v2"
	"strings"
	"testing"

	kyvernowildcard "github.com/IGLOU-EU/go-wildcard"
)

// TestWildcardMatchesKyvernos holds regcheck's wildcard (a linear
// dynamic programme) to the module Kyverno itself matches with
// (github.com/IGLOU-EU/go-wildcard v1.0.3, in kyverno/kyverno's go.mod;
// its Match backs Kyverno's imageReferences, kinds and namespaces): the
// same answer on every pair. The module is the oracle only: its matcher
// recurses on each '*' and takes exponential time on a pattern such as
// "*a*a*a*a*a*a*a*a*b", which a policy file must not be able to cost
// regcheck.
func TestWildcardMatchesKyvernos(t *testing.T) {
	const alphabet = "ab/:.*?"
	r := rand.New(rand.NewPCG(1, 2))
	word := func(n int, chars string) string {
		var b strings.Builder
		for range r.IntN(n + 1) {
			b.WriteByte(chars[r.IntN(len(chars))])
		}
		return b.String()
	}
	pairs := [][2]string{
		{"", ""}, {"", "a"}, {"*", ""}, {"?", ""}, {"**", "ab"}, {"a?", "a"}, {"?*", "a"},
		{"ghcr.io/kyverno/*:v?", "ghcr.io/kyverno/app:v10"}, {"docker.io/*", "docker.io/nginx:latest"},
	}
	for range 20_000 {
		pairs = append(pairs, [2]string{word(8, alphabet), word(10, "ab/:.")})
	}
	for _, p := range pairs {
		if got, want := wildcard(p[0], p[1]), kyvernowildcard.Match(p[0], p[1]); got != want {
			t.Errorf("wildcard(%q, %q) = %v, Kyverno's go-wildcard says %v", p[0], p[1], got, want)
		}
	}
}
