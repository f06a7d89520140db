// Package printable makes text from outside (registries, files, clusters)
// safe to show: every character that could drive a terminal written as a
// visible escape. The renderers in report and the series labels in metrics
// share it.
package printable

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text returns s with every character that could drive a terminal
// written as a visible escape: C0 controls (ESC, CR, BEL, … and also tab
// and line feed), DEL, C1 controls (U+0080–U+009F) and bytes that are not
// UTF-8 (a lone 0x9b is a CSI to an 8-bit terminal). Text from registries,
// files and clusters goes through it before it reaches a terminal or a text
// report, so that it cannot move the cursor, recolour, retitle or forge a
// line. Text(Text(s)) == Text(s).
func Text(s string) string { return escapeControls(s, false) }

// Lines is Text keeping tabs and line feeds, for formats
// that encode them in their own way (a GitHub annotation's message, HTML,
// a Prometheus label value).
func Lines(s string) string { return escapeControls(s, true) }

func escapeControls(s string, keepLines bool) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !escaped(r, size, keepLines) {
			i += size
			continue
		}
		break
	}
	if i == len(s) {
		return s // the common case: nothing to escape, nothing allocated
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !escaped(r, size, keepLines):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// escaped reports whether the rune r, of size bytes (a RuneError of size 1
// is a byte that is not UTF-8), must be escaped.
func escaped(r rune, size int, keepLines bool) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\t' || r == '\n':
		return !keepLines
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	}
	return false
}
