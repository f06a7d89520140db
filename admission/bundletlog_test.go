package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// TestBundleLogMaterial: a bundle's log entry is checked against the
// policy's Rekor keys (one log per key, under its log ID, valid from the
// epoch), else the trusted root's logs; none is nil (unverifiable), and
// a policy key that does not parse is said.
func TestBundleLogMaterial(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rekor := pemOf(t, k)
	id, _ := cosign.GetTransparencyLogID(k.Public())
	idBytes, _ := hex.DecodeString(id)
	given, err := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, map[string]*root.TransparencyLog{"given": {ID: []byte("given")}})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := root.NewTrustedRoot(root.TrustedRootMediaType01, nil, nil, nil, nil)
	for _, tt := range []struct {
		name    string
		v       CosignVerifier
		rekor   string
		wantLog string // the log ID held, "" for no material
		wantErr string
	}{
		{"the policy's key", CosignVerifier{TrustedRoot: given}, rekor, id, ""},
		{"the trusted root's", CosignVerifier{TrustedRoot: given}, "", "given", ""},
		{"a trusted root with no log", CosignVerifier{TrustedRoot: empty}, "", "", ""},
		{"nothing given", CosignVerifier{}, "", "", ""},
		{"the policy's key is not PEM", CosignVerifier{}, "rekor", "", "holds no PEM key"},
		{"the policy's key does not parse", CosignVerifier{}, testPEM("not a key"), "", "does not parse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tm, err := tt.v.bundleLogMaterial(KeyEntry{RekorPEM: tt.rekor, Path: "p"})
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tt.wantLog == "":
				if tm != nil {
					t.Fatalf("material %v, want none", tm)
				}
				return
			}
			l, ok := tm.RekorLogs()[tt.wantLog]
			if !ok {
				t.Fatalf("logs %v, want %s", tm.RekorLogs(), tt.wantLog)
			}
			if tt.rekor != "" && (string(l.ID) != string(idBytes) || l.ValidityPeriodStart.IsZero() || !k.PublicKey.Equal(l.PublicKey)) {
				t.Errorf("log %+v", l)
			}
		})
	}
}
