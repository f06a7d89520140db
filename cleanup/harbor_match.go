package cleanup

import (
	"fmt"
	"path"
	"strings"
)

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
	alts, err := expandBraces(pattern)
	if err != nil {
		return false, err
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

// expandBraces returns the patterns {a,b} alternatives stand for.
func expandBraces(p string) ([]string, error) {
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
					more, err := expandBraces(p[:open] + a + p[i+1:])
					if err != nil {
						return nil, err
					}
					out = append(out, more...)
				}
				return out, nil
			}
		}
	}
	return nil, fmt.Errorf("pattern %q has an unclosed {", p)
}
