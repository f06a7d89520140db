package admission

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
)

// testTrustedRoot is a trusted root with a self-signed Fulcio CA when ca,
// and a Rekor log when rekor.
func testTrustedRoot(t *testing.T, ca, rekor bool) *root.TrustedRoot {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var cas []root.CertificateAuthority
	if ca {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		cas = append(cas, &root.FulcioCertificateAuthority{Root: c})
	}
	logs := map[string]*root.TransparencyLog{}
	if rekor {
		logs["00"] = &root.TransparencyLog{ID: []byte{0}, HashFunc: crypto.SHA256, PublicKey: k.Public(), SignatureHashFunc: crypto.SHA256, ValidityPeriodStart: time.Now().Add(-time.Hour)}
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, nil, nil, logs)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestKeylessBundleMaterial: what each engine's keyless bundle entry
// needs before a bundle is read: the trusted root given (its Fulcio CA,
// its Rekor log where the engine requires the log), else unknown saying
// what to supply; a policy-controller TrustRoot or timestamp authority
// is unknown (not verified yet); with the material, a check is built.
func TestKeylessBundleMaterial(t *testing.T) {
	kyverno := func(extra string) string {
		return kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n                - keyless: {subject: s, issuer: i"+extra+"}\n")
	}
	ivp := ivpDoc(ivpBody("Deny", "    - name: a\n      cosign:\n        keyless:\n          identities:\n            - {subject: s, issuer: i}\n        ctlog:\n          insecureIgnoreSCT: true\n", sigAny))
	cip := func(extra, authority string) string {
		return cipPolicy("    - signatureFormat: bundle\n      keyless:\n" + extra + "        identities:\n          - {subject: s, issuer: i}\n" + authority)
	}
	full, noRekor, noCA := testTrustedRoot(t, true, true), testTrustedRoot(t, true, false), testTrustedRoot(t, false, true)
	for _, c := range []struct {
		name, policy string
		tr           root.TrustedMaterial
		want         string // the reason's text; "" for a check built
	}{
		{"Kyverno, no trusted root", kyverno(""), nil, "give that trusted root as --trusted-root"},
		{"Kyverno, the policy's roots are not used", kyverno(", roots: x"), nil, "not used for a bundle"},
		{"Kyverno, the log required, no Rekor log", kyverno(""), noRekor, "no Rekor public key was given"},
		{"Kyverno, the log ignored, no Rekor log", kyverno(", rekor: {ignoreTlog: true}"), noRekor, ""},
		{"Kyverno, no CA", kyverno(""), noCA, "no Fulcio CA was given"},
		{"Kyverno, full root", kyverno(""), full, ""},
		{"ImageValidatingPolicy, no trusted root", ivp, nil, "give that trusted root as --trusted-root"},
		{"ImageValidatingPolicy, full root", ivp, full, ""},
		{"ImageValidatingPolicy, its own trustedRoot", strings.Replace(ivp, "        ctlog:\n", "        trustedRoot: {value: x}\n        ctlog:\n", 1), full, "cosign.trustedRoot"},
		{"policy-controller, full root", cip("", ""), full, ""},
		{"policy-controller, no Rekor log: required for a bundle", cip("", ""), noRekor, "no Rekor public key was given"},
		{"policy-controller, a TrustRoot", cip("        trustRootRef: r\n", "") + "---\napiVersion: policy.sigstore.dev/v1alpha1\nkind: TrustRoot\nmetadata: {name: r}\nspec: {sigstoreKeys: {certificateAuthorities: []}}\n", full, "does not rebuild offline yet"},
		{"policy-controller, rfc3161timestamp", cip("", "      rfc3161timestamp: {trustRootRef: r}\n"), full, "rfc3161timestamp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := onlyEntry(t, c.policy)
			if e.Keyless == nil && e.Unverifiable == "" {
				t.Fatalf("not a keyless entry: %+v", e)
			}
			if e.Unverifiable != "" {
				if c.want == "" || !strings.Contains(e.Unverifiable, c.want) {
					t.Fatalf("entry unverifiable: %s; want %q", e.Unverifiable, c.want)
				}
				return
			}
			check, v := CosignVerifier{TrustedRoot: c.tr}.keylessCheckOf(e)
			switch {
			case c.want == "" && check == nil:
				t.Fatalf("no check built: %+v", v)
			case c.want != "" && (check != nil || v.Outcome != Unverifiable || !strings.Contains(v.Reason, c.want)):
				t.Fatalf("got check=%v %+v, want unknown saying %q", check != nil, v, c.want)
			}
		})
	}
}

