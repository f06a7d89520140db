package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

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
