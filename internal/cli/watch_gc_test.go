package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestWatchGOGC: watch collects at watchGOGC unless the environment sets
// GOGC, whose value then stands (the runtime read it at start).
func TestWatchGOGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })
	for _, tc := range []struct {
		name string
		env  *string // nil: unset
		want int
	}{
		{"unset", nil, watchGOGC},
		{"set", ptr("200"), 100}, // what the runtime took from it; 100 here
		{"set empty", ptr(""), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == nil {
				t.Setenv("GOGC", "") // restored after
				os.Unsetenv("GOGC")
			} else {
				t.Setenv("GOGC", *tc.env)
			}
			debug.SetGCPercent(100)
			gcPercent()
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
