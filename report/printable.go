package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Printable returns s with every character that could drive a terminal
// written as a visible escape: C0 controls (ESC, CR, BEL, … and also tab
// and line feed), DEL, C1 controls (U+0080–U+009F) and bytes that are not
// UTF-8 (a lone 0x9b is a CSI to an 8-bit terminal). Text from registries,
// files and clusters goes through it before it reaches a terminal or a text
// report, so that it cannot move the cursor, recolour, retitle or forge a
// line. Printable(Printable(s)) == Printable(s).
func Printable(s string) string { return escapeControls(s, false) }

// printableLines is Printable keeping tabs and line feeds, for formats
// that encode them in their own way (a GitHub annotation's message, HTML,
// a Prometheus label value).
func printableLines(s string) string { return escapeControls(s, true) }

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

// c1Escaper writes DEL and the C1 controls as JSON \u escapes: encoding/json
// escapes C0 controls but writes these as they are. In valid UTF-8 (which
// encoding/json always writes) 0xc2 is only ever a lead byte, so the
// replacement cannot split a character; JSON's own syntax is ASCII, so
// these only ever occur inside strings.
var c1Escaper = func() *strings.Replacer {
	pairs := []string{"\x7f", `\u007f`}
	for r := rune(0x80); r <= 0x9f; r++ {
		pairs = append(pairs, string(r), fmt.Sprintf(`\u%04x`, r))
	}
	return strings.NewReplacer(pairs...)
}()

// WriteJSON writes v as indented JSON with no raw control character in it:
// encoding/json's escaping, plus DEL and C1 controls as \u escapes. Every
// JSON output (scan -o json and -o sarif, pin --check -o json and -o
// sarif) goes through it.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		return err
	}
	_, err := c1Escaper.WriteString(w, buf.String())
	return err
}
