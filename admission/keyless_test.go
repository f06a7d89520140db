package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"sigs.k8s.io/yaml"
)

// TestKyvernoKeylessEntry reads Kyverno attestor entries into keyless
// entries: identities, roots, the log required unless ignoreTlog, the
// SCT unless ignoreSCT, and a key entry's rekor.pubkey.
func TestKyvernoKeylessEntry(t *testing.T) {
	for _, tt := range []struct {
		name, entry       string
		wantID            cosign.Identity
		tlog, sct, unver  bool
		roots, rekor, key string
	}{
		{name: "subject and issuer", entry: "keyless: {subject: a@b.c, issuer: https://i}",
			wantID: cosign.Identity{Subject: "a@b.c", Issuer: "https://i"}, tlog: true, sct: true},
		{name: "regexps, roots, ignoreTlog, ignoreSCT",
			entry:  "keyless: {subjectRegExp: '.*@b\\.c', issuerRegExp: 'https://.*', roots: ROOTS, rekor: {ignoreTlog: true}, ctlog: {ignoreSCT: true}}",
			wantID: cosign.Identity{SubjectRegExp: `.*@b\.c`, IssuerRegExp: "https://.*"}, roots: "ROOTS"},
		{name: "the policy's rekor key", entry: "keyless: {subject: a@b.c, issuer: https://i, rekor: {pubkey: REKOR}}",
			wantID: cosign.Identity{Subject: "a@b.c", Issuer: "https://i"}, tlog: true, sct: true, rekor: "REKOR"},
		{name: "no identity", entry: "keyless: {roots: ROOTS}", tlog: true, sct: true, unver: true, roots: "ROOTS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e map[string]any
			if err := yaml.Unmarshal([]byte(tt.entry), &e); err != nil {
				t.Fatal(err)
			}
			got := kyvernoEntry(e, "attestors[0].entries[0]")
			if len(got) != 1 || got[0].Keyless == nil {
				t.Fatalf("entries %+v, want one keyless entry", got)
			}
			k := got[0]
			if k.Path != "attestors[0].entries[0].keyless" || k.Tlog != tt.tlog || k.Keyless.IgnoreSCT == tt.sct ||
				(k.Unverifiable != "") != tt.unver || k.Keyless.RootsPEM != tt.roots || k.RekorPEM != tt.rekor {
				t.Errorf("entry %+v keyless %+v", k, *k.Keyless)
			}
			if !tt.unver && (len(k.Keyless.Identities) != 1 || k.Keyless.Identities[0] != tt.wantID) {
				t.Errorf("identities %+v, want %+v", k.Keyless.Identities, tt.wantID)
			}
		})
	}
	var e map[string]any
	_ = yaml.Unmarshal([]byte("keys: {publicKeys: \""+strings.ReplaceAll(testPEM("key A"), "\n", "\\n")+"\", rekor: {pubkey: REKOR}}"), &e)
	if got := kyvernoEntry(e, "p"); len(got) != 1 || got[0].RekorPEM != "REKOR" || !got[0].Tlog || got[0].Keyless != nil {
		t.Errorf("a key entry with rekor.pubkey: %+v", got)
	}
}

// TestAuthorityKeyless reads a ClusterImagePolicy keyless authority:
// one identity per entry, the log required, the SCT unless
// insecureIgnoreSCT.
func TestAuthorityKeyless(t *testing.T) {
	var a map[string]any
	if err := yaml.Unmarshal([]byte(`keyless:
  trustRootRef: mine
  insecureIgnoreSCT: true
  identities:
    - {issuer: https://i, subject: a@b.c}
    - {issuerRegExp: 'https://.*', subjectRegExp: '.*'}`), &a); err != nil {
		t.Fatal(err)
	}
	sets := authorityAttestors(a)
	if len(sets) != 1 || len(sets[0].Entries) != 1 {
		t.Fatalf("sets %+v", sets)
	}
	e := sets[0].Entries[0]
	want := []cosign.Identity{{Issuer: "https://i", Subject: "a@b.c"}, {IssuerRegExp: "https://.*", SubjectRegExp: ".*"}}
	if e.Keyless == nil || !e.Tlog || !e.Keyless.IgnoreSCT || e.Unverifiable != "" || len(e.Keyless.Identities) != 2 ||
		e.Keyless.Identities[0] != want[0] || e.Keyless.Identities[1] != want[1] {
		t.Errorf("entry %+v", e)
	}
}

// TestTrustMissing: with trust material missing, the verification is
// unverifiable and says what to supply; the material present is put
// into cosign's options.
func TestTrustMissing(t *testing.T) {
	ca := testCA(t)
	rekorKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rekorPEM, _ := cryptoutils.MarshalPublicKeyToPEM(rekorKey.Public())
	caOnly := mustRoot(t, []root.CertificateAuthority{&root.FulcioCertificateAuthority{Root: ca}}, nil)
	logOnly := mustRoot(t, nil, map[string]*root.TransparencyLog{"x": {PublicKey: rekorKey.Public(), ValidityPeriodStart: time.Now()}})
	caPEM, _ := cryptoutils.MarshalCertificateToPEM(ca)
	keyless := func(roots string, ignoreSCT bool) *Keyless { return &Keyless{RootsPEM: roots, IgnoreSCT: ignoreSCT} }
	for _, tt := range []struct {
		name    string
		tr      root.TrustedMaterial
		e       KeyEntry
		missing string // "" when the material is all there
	}{
		{"key, log, nothing given", nil, KeyEntry{Tlog: true}, supplyRekor},
		{"key, log, the policy's rekor key", nil, KeyEntry{Tlog: true, RekorPEM: string(rekorPEM)}, ""},
		{"key, log, a trusted root with the log", logOnly, KeyEntry{Tlog: true}, ""},
		{"key, log, a trusted root without it", caOnly, KeyEntry{Tlog: true}, supplyRekor},
		{"keyless, nothing given", nil, KeyEntry{Tlog: true, Keyless: keyless("", true)}, supplyCA},
		{"keyless, a trusted root without a CA", logOnly, KeyEntry{Tlog: true, Keyless: keyless("", true)}, supplyCA},
		{"keyless, the policy's roots, no log key", nil, KeyEntry{Tlog: true, Keyless: keyless(string(caPEM), true)}, supplyRekor},
		{"keyless, the policy's roots and rekor key", nil, KeyEntry{Tlog: true, RekorPEM: string(rekorPEM), Keyless: keyless(string(caPEM), true)}, ""},
		{"keyless, the policy's roots, the trusted root's log", logOnly, KeyEntry{Tlog: true, Keyless: keyless(string(caPEM), true)}, ""},
		{"keyless, SCT required, no CT log", caOnly, KeyEntry{Keyless: keyless("", false)}, supplyCT},
		{"keyless, log ignored, SCT ignored", caOnly, KeyEntry{Keyless: keyless("", true)}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := CosignVerifier{TrustedRoot: tt.tr}
			co := &cosign.CheckOpts{IgnoreTlog: !tt.e.Tlog}
			missing, err := v.trust(co, tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if missing != tt.missing {
				t.Fatalf("missing %q, want %q", missing, tt.missing)
			}
			if missing == "" && co.TrustedMaterial == nil && co.RekorPubKeys == nil && co.RootCerts == nil {
				t.Errorf("no material put into the options: %+v", co)
			}
		})
	}
}

func testCA(t *testing.T) *x509.Certificate {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

func mustRoot(t *testing.T, cas []root.CertificateAuthority, logs map[string]*root.TransparencyLog) *root.TrustedRoot {
	t.Helper()
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, nil, nil, logs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
