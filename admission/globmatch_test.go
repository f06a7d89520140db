package admission

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// globRegexp is policy-controller's own construction (pkg/apis/glob,
// Compile): the reference globMatch is held to.
func globRegexp(glob string) *regexp.Regexp {
	switch glob {
	case "*/*":
		glob = "index.docker.io/*/*"
	case "*":
		glob = "index.docker.io/library/*"
	}
	if !regexp.MustCompile(`^[a-zA-Z0-9-_:/*.@]+$`).MatchString(glob) {
		return nil
	}
	g := strings.ReplaceAll(glob, ".", `\.`)
	g = strings.ReplaceAll(g, "**", "#")
	g = strings.ReplaceAll(g, "*", "[^/]*")
	g = strings.ReplaceAll(g, "#", ".*")
	return regexp.MustCompile("^" + g + "$")
}

// globMatch answers as policy-controller's regular expression does, on
// the awkward cases and on random globs and names over the glob alphabet.
func TestGlobMatchAgreesWithPolicyController(t *testing.T) {
	globs := []string{"*", "*/*", "**", "index.docker.io/library/*", "ghcr.io/org/*", "ghcr.io/org/**", "ghcr.io/**/app*",
		"*.io/**", "***", "a**b", "a*b*c", "ghcr.io/org/app:v1", "ghcr.io/org/app@sha256:*", "bad glob", "", "a?b"}
	names := []string{"index.docker.io/library/nginx:latest", "index.docker.io/org/app:1", "ghcr.io/org/app:v1",
		"ghcr.io/org/team/app:v1", "ghcr.io/org/app@sha256:" + strings.Repeat("a", 64), "a/b", "ab", "a", "", "aXbYc", "a/b/c"}
	check := func(g, n string) {
		want := false
		if re := globRegexp(g); re != nil {
			want = re.MatchString(n)
		}
		if got := globMatch(g, n); got != want {
			t.Errorf("globMatch(%q, %q) = %v, policy-controller's regexp says %v", g, n, got, want)
		}
	}
	for _, g := range globs {
		for _, n := range names {
			check(g, n)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab/*.:"
	word := func(max int) string {
		b := make([]byte, rng.IntN(max))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20_000 {
		n := strings.ReplaceAll(word(10), "*", "c")
		check(word(8), n)
	}
}

// A glob past MaxGlobLength matches nothing, at once: a 2 MB glob was a
// 1.25 GB regular expression, a larger one a panic.
func TestGlobMatchLong(t *testing.T) {
	long := strings.Repeat("a*", 1<<20)
	start := time.Now()
	if globMatch(long, "aaaa") {
		t.Error("a glob past the limit matched")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Logf("took %s", d) // a figure, not an assert: the point is no panic
	}
	atLimit := strings.Repeat("*", MaxGlobLength-1) + "a"
	if !globMatch(atLimit, "index.docker.io/library/a") && !globMatch(atLimit, "a") {
		t.Error("a glob at the limit is not read")
	}
}

// A ClusterImagePolicy with a glob past the limit is an input problem
// naming the field, not a rule that silently matches nothing.
func TestReadFilesLongGlob(t *testing.T) {
	dir := t.TempDir()
	body := "apiVersion: policy.sigstore.dev/v1beta1\nkind: ClusterImagePolicy\nmetadata: {name: long}\nspec:\n  images:\n  - glob: '" +
		strings.Repeat("a*", 1<<20) + "'\n  authorities: [{key: {data: k}}]\n"
	if err := os.WriteFile(filepath.Join(dir, "long.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, problems := ReadFiles([]string{dir})
	if len(ps.Rules) != 0 || len(problems) != 1 || !strings.Contains(problems[0].Message, "spec.images[0].glob") {
		t.Fatalf("rules %d, problems %+v; want the glob named as a problem", len(ps.Rules), problems)
	}
}
