package types

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapped(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // prefix; "" for the input unchanged
	}{
		{"short", "file.yaml: line 2: bad", ""},
		{"exactly the limit", strings.Repeat("a", MaxMessage), ""},
		{"over by one", strings.Repeat("a", MaxMessage+1), strings.Repeat("a", MaxMessage) + "… (1 more bytes)"},
		{"100 KB", strings.Repeat("b", 100<<10), strings.Repeat("b", MaxMessage) + "… (101376 more bytes)"},
		{"cut inside a rune", strings.Repeat("a", MaxMessage-1) + "é" + strings.Repeat("c", 10), strings.Repeat("a", MaxMessage-1) + "… (12 more bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Capped(tc.in)
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if got != want {
				t.Errorf("Capped = %q…, want %q…", got[max(0, len(got)-30):], want[max(0, len(want)-30):])
			}
			if !utf8.ValidString(got) {
				t.Error("not valid UTF-8")
			}
		})
	}
}
