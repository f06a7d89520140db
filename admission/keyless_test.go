package admission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
		ext               map[string]string
	}{
		{name: "subject and issuer", entry: "keyless: {subject: a@b.c, issuer: https://i}",
			wantID: cosign.Identity{Subject: "a@b.c", Issuer: "https://i"}, tlog: true, sct: true},
		{name: "regexps, roots, ignoreTlog, ignoreSCT",
			entry:  "keyless: {subjectRegExp: '.*@b\\.c', issuerRegExp: 'https://.*', roots: ROOTS, rekor: {ignoreTlog: true}, ctlog: {ignoreSCT: true}}",
			wantID: cosign.Identity{SubjectRegExp: `.*@b\.c`, IssuerRegExp: "https://.*"}, roots: "ROOTS"},
		{name: "the policy's rekor key", entry: "keyless: {subject: a@b.c, issuer: https://i, rekor: {pubkey: REKOR}}",
			wantID: cosign.Identity{Subject: "a@b.c", Issuer: "https://i"}, tlog: true, sct: true, rekor: "REKOR"},
		// Kyverno matches nothing then: any certificate the roots vouch
		// for (matchSignatures), so the entry is verifiable.
		{name: "no identity", entry: "keyless: {roots: ROOTS}", tlog: true, sct: true, roots: "ROOTS"},
		{name: "additionalExtensions", entry: "keyless: {subject: 'https://github.com/org/*', issuer: https://i, additionalExtensions: {githubWorkflowTrigger: push}}",
			wantID: cosign.Identity{Subject: "https://github.com/org/*", Issuer: "https://i"}, tlog: true, sct: true,
			ext: map[string]string{"githubWorkflowTrigger": "push"}},
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
			if tt.wantID != (cosign.Identity{}) && (len(k.Keyless.Identities) != 1 || k.Keyless.Identities[0] != tt.wantID) {
				t.Errorf("identities %+v, want %+v", k.Keyless.Identities, tt.wantID)
			}
			// Kyverno hands cosign no identities and matches afterwards.
			want := kyvernoCert{subject: tt.wantID.Subject, subjectRegExp: tt.wantID.SubjectRegExp, issuer: tt.wantID.Issuer, issuerRegExp: tt.wantID.IssuerRegExp, extensions: tt.ext}
			if kc := k.Keyless.kyverno; kc == nil || kc.text() != want.text() || cosignIdentities(k) != nil {
				t.Errorf("Kyverno's certificate match %+v, want %+v, and no cosign identities (%v)", kc, want, cosignIdentities(k))
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
// one identity per entry, the SCT unless insecureIgnoreSCT, the log
// required as policy-controller requires it (a ctlog, or no TrustRoot),
// and the TrustRoots named.
func TestAuthorityKeyless(t *testing.T) {
	ids := `
  identities:
    - {issuer: https://i, subject: a@b.c}
    - {issuerRegExp: 'https://.*', subjectRegExp: '.*'}`
	for _, tt := range []struct {
		name, authority     string
		tlog, ignoreSCT     bool
		trustRoot, logTrust string
		search              bool // a Rekor client: no SET is searched for online
	}{
		{"a TrustRoot and a ctlog", "keyless:\n  trustRootRef: mine\n  insecureIgnoreSCT: true" + ids + "\nctlog: {url: https://r, trustRootRef: logs}", true, true, "mine", "logs", true},
		{"a TrustRoot, no ctlog: the log ignored", "keyless:\n  trustRootRef: mine" + ids, false, false, "mine", "", false},
		{"no TrustRoot: Sigstore's log required, offline", "keyless:" + ids, true, false, "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a map[string]any
			if err := yaml.Unmarshal([]byte(tt.authority), &a); err != nil {
				t.Fatal(err)
			}
			sets := authorityAttestors(a)
			if len(sets) != 1 || len(sets[0].Entries) != 1 {
				t.Fatalf("sets %+v", sets)
			}
			e := sets[0].Entries[0]
			want := []cosign.Identity{{Issuer: "https://i", Subject: "a@b.c"}, {IssuerRegExp: "https://.*", SubjectRegExp: ".*"}}
			if e.Keyless == nil || e.Tlog != tt.tlog || e.Keyless.IgnoreSCT != tt.ignoreSCT || e.Unverifiable != "" || len(e.Keyless.Identities) != 2 ||
				e.Keyless.Identities[0] != want[0] || e.Keyless.Identities[1] != want[1] || e.trustRoot != tt.trustRoot || e.logTrustRoot != tt.logTrust || e.TlogSearch != tt.search {
				t.Errorf("entry %+v keyless %+v", e, e.Keyless)
			}
		})
	}
}

// TestAuthorityKeyLog: a ClusterImagePolicy key authority requires the
// log only with a ctlog (url), and then has cosign search Rekor for an
// entry no SET carries (TlogSearch); the same for a Secret key.
func TestAuthorityKeyLog(t *testing.T) {
	data := "key: {data: \"" + strings.ReplaceAll(testPEM("key A"), "\n", "\\n") + "\"}"
	for _, tt := range []struct {
		name, authority string
		tlog            bool
	}{
		{"key.data, no ctlog", data, false},
		{"key.data, ctlog", data + "\nctlog: {url: https://rekor.example.com}", true},
		{"key.secretRef, ctlog", "key: {secretRef: {name: k}}\nctlog: {url: https://rekor.example.com}", true},
		{"key.secretRef, no ctlog", "key: {secretRef: {name: k}}", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a map[string]any
			if err := yaml.Unmarshal([]byte(tt.authority), &a); err != nil {
				t.Fatal(err)
			}
			sets := authorityAttestors(a)
			if len(sets) != 1 || len(sets[0].Entries) != 1 {
				t.Fatalf("sets %+v", sets)
			}
			if e := sets[0].Entries[0]; e.Tlog != tt.tlog || e.TlogSearch != tt.tlog {
				t.Errorf("Tlog %v TlogSearch %v, want both %v", e.Tlog, e.TlogSearch, tt.tlog)
			}
		})
	}
}