// TestKeylessBundleEntryRead: how each engine's keyless entry reads for
// a bundle: the log as each requires it, the SCT ignored where the
// policy says so (the ImageValidatingPolicy's ctlog.insecureIgnoreSCT
// too), the ImageValidatingPolicy's signed-timestamp rule.
func TestKeylessBundleEntryRead(t *testing.T) {
	for _, c := range []struct {
		name, policy          string
		tlog, ignoreSCT, tsat bool
	}{
		{"Kyverno default", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n                - keyless: {subject: s, issuer: i}\n"), true, false, false},
		{"Kyverno rekor.ignoreTlog", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n                - keyless: {subject: s, issuer: i, rekor: {ignoreTlog: true}}\n"), false, false, false},
		{"ImageValidatingPolicy insecureIgnoreSCT", ivpDoc(ivpBody("Deny", "    - name: a\n      cosign:\n        keyless:\n          identities:\n            - {subject: s, issuer: i}\n        ctlog:\n          insecureIgnoreSCT: true\n", sigAny)), true, true, true},
		{"ImageValidatingPolicy insecureIgnoreTlog", ivpDoc(ivpBody("Deny", "    - name: a\n      cosign:\n        keyless:\n          identities:\n            - {subject: s, issuer: i}\n        ctlog:\n          insecureIgnoreTlog: true\n", sigAny)), false, false, true},
		{"policy-controller, TrustRoot and no ctlog: the log still required for a bundle", cipPolicy("    - signatureFormat: bundle\n      keyless:\n        trustRootRef: r\n        identities:\n          - {subject: s, issuer: i}\n"), true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := onlyEntry(t, c.policy)
			if e.Keyless == nil {
				t.Fatalf("not a keyless entry: %+v", e)
			}
			if got := keylessBundleTlog(e); got != c.tlog {
				t.Errorf("log required %v, want %v", got, c.tlog)
			}
			if e.Keyless.IgnoreSCT != c.ignoreSCT || e.Keyless.bundleSignedTime != c.tsat {
				t.Errorf("IgnoreSCT %v, signed time %v; want %v, %v", e.Keyless.IgnoreSCT, e.Keyless.bundleSignedTime, c.ignoreSCT, c.tsat)
			}
		})
	}
}

// TestCarriesSCT: a bundle's leaf embeds SCTs when it has the
// certificate-transparency extension; a key-signed bundle has none.
func TestCarriesSCT(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(ext []pkix.Extension) *protobundle.Bundle {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), ExtraExtensions: ext}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
		if err != nil {
			t.Fatal(err)
		}
		return &protobundle.Bundle{MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json", VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: der}}}}
	}
	for _, c := range []struct {
		name string
		pb   *protobundle.Bundle
		want bool
	}{
		{"leaf with SCTs", leaf([]pkix.Extension{{Id: sctOID, Value: []byte{4, 2, 0, 0}}}), true},
		{"leaf without", leaf(nil), false},
		{"a key hint", &protobundle.Bundle{VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{}}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := carriesSCT(&sgbundle.Bundle{Bundle: c.pb}); got != c.want {
				t.Fatalf("carriesSCT %v, want %v", got, c.want)
			}
		})
	}
}
