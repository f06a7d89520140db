package cleanup

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxAlternatives bounds what a pattern's {a,b} groups may stand for: 30
// groups of two stand for 2^30 patterns, which expanded would not fit in
// memory. A pattern standing for more is refused, naming it.
const maxAlternatives = 1024

// errUnclosedBrace is what a pattern with a { never closed gets.
var errUnclosedBrace = errors.New("a { is never closed")

// errTooManyAlternatives is what a pattern standing for more than
// maxAlternatives patterns gets.
var errTooManyAlternatives = fmt.Errorf("its {a,b} groups stand for more than %d patterns", maxAlternatives)

// checkPattern says whether Harbor's doublestar could match with pattern:
// braces closed, every class and escape well formed, and at most
// maxAlternatives patterns in its braces. The error names the pattern.
func checkPattern(pattern string) error {
	budget := maxAlternatives
	alts, err := expandBraces(pattern, &budget)
	if errors.Is(err, errUnclosedBrace) {
		return fmt.Errorf("pattern %q: %w (doublestar, which Harbor matches with, refuses it too)", pattern, err)
	}
	if err != nil {
		return fmt.Errorf("pattern %q: %w", pattern, err)
	}
	for _, a := range alts {
		for _, seg := range strings.Split(a, "/") {
			if seg == "**" {
				continue
			}
			if _, err := path.Match(strings.ReplaceAll(seg, "[!", "[^"), ""); err != nil {
				return fmt.Errorf("pattern %q: %w (doublestar, which Harbor matches with, refuses it too)", pattern, err)
			}
		}
	}
	return nil
}

// doublestarMatch matches name against a Harbor selector pattern with the
// semantics Harbor takes from github.com/bmatcuk/doublestar (v1): '/'
// separates path segments; `**` as a whole segment matches zero or more
// segments; within a segment `*` matches any run of characters, `?` one
// character, `[...]` a class (`[!...]` or `[^...]` negated), `\` escapes;
// `{a,b}` matches either alternative (and may nest). An empty pattern
// matches everything, as Harbor's selector says. Written from that
// description, not from the library.
func doublestarMatch(pattern, name string) (bool, error) {
	if pattern == "" {
		return true, nil
	}
	budget := maxAlternatives
	alts, err := expandBraces(pattern, &budget)
	if err != nil {
		return false, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	for _, a := range alts {
		ok, err := matchSegments(strings.Split(a, "/"), strings.Split(name, "/"))
		if err != nil {
			return false, fmt.Errorf("pattern %q: %w", pattern, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// matchSegments matches path segments, `**` taking zero or more.
func matchSegments(pat, name []string) (bool, error) {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(name); i++ {
				ok, err := matchSegments(rest, name[i:])
				if ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		if len(name) == 0 {
			return false, nil
		}
		seg := strings.ReplaceAll(pat[0], "[^", "[!")
		seg = strings.ReplaceAll(seg, "[!", "[^")
		ok, err := path.Match(seg, name[0])
		if err != nil || !ok {
			return false, err
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0, nil
}

// expandBraces returns the patterns {a,b} alternatives stand for, failing
// once more than *budget would be returned (the budget spent as they are).
func expandBraces(p string, budget *int) ([]string, error) {
	open := -1
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		if p[i] == '{' {
			open = i
			break
		}
	}
	if open < 0 {
		if *budget--; *budget < 0 {
			return nil, errTooManyAlternatives
		}
		return []string{p}, nil
	}
	depth, start := 0, open+1
	var alts []string
	for i := open; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case ',':
			if depth == 1 {
				alts = append(alts, p[start:i])
				start = i + 1
			}
		case '}':
			depth--
			if depth == 0 {
				alts = append(alts, p[start:i])
				var out []string
				for _, a := range alts {
					more, err := expandBraces(p[:open]+a+p[i+1:], budget)
					if err != nil {
						return nil, err
					}
					out = append(out, more...)
				}
				return out, nil
			}
		}
	}
	return nil, errUnclosedBrace
}
