package kyvernocli

import (
	"strings"
	"testing"
)

// TestParse reads outputs of kyverno apply v1.19.1 as the rows of
// integration TestEngineVerdicts printed them.
func TestParse(t *testing.T) {
	const warning = "Warning: /tmp/p.yaml: kyverno.io/v1 ClusterPolicy is deprecated and will be removed in a future release\n\n" +
		"Applying 3 policy rule(s) to 1 resource(s)...\n"
	for _, c := range []struct {
		name, out string
		refused   bool
		pass      int
		message   string
		skipped   int
		err       bool
	}{
		{"admitted", warning + "\npass: 2, fail: 0, warn: 0, error: 0, skip: 0 \n", false, 2, "", 0, false},
		{"missing digest", warning + "policy engine-row -> resource default/Pod/web failed:\n1 - verify missing digest for 127.0.0.1:1/signed:v1\n\npass: 1, fail: 1, warn: 0, error: 0, skip: 0 \n",
			true, 1, "1 - verify missing digest for 127.0.0.1:1/signed:v1", 0, false},
		{"an error refuses too", warning + "\npass: 0, fail: 0, warn: 0, error: 1, skip: 0 \n", true, 0, "", 0, false},
		{"audit failure as a warning", warning + "\npass: 0, fail: 0, warn: 1, error: 0, skip: 0 \n", false, 0, "", 0, false},
		{"a policy skipped", "----------------------------------------------------------------------\nPolicies Skipped:\n1. engine-row: mutateDigest must be set to false\n----------------------------------------------------------------------\n\npass: 0, fail: 0, warn: 0, error: 1, skip: 0 \n",
			false, 0, "", 1, false},
		{"no summary", "Error: failed to load policies\n", false, 0, "", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := parse(c.out)
			if (err != nil) != c.err {
				t.Fatalf("err %v, want an error: %v", err, c.err)
			}
			if o.Refused != c.refused || o.Pass != c.pass || o.Message != c.message || len(o.Skipped) != c.skipped {
				t.Errorf("got refused %v, pass %d, message %q, skipped %q; want %v, %d, %q, %d",
					o.Refused, o.Pass, o.Message, strings.Join(o.Skipped, "|"), c.refused, c.pass, c.message, c.skipped)
			}
		})
	}
}
