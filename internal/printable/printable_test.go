package printable

import (
	"strings"
	"testing"
)

// Text makes every control character visible, keeps the rest, and is
// idempotent.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, lines string // lines: Lines
	}{
		{"plain", "nginx:1.27 ü 日本", "nginx:1.27 ü 日本", "nginx:1.27 ü 日本"},
		{"CSI colour", "a\x1b[31mb", `a\x1b[31mb`, `a\x1b[31mb`},
		{"OSC title with BEL", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"carriage return", "ok\rFAIL", `ok\rFAIL`, `ok\rFAIL`},
		{"tab and line feed", "a\tb\nc", `a\tb\nc`, "a\tb\nc"},
		{"NUL, backspace, DEL", "a\x00b\bc\x7f", `a\x00b\x08c\x7f`, `a\x00b\x08c\x7f`},
		{"C1 CSI as UTF-8", "a\u009b2Jb\u0085", `a\u009b2Jb\u0085`, `a\u009b2Jb\u0085`},
		{"8-bit CSI byte", "a\x9b2J", `a\x9b2J`, `a\x9b2J`},
		{"cut UTF-8", "caf\xc3", `caf\xc3`, `caf\xc3`},
		{"U+FFFD itself is text", "\uFFFD", "\uFFFD", "\uFFFD"},
		{"backslashes kept", `C:\x1b`, `C:\x1b`, `C:\x1b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := Lines(tc.in); got != tc.lines {
				t.Errorf("Lines(%q) = %q, want %q", tc.in, got, tc.lines)
			}
			if got := Text(Text(tc.in)); got != tc.want {
				t.Errorf("Text is not idempotent: %q", got)
			}
			if c := strings.IndexFunc(Text(tc.in), func(r rune) bool {
				return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffd && !strings.Contains(tc.in, "\uFFFD")
			}); c >= 0 {
				t.Errorf("Text(%q) keeps a control character at %d", tc.in, c)
			}
		})
	}
}
