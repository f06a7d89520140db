package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/regtree"
)

// TestProtectCLI: the dry run exits 0 with the proof and writes nothing;
// flags that cannot work are usage errors; an unreadable input makes the
// run incomplete and --apply writes nothing.
func TestProtectCLI(t *testing.T) {
	t.Parallel()
	tr, s := regtree.Seeded(t)
	audit := filepath.Join(t.TempDir(), "audit.json")
	t.Cleanup(func() { // after the parallel subtests
		if _, err := os.Stat(audit); err == nil {
			t.Error("an incomplete --apply wrote the audit file")
		}
	})
	base := []string{"protect", "--storage", tr.Root, "--gc-model", "distribution-2.8", "--delete-untagged"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{name: "dry run", args: append(base, "reg.example/app:v1", "reg.example/lone@"+s.Old), code: ExitClean, out: "without the shield the run breaks 2 in-use image(s); with it 0: 0 in-use images would break"},
		{name: "no storage", args: []string{"protect", "--gc-model", "distribution-3", "reg.example/app:v1"}, code: ExitUsage},
		{name: "no model", args: []string{"protect", "--storage", tr.Root, "reg.example/app:v1"}, code: ExitUsage},
		{name: "apply without audit", args: append(base, "--apply", "reg.example/app:v1"), code: ExitUsage},
		{name: "prefix outside the tag grammar", args: append(base, "--tag-prefix", "-keep", "reg.example/app:v1"), code: ExitUsage},
		{name: "incomplete input refuses apply", args: append(base, "--apply", "--audit", audit, "-f", filepath.Join(t.TempDir(), "gone.yaml"), "reg.example/app:v1"), code: ExitIncomplete, out: "INCOMPLETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, tc.args)
			if code != tc.code || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("exit %d, want %d; want %q in\n%s%s", code, tc.code, tc.out, out.String(), errb.String())
			}
		})
	}
}
