//go:build integration

package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	cbundle "github.com/sigstore/cosign/v3/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	cosignbin "github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// The test Fulcio's OIDC issuer and the identities it certifies.
const (
	testIssuer = "https://issuer.regcheck.test"
	testSigner = "signer@regcheck.test"
)

// kyvernoKeylessPolicy is a Kyverno Enforce ClusterPolicy on HOST/REPO*
// with one keyless entry for SUBJECT from the test issuer; the test CA
// has no CT log, so SCTs are ignored (ctlog.ignoreSCT), and the log
// proof is required (Kyverno's default).
const kyvernoKeylessPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-keyless
spec:
  rules:
    - name: verify-keyless
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/REPO*"]
          failureAction: Enforce
          attestors:
            - entries:
                - keyless:
                    subject: SUBJECT
                    issuer: ` + testIssuer + `
                    ctlog:
                      ignoreSCT: true
`

// cipKeylessPolicy is a policy-controller ClusterImagePolicy on
// HOST/REPO* with one keyless authority whose identity is IDENTITY (a
// flow mapping), its Fulcio and Rekor material in the TrustRoot named
// test-root (the trustRootObject appended to it; without it the authority
// is unknown, as policy-controller cannot build it), SCTs ignored.
const cipKeylessPolicy = `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata:
  name: signed-keyless
spec:
  images:
    - glob: "HOST/REPO*"
  authorities:
    - keyless:
        trustRootRef: test-root
        insecureIgnoreSCT: true
        identities:
          - IDENTITY
      ctlog:
        url: https://rekor.regcheck.test
        trustRootRef: test-root
---
apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels:
    policy.sigstore.dev/include: "true"
`

// trustRootObject is a policy-controller TrustRoot named test-root whose
// sigstoreKeys hold the test CA chain and Rekor key (base64 PEM, as the
// CRD stores bytes).
const trustRootObject = `---
apiVersion: policy.sigstore.dev/v1alpha1
kind: TrustRoot
metadata:
  name: test-root
spec:
  sigstoreKeys:
    certificateAuthorities:
      - subject: {organization: regcheck, commonName: regcheck test Fulcio}
        uri: https://fulcio.regcheck.test
        certChain: CHAIN
    tLogs:
      - baseURL: https://rekor.regcheck.test
        hashAlgorithm: sha-256
        publicKey: REKORKEY