// TestTrustRootObject reads a TrustRoot's sigstoreKeys (base64 PEM) and
// gives its material to the entries naming it; a TUF repository is not
// read (unverifiable), a TrustRoot not read leaves the entry as it is.
func TestTrustRootObject(t *testing.T) {
	ca, _ := cryptoutils.MarshalCertificateToPEM(testCA(t))
	rekor := testPEM("rekor key")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	var keys, tuf unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(`apiVersion: policy.sigstore.dev/v1alpha1
kind: TrustRoot
metadata: {name: mine}
spec:
  sigstoreKeys:
    certificateAuthorities: [{subject: {organization: o, commonName: c}, uri: https://f, certChain: `+b64(string(ca))+`}]
    tLogs: [{baseURL: https://r, hashAlgorithm: sha-256, publicKey: `+b64(rekor)+`}]`), &keys.Object); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(`{apiVersion: policy.sigstore.dev/v1alpha1, kind: TrustRoot, metadata: {name: tuf}, spec: {repository: {root: eA==, mirrorFS: eA==}}}`), &tuf.Object); err != nil {
		t.Fatal(err)
	}
	ps := &Policies{}
	ps.addTrustRoot(&keys)
	ps.addTrustRoot(&tuf)
	keyless := func(root, logRoot string) KeyEntry {
		return KeyEntry{Tlog: true, trustRoot: root, logTrustRoot: logRoot, Keyless: &Keyless{}}
	}
	got := ps.withTrustRoot(keyless("mine", "mine"))
	if !strings.Contains(got.Keyless.RootsPEM, "BEGIN CERTIFICATE") || got.RekorPEM != rekor+"\n" || !got.Keyless.splitRoots || got.Unverifiable != "" {
		t.Errorf("the TrustRoot's material is not the entry's: %+v %+v", got, got.Keyless)
	}
	if got := ps.withTrustRoot(keyless("tuf", "")); !strings.Contains(got.Unverifiable, "TUF repository") {
		t.Errorf("a TUF repository TrustRoot: %+v", got)
	}
	// A TrustRoot named and not read: policy-controller cannot build the
	// authority, and --trusted-root does not stand in for it.
	for _, e := range []KeyEntry{keyless("absent", ""), keyless("mine", "absent"), {Tlog: true, PEM: "k", logTrustRoot: "absent"}} {
		if got := ps.withTrustRoot(e); !strings.Contains(got.Unverifiable, "TrustRoot absent") || got.RekorPEM != "" {
			t.Errorf("a TrustRoot not read: %+v", got)
		}
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

// TestTrustBadRoots: roots in the policy that do not parse are said so.
func TestTrustBadRoots(t *testing.T) {
	e := KeyEntry{Keyless: &Keyless{RootsPEM: "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n", IgnoreSCT: true}}
	_, err := CosignVerifier{}.trust(&cosign.CheckOpts{IgnoreTlog: true}, e)
	if err == nil || !strings.Contains(err.Error(), "roots do not parse") {
		t.Fatalf("err %v, want the roots not parsing", err)
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
