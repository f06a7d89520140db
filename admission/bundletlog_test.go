package admission

import (
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"
)

// TestBundleLogMaterial: a bundle's log entry is checked against the
// trusted root given, standing for the engine's (Kyverno's TUF root);
// none, or one with no Rekor log, is unverifiable, saying to pass it,
// and the policy's rekor.pubkey is said not to be what Kyverno uses.
func TestBundleLogMaterial(t *testing.T) {
	given, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, map[string]*root.TransparencyLog{"given": {ID: []byte("given")}})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, nil)
	for _, tt := range []struct {
		name  string
		v     CosignVerifier
		rekor string
		says  string // "" when the trusted root is taken
	}{
		{"the trusted root", CosignVerifier{TrustedRoot: given}, "", ""},
		{"the trusted root, the policy's key too", CosignVerifier{TrustedRoot: given}, testPEM("rekor"), ""},
		{"a trusted root with no log", CosignVerifier{TrustedRoot: empty}, "", "--trusted-root"},
		{"nothing given", CosignVerifier{}, "", "--trusted-root"},
		{"the policy's key only", CosignVerifier{}, testPEM("rekor"), "not what Kyverno checks a bundle's entry with"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm, missing := tt.v.bundleLogMaterial(KeyEntry{RekorPEM: tt.rekor, Path: "p"})
			if tt.says == "" {
				if tm == nil || tm.RekorLogs()["given"] == nil || missing != "" {
					t.Fatalf("material %v, %q; want the trusted root", tm, missing)
				}
				return
			}
			if tm != nil || !strings.Contains(missing, tt.says) {
				t.Errorf("material %v, %q; want none, saying %q", tm, missing, tt.says)
			}
		})
	}
}