`

// trustFixture is offline trust material made by the test: a CA standing
// for Fulcio, a P-256 key standing for Rekor's, and the trusted root
// that the real cosign trusted-root create makes of them.
type trustFixture struct {
	dir         string
	ca          *x509.Certificate
	caKey       *ecdsa.PrivateKey
	caPEM       []byte
	rekor       *ecdsa.PrivateKey
	rekorPub    string // file
	trustedRoot string // file
}

// newTrustFixture makes the CA, the Rekor key and the trusted root (with
// cosign's own trusted-root create: no default service, nothing fetched);
// with c nil, no trusted root.
func newTrustFixture(t *testing.T, c *cosignbin.Cosign) *trustFixture {
	t.Helper()
	f := &trustFixture{dir: t.TempDir(), caKey: newKey(t), rekor: newKey(t)}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "regcheck test Fulcio", Organization: []string{"regcheck"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, f.caKey.Public(), f.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if f.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	f.caPEM, _ = cryptoutils.MarshalCertificateToPEM(f.ca)
	caFile := f.write(t, "fulcio.pem", f.caPEM)
	rekorPEM, err := cryptoutils.MarshalPublicKeyToPEM(f.rekor.Public())
	if err != nil {
		t.Fatal(err)
	}
	f.rekorPub = f.write(t, "rekor.pub", rekorPEM)
	if c == nil {
		return f // no trusted root: the test names the CA and Rekor key in its policies
	}
	f.trustedRoot = filepath.Join(f.dir, "trusted_root.json")
	cmd := exec.Command(c.Bin, "trusted-root", "create",
		"--fulcio", "url=https://fulcio.regcheck.test,certificate-chain="+caFile,
		"--rekor", "url=https://rekor.regcheck.test,public-key="+f.rekorPub+",start-time="+now.Add(-time.Hour).UTC().Format(time.RFC3339),
		"--out", f.trustedRoot)
	cmd.Env = append(os.Environ(), "HOME="+f.dir, "TUF_ROOT="+filepath.Join(f.dir, "tuf"), "HTTPS_PROXY=http://127.0.0.1:9")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign trusted-root create: %v\n%s", err, out)
	}
	return f
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// write writes a file of the fixture's folder and returns its path.
func (f *trustFixture) write(t *testing.T, base string, b []byte) string {
	t.Helper()
	p := filepath.Join(f.dir, base)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// leaf is a code-signing certificate of the test CA for email, issued by
// the test OIDC issuer (Fulcio's extensions 1.3.6.1.4.1.57264.1.1, the
// raw issuer, and .1.8, the DER UTF8String), valid from notBefore to
// notAfter, and its key.
func (f *trustFixture) leaf(t *testing.T, email string, notBefore, notAfter time.Time) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	k := newKey(t)
	v2, err := asn1.MarshalWithParams(testIssuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), EmailAddresses: []string{email},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}, Value: []byte(testIssuer)},
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}, Value: v2},
		}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca, k.Public(), f.caKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pemBytes, _ := cryptoutils.MarshalCertificateToPEM(c)
	return k, pemBytes
}

// setKind is the transparency-log proof a fabricated signature carries.
type setKind int

const (
	noSET     setKind = iota
	goodSET           // signed with the Rekor key
	forgedSET         // signed with another key
)

// sigSpec is how the test signs an image: with key, as the holder of
// cert (keyless) or of the public key pub (key-based), carrying a SET of
// kind set whose integrated time is at.
type sigSpec struct {
	key  *ecdsa.PrivateKey
	cert []byte
	set  setKind
	at   time.Time
}

// signLegacy pushes an image to host/repo and attaches a legacy .sig
// signature made as s says, through cosign's own OCI types (static
// signature, mutate, remote write): the simple-signing payload cosign
// signs, the signature annotation, the certificate and chain for
// keyless, and the dev.sigstore.cosign/bundle annotation holding the SET.
func (f *trustFixture) signLegacy(t *testing.T, host, repo string, s sigSpec) admImage {
	t.Helper()
	ref := host + "/" + repo + ":v1"
	d := pushSingle(t, ref, "trust root "+repo)
	dref, err := name.NewDigest(host+"/"+repo+"@"+d, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := payload.Cosign{Image: dref}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(pl)
	raw, err := ecdsa.SignASN1(rand.Reader, s.key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(raw)
	var opts []static.Option
	signer, _ := cryptoutils.MarshalPublicKeyToPEM(s.key.Public())
	if s.cert != nil {
		signer = s.cert
		opts = append(opts, static.WithCertChain(s.cert, f.caPEM))
	}
	if s.set != noSET {
		opts = append(opts, static.WithBundle(f.rekorBundle(t, h, b64, signer, s)))
	}
	sig, err := static.NewSignature(pl, b64, opts...)
	if err != nil {
		t.Fatal(err)
	}
	si, err := ociremote.SignedImage(dref)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := mutate.AttachSignatureToImage(si, sig)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(dref.Context(), signed); err != nil {
		t.Fatal(err)
	}
	return admImage{ref: ref, digest: d}
}

// rekorBundle is the Rekor entry cosign would have been given for the
// signature: a hashedrekord v0.0.1 body (the payload's SHA-256, the
// signature, the signer's key or certificate), its integrated time, log
// index and log ID (the SHA-256 of the Rekor key's DER), and the SET: the
// Rekor key's ECDSA signature over the SHA-256 of that payload in
// canonical JSON (cosign pkg/cosign.VerifySET, sigstore-go tlog.VerifySET).
func (f *trustFixture) rekorBundle(t *testing.T, h [32]byte, b64sig string, signer []byte, s sigSpec) *cbundle.RekorBundle {
	t.Helper()
	body, err := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(h[:])}},
		"signature": map[string]any{"content": b64sig, "publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString(signer)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	logID, err := cosign.GetTransparencyLogID(f.rekor.Public())
	if err != nil {
		t.Fatal(err)
	}
	p := cbundle.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: s.at.Unix(), LogIndex: 42, LogID: logID}
	j, _ := json.Marshal(p)
	canon, err := jsoncanonicalizer.Transform(j)
	if err != nil {
		t.Fatal(err)
	}
	key := f.rekor
	if s.set == forgedSET {
		key = newKey(t)
	}
	sum := sha256.Sum256(canon)
	set, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return &cbundle.RekorBundle{SignedEntryTimestamp: set, Payload: p}
}

// withTrustRoot is policy followed by the TrustRoot test-root holding
// the fixture's CA chain and Rekor key (trustRootObject).
func (f *trustFixture) withTrustRoot(t *testing.T, policy string) string {
	t.Helper()
	rekorPEM, err := os.ReadFile(f.rekorPub)
	if err != nil {
		t.Fatal(err)
	}
	return policy + strings.NewReplacer("CHAIN", base64.StdEncoding.EncodeToString(f.caPEM),
		"REKORKEY", base64.StdEncoding.EncodeToString(rekorPEM)).Replace(trustRootObject)
}

// scanTrusted scans a Deployment running ref under policy (-f), with the
// extra flags (--trusted-root), and returns ref's result.
func scanTrusted(t *testing.T, ref, policy string, extra ...string) *types.Image {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(deployment("web", ref, "")+"---\n"+policy), 0o644); err != nil {
		t.Fatal(err)
	}
	doc, code, _ := scanCLI(t, append([]string{"--no-cache", "--timeout", "20s", "-f", dir}, extra...)...)
	im := byReference(doc)[ref]
	if im == nil {
		t.Fatalf("scan -f: exit %d, no result for %s: %+v", code, ref, doc.Images)
	}
	return im
}

// TestVerifyTrustRoot holds regcheck's verdict on a transparency-log
// proof (key-based) and on keyless certificates, checked offline with
// a trusted root made by cosign trusted-root create (or the policy's
// rekor.pubkey), to cosign verify v3.1.3's exit status on the same
// fixture, with the flags that match Kyverno's rule.
func TestVerifyTrustRoot(t *testing.T) {
	ctx := context.Background()
	c := newCosign(t)
	f := newTrustFixture(t, c)
	host := startEmpty(t, registry.V3).Host()
	signKey := newKey(t)
	pubPEM, _ := cryptoutils.MarshalPublicKeyToPEM(signKey.Public())
	pubFile := f.write(t, "signer.pub", pubPEM)
	now := time.Now()
	// The 5-second leaf: signed now, verified once it has expired.
	shortFrom, shortTo := now.Add(-time.Second), now.Add(5*time.Second)
	shortKey, shortCert := f.leaf(t, testSigner, shortFrom, shortTo)
	expiredIn := f.signLegacy(t, host, "texpiredin", sigSpec{key: shortKey, cert: shortCert, set: goodSET, at: now})
	expiredOut := f.signLegacy(t, host, "texpiredout", sigSpec{key: shortKey, cert: shortCert, set: goodSET, at: shortTo.Add(time.Minute)})
	leafKey, leafCert := f.leaf(t, testSigner, now.Add(-time.Minute), now.Add(10*time.Minute))
	keyless := f.signLegacy(t, host, "tkeyless", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now})
	keylessOther := f.signLegacy(t, host, "tmismatch", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now})
	keylessNoRoot := f.signLegacy(t, host, "tnoroot", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now})

	keyPolicy := func(repo, rekor string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "PEM", indentPEM(t, pubFile, 22), "REKOR", rekor).Replace(kyvernoKeyPolicy)
	}
	rekorBlock := "                    rekor:\n                      pubkey: |-\n" + indentPEM(t, f.rekorPub, 24) + "\n"
	keylessPolicy := func(repo, subject string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "SUBJECT", subject).Replace(kyvernoKeylessPolicy)
	}
	trusted := []string{"--trusted-root", f.trustedRoot}
	keyFlags := []string{"--key", pubFile, "--trusted-root", f.trustedRoot}
	idFlags := func(subject string) []string {
		return []string{"--certificate-identity", subject, "--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct=true"}
	}
	rootsBlock := "                    roots: |-\n" + indentPEM(t, f.write(t, "roots.pem", f.caPEM), 22) + "\n" +
		"                    rekor:\n                      pubkey: |-\n" + indentPEM(t, f.rekorPub, 24) + "\n"
	keylessRoots := func(repo string) string {
		return strings.Replace(keylessPolicy(repo, testSigner), "                    ctlog:\n", rootsBlock+"                    ctlog:\n", 1)
	}
	keylessRegexp := func(repo, re string) string {
		return strings.Replace(keylessPolicy(repo, ""), "subject: \n", "subjectRegExp: '"+re+"'\n", 1)
	}
	cip := func(repo, identity string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "IDENTITY", identity).Replace(cipKeylessPolicy)
	}
	withTrustRoot := func(policy string) string { return f.withTrustRoot(t, policy) }
	type tcase struct {
		name     string
		im       admImage
		policy   string
		regcheck []string // regcheck's flags
		cosign   []string // cosign verify's flags
		want     types.Verdict
		code     types.Code
		cosignOK bool
		env      []string // cosign's environment
	}
	cases := []tcase{
		{"key, good SET, Kyverno default, --trusted-root", f.signLegacy(t, host, "tgoodset", sigSpec{key: signKey, set: goodSET, at: now}),
			keyPolicy("tgoodset", ""), trusted, keyFlags, types.OK, "", true, nil},
		{"key, good SET, the policy's rekor.pubkey", f.signLegacy(t, host, "trekorkey", sigSpec{key: signKey, set: goodSET, at: now}),
			keyPolicy("trekorkey", rekorBlock), nil, keyFlags, types.OK, "", true, nil},
		{"key, forged SET", f.signLegacy(t, host, "tforged", sigSpec{key: signKey, set: forgedSET, at: now}),
			keyPolicy("tforged", ""), trusted, keyFlags, types.Broken, types.SignatureRefused, false, nil},
		{"key, no SET, Kyverno default", f.signLegacy(t, host, "tnoset", sigSpec{key: signKey}),
			keyPolicy("tnoset", ""), trusted, keyFlags, types.Broken, types.SignatureRefused, false, nil},
		{"key, no SET, ignoreTlog", f.signLegacy(t, host, "tignore", sigSpec{key: signKey}),
			keyPolicy("tignore", ignoreTlogBlock), trusted, append([]string{"--insecure-ignore-tlog=true"}, keyFlags...), types.OK, "", true, nil},
		{"key, good SET, no trust material", f.signLegacy(t, host, "tnomaterial", sigSpec{key: signKey, set: goodSET, at: now}),
			keyPolicy("tnomaterial", ""), nil, []string{"--key", pubFile}, types.Unknown, types.SignatureUnverifiable, false, nil},
		{"keyless, identity matches", keyless, keylessPolicy("tkeyless", testSigner), trusted,
			append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.OK, "", true, nil},
		{"keyless, identity mismatch", keylessOther, keylessPolicy("tmismatch", "someone-else@regcheck.test"), trusted,
			append(idFlags("someone-else@regcheck.test"), "--trusted-root", f.trustedRoot), types.Broken, types.SignatureRefused, false, nil},
		// Kyverno matches subject and issuer as wildcards and reads
		// additionalExtensions (matchCertificateData), where cosign's
		// identities are exact: the regexp flags stand in for cosign.
		{"keyless, Kyverno subject wildcard", f.signLegacy(t, host, "twild", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			keylessPolicy("twild", "'*@regcheck.test'"), trusted, []string{"--certificate-identity-regexp", `.*@regcheck\.test`,
				"--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct=true", "--trusted-root", f.trustedRoot}, types.OK, "", true, nil},
		{"keyless, Kyverno additionalExtensions not carried", f.signLegacy(t, host, "text", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			strings.Replace(keylessPolicy("text", testSigner), "                    ctlog:\n", "                    additionalExtensions: {githubWorkflowTrigger: push}\n                    ctlog:\n", 1),
			trusted, append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.Broken, types.SignatureRefused, true, nil},
		{"keyless, the policy's roots and rekor.pubkey", f.signLegacy(t, host, "tpolroots", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			keylessRoots("tpolroots"), nil, idFlags(testSigner), types.OK, "", true,
			[]string{"SIGSTORE_ROOT_FILE=" + filepath.Join(f.dir, "roots.pem"), "SIGSTORE_REKOR_PUBLIC_KEY=" + f.rekorPub}},
		{"keyless, subjectRegExp matches", f.signLegacy(t, host, "tregexp", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			keylessRegexp("tregexp", `.*@regcheck\.test`), trusted, []string{"--certificate-identity-regexp", `.*@regcheck\.test`,
				"--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct=true", "--trusted-root", f.trustedRoot}, types.OK, "", true, nil},
		{"keyless, subjectRegExp does not match", f.signLegacy(t, host, "tregexpno", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			keylessRegexp("tregexpno", `.*@elsewhere\.test`), trusted, []string{"--certificate-identity-regexp", `.*@elsewhere\.test`,
				"--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct=true", "--trusted-root", f.trustedRoot}, types.Broken, types.SignatureRefused, false, nil},
		{"keyless, no SET, log required", f.signLegacy(t, host, "tkeylessnoset", sigSpec{key: leafKey, cert: leafCert}),
			keylessPolicy("tkeylessnoset", testSigner), trusted, append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.Broken, types.SignatureRefused, false, nil},
		{"policy-controller keyless, identity matches", f.signLegacy(t, host, "tcipmatch", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			withTrustRoot(cip("tcipmatch", "{issuer: "+testIssuer+", subject: "+testSigner+"}")), trusted,
			append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.OK, "", true, nil},
		{"policy-controller keyless, identity mismatch", f.signLegacy(t, host, "tcipother", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			withTrustRoot(cip("tcipother", "{issuer: "+testIssuer+", subjectRegExp: '^ci@.*'}")), trusted,
			[]string{"--certificate-identity-regexp", "^ci@.*", "--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct=true", "--trusted-root", f.trustedRoot},
			types.Broken, types.SignatureRefused, false, nil},
		{"policy-controller keyless, the TrustRoot object's sigstoreKeys", f.signLegacy(t, host, "tcipobj", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			withTrustRoot(cip("tcipobj", "{issuer: "+testIssuer+", subject: "+testSigner+"}")), nil,
			append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.OK, "", true, nil},
		{"policy-controller keyless, the TrustRoot object, forged SET", f.signLegacy(t, host, "tcipforged", sigSpec{key: leafKey, cert: leafCert, set: forgedSET, at: now}),
			withTrustRoot(cip("tcipforged", "{issuer: "+testIssuer+", subject: "+testSigner+"}")), nil,
			append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.Broken, types.SignatureRefused, false, nil},
		// policy-controller, with a ctlog, searches Rekor for an entry no
		// SET carries: not decided offline (cosign --offline refuses).
		{"policy-controller keyless, ctlog, no SET", f.signLegacy(t, host, "tcipnoset", sigSpec{key: leafKey, cert: leafCert}),
			withTrustRoot(cip("tcipnoset", "{issuer: "+testIssuer+", subject: "+testSigner+"}")), trusted,
			append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.Unknown, types.SignatureUnverifiable, false, nil},
		{"policy-controller keyless, TrustRoot not given", f.signLegacy(t, host, "tcipnoroot", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			cip("tcipnoroot", "{issuer: "+testIssuer+", subject: "+testSigner+"}"), nil,
			idFlags(testSigner), types.Unknown, types.SignatureUnverifiable, false, nil},
		// policy-controller cannot build the authority without the
		// TrustRoot it names: --trusted-root does not stand in for it.
		{"policy-controller keyless, TrustRoot not given, --trusted-root given", f.signLegacy(t, host, "tcipnorootflag", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now}),
			cip("tcipnorootflag", "{issuer: "+testIssuer+", subject: "+testSigner+"}"), trusted,
			idFlags(testSigner), types.Unknown, types.SignatureUnverifiable, false, nil},
		{"keyless, no trust material", keylessNoRoot, keylessPolicy("tnoroot", testSigner), nil,
			idFlags(testSigner), types.Unknown, types.SignatureUnverifiable, false, nil},
		{"keyless, expired certificate, SET inside its validity", expiredIn, keylessPolicy("texpiredin", testSigner), trusted,
			append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.OK, "", true, nil},
		{"keyless, expired certificate, SET after it", expiredOut, keylessPolicy("texpiredout", testSigner), trusted,
			append(idFlags(testSigner), "--trusted-root", f.trustedRoot), types.Broken, types.SignatureRefused, false, nil},
	}
	// why: for each case cosign refuses, what regcheck's finding and
	// cosign's output say: the fixture fails for the reason the case
	// names, not another; "" where cosign, given no such check, passes
	// and the engine's own rule refuses.
	why := map[string][2]string{
		"key, forged SET":                                                      {"unable to verify SET", "unable to verify SET"},
		"key, no SET, Kyverno default":                                         {"carries no transparency-log proof", "offline verification failed"},
		"key, good SET, no trust material":                                     {"no Rekor public key was given", "getting rekor public keys"},
		"keyless, identity mismatch":                                           {"subject mismatch: expected someone-else@regcheck.test", "none of the expected identities matched"},
		"keyless, subjectRegExp does not match":                                {"subject mismatch: expected .*@elsewhere", "none of the expected identities matched"},
		"keyless, Kyverno additionalExtensions not carried":                    {"extension mismatch: expected push for key githubWorkflowTrigger", ""},
		"keyless, no SET, log required":                                        {"offline verification failed", "offline verification failed"},
		"policy-controller keyless, identity mismatch":                         {"none of the expected identities matched", "none of the expected identities matched"},
		"keyless, no trust material":                                           {"no Fulcio CA was given", "TUF"},
		"policy-controller keyless, the TrustRoot object, forged SET":          {"unable to verify SET", "unable to verify SET"},
		"policy-controller keyless, TrustRoot not given":                       {"TrustRoot test-root the policy names", "TUF"},
		"policy-controller keyless, TrustRoot not given, --trusted-root given": {"TrustRoot test-root the policy names", "TUF"},
		"policy-controller keyless, ctlog, no SET":                             {"searches Rekor for its entry online", "offline verification failed"},
		"keyless, expired certificate, SET after it":                           {"certificate expired before observed time", "certificate expired before observed time"},
	}
	if wait := time.Until(shortTo.Add(time.Second)); wait > 0 {
		time.Sleep(wait) // the 5-second leaf has expired
	}
	var table []string
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			repo := strings.SplitN(strings.TrimPrefix(tt.im.ref, host+"/"), ":", 2)[0]
			got := scanTrusted(t, tt.im.ref, tt.policy, tt.regcheck...)
			ok, out, err := c.VerifyWithEnv(ctx, tt.env, host+"/"+repo+"@"+tt.im.digest, tt.cosign...)
			if err != nil {
				t.Fatal(err)
			}
			table = append(table, fmt.Sprintf("%-55s regcheck %-8s cosign exit0=%v", tt.name, got.Verdict, ok))
			t.Logf("regcheck %s %+v; cosign verify passed=%v: %s", got.Verdict, got.Findings, ok, lastLines(out, 2))
			if ok != tt.cosignOK {
				t.Errorf("cosign verify passed=%v, want %v (the fixture is not what the case says):\n%s", ok, tt.cosignOK, lastLines(out, 5))
			}
			if got.Verdict != tt.want || (tt.code != "" && findingOf(got, tt.code) == nil) {
				t.Errorf("regcheck: verdict %s, want %s with %s:\n%+v", got.Verdict, tt.want, tt.code, got.Findings)
			}
			w, named := why[tt.name]
			switch {
			case !tt.cosignOK && !named:
				t.Errorf("the case names no reason for cosign's refusal")
			case named && !strings.Contains(fmt.Sprint(got.Findings), w[0]):
				t.Errorf("regcheck's finding does not say %q: %+v", w[0], got.Findings)
			case named && w[1] != "" && !strings.Contains(out, w[1]):
				t.Errorf("cosign does not say %q:\n%s", w[1], lastLines(out, 5))
			}
		})
	}
	t.Logf("agreement:\n%s", strings.Join(table, "\n"))
}
