package protect

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultPrefix is the keep-tags' default prefix.
const DefaultPrefix = "regcheck-keep-"

// tagGrammar is the distribution spec's tag grammar.
var tagGrammar = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// shortDigest is how many hex digits of the digest a keep-tag carries.
const shortDigest = 16

// TagName is the keep-tag for digest: prefix, owner (characters outside
// the tag grammar become '-', cut so that the whole fits 128 characters),
// '-', then the first 16 hex digits of the digest. An error means the
// prefix cannot start a tag or leaves no room.
func TagName(prefix, owner, digest string) (string, error) {
	_, hex, ok := strings.Cut(digest, ":")
	if !ok || len(hex) < shortDigest {
		return "", fmt.Errorf("digest %q: want algorithm:hex", digest)
	}
	suffix := "-" + hex[:shortDigest]
	if owner == "" {
		owner = "default"
	}
	owner = sanitize(owner)
	if room := 128 - len(prefix) - len(suffix); room < 1 {
		return "", fmt.Errorf("tag prefix %q is too long: a tag has at most 128 characters", prefix)
	} else if len(owner) > room {
		owner = owner[:room]
	}
	tag := prefix + owner + suffix
	if !tagGrammar.MatchString(tag) {
		return "", fmt.Errorf("tag prefix %q: a tag is [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}", prefix)
	}
	return tag, nil
}

// sanitize maps every character outside the tag grammar to '-'.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, s)
}
