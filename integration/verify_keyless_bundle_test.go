//go:build integration

package integration

import (
	"context"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	cosignbin "github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// ivpKeylessBundlePolicy is a Kyverno ImageValidatingPolicy in Deny on
// HOST/REPO* with one keyless attestor of IDENTITY (a flow mapping) and
// CTLOG (its ctlog block, or "").
const ivpKeylessBundlePolicy = `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ivp-keyless-bundle
spec:
  validationActions: [Deny]
  matchImageReferences:
    - glob: "HOST/REPO*"
  attestors:
    - name: signer
      cosign:
        keyless:
          identities:
            - IDENTITY
CTLOG  validations:
    - expression: >-
        images.containers.map(image, verifyImageSignatures(image, [attestors.signer])).all(e, e > 0)
      message: failed keyless verification
`

// cipKeylessBundlePolicy is a policy-controller ClusterImagePolicy on
// HOST/REPO* with one keyless authority of IDENTITY in the bundle format
// (KEYLESS: more of its keyless fields, or ""), in an included
// namespace.
const cipKeylessBundlePolicy = `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata:
  name: signed-keyless-bundle
spec:
  images:
    - glob: "HOST/REPO*"
  authorities:
    - signatureFormat: bundle
      keyless:
KEYLESS        identities:
          - IDENTITY
---
apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels:
    policy.sigstore.dev/include: "true"
`

// keylessSpec is how a keyless bundle is signed: with key, as the holder
// of cert (PEM), a statement of predicateType; tamper alters the signed
// statement after signing.
type keylessSpec struct {
	key           *ecdsa.PrivateKey
	cert          []byte
	predicateType string
	tamper        bool
}

// signKeylessBundle pushes an image to host/repo and signs it keyless in
// cosign v3's bundle format: a DSSE envelope of an in-toto statement
// about the digest signed by the leaf's key, the leaf certificate as the
// verification material, and a Rekor v1 dsse entry (the certificate as
// its verifier) with its inclusion promise and proof by the test log
// (logEntry), pushed as a referrer as cosign does (pushBundle). It
// returns the image and the bundle's JSON.
func (f *trustFixture) signKeylessBundle(t *testing.T, host, repo string, s keylessSpec) (admImage, []byte) {
	t.Helper()
	ref := host + "/" + repo + ":v1"
	d := pushSingle(t, ref, "keyless bundle "+repo)
	dref, err := name.NewDigest(host+"/"+repo+"@"+d, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	var predicate []byte
	if s.predicateType == slsaType {
		predicate = slsaPredicate
	}
	payload := statement(t, d, s.predicateType, predicate)
	env, sig := envelope(t, s.key, payload)
	envJSON, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	entry := f.logEntry(t, dsseBodyOf(t, envJSON, payload, sig, s.cert), time.Now(), goodEntry)
	if s.tamper {
		env.Payload = base64.StdEncoding.EncodeToString(statement(t, d, s.predicateType, []byte(`{"tampered":true}`)))
	}
	block, _ := pem.Decode(s.cert)
	vm := &protobundle.VerificationMaterial{
		Content:     &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: block.Bytes}},
		TlogEntries: []*protorekor.TransparencyLogEntry{entry}}
	return admImage{ref: ref, digest: d}, pushBundle(t, dref, vm, env, s.predicateType)
}

// kyvernoSigstoreGo is the oracle where cosign cannot say Kyverno's
// SigstoreBundle rule: sigstore-go (v1.3.0, Kyverno's) verifying the
// bundle with the options Kyverno's buildVerifyOptions gives it (opts),
// against the trusted root, with buildPolicy's policy (the digest and
// the certificate identity when withID, as when the attestor names both
// issuer and subject: kyverno/kyverno
// pkg/image/verifiers/cpol/cosign/sigstore.go).
func kyvernoSigstoreGo(t *testing.T, trustedRoot string, b []byte, digest string, withID bool, opts ...verify.VerifierOption) func(string) (bool, string, error) {
	return func(string) (bool, string, error) {
		tr, err := root.NewTrustedRootFromPath(trustedRoot)
		if err != nil {
			return false, "", err
		}
		var sb bundle.Bundle
		if err := sb.UnmarshalJSON(b); err != nil {
			return false, "", err
		}
		h, _ := hex.DecodeString(strings.TrimPrefix(digest, "sha256:"))
		id, err := verify.NewShortCertificateIdentity(testIssuer, "", testSigner, "")
		if err != nil {
			return false, "", err
		}
		v, err := verify.NewVerifier(tr, opts...)
		if err != nil {
			return false, "sigstore-go: " + err.Error(), nil
		}
		var policy []verify.PolicyOption
		if withID {
			policy = append(policy, verify.WithCertificateIdentity(id))
		}
		if _, err := v.Verify(&sb, verify.NewPolicy(verify.WithArtifactDigest("sha256", h), policy...)); err != nil {
			return false, "sigstore-go: " + err.Error(), nil
		}
		return true, "sigstore-go verified the bundle", nil
	}
}

// TestVerifyKeylessBundle holds regcheck's verdict on keyless v3 sigstore
// bundles (a test Fulcio CA's leaf, a Rekor v1 entry by the test log),
// under Kyverno's ClusterPolicy type: SigstoreBundle (sigstore-go with
// Kyverno's options), an ImageValidatingPolicy in Deny and a
// policy-controller keyless authority with signatureFormat: bundle (both
// through cosign's CheckOpts), to cosign verify --new-bundle-format
// v3.1.3 with the identity flags matching each rule and --trusted-root
// made by cosign trusted-root create (offline, TUF_ROOT empty), or, where
// cosign cannot say Kyverno's rule, sigstore-go with Kyverno's options.
func TestVerifyKeylessBundle(t *testing.T) {
	ctx := context.Background()
	c := newCosign(t)
	f := newTrustFixture(t, c)
	other := newTrustFixture(t, c) // another CA
	host := startEmpty(t, registry.V3).Host()
	now := time.Now()
	leafKey, leafCert := f.leaf(t, testSigner, now.Add(-time.Minute), now.Add(10*time.Minute))
	otherKey, otherCert := other.leaf(t, testSigner, now.Add(-time.Minute), now.Add(10*time.Minute))
	good := keylessSpec{key: leafKey, cert: leafCert, predicateType: cosignSignType}
	sign := func(repo string, s keylessSpec) admImage { im, _ := f.signKeylessBundle(t, host, repo, s); return im }
	trusted := []string{"--trusted-root", f.trustedRoot}
	subject := func(s string) string { return "                    subject: " + s + "\n" }
	cp := func(repo, identity, extra string) string {
		body := "          attestors:\n            - entries:\n                - keyless:\n" + identity + "                    issuer: " + testIssuer + "\n" + extra
		return strings.NewReplacer("HOST", host, "REPO", repo, "TYPE", "SigstoreBundle", "BODY", body).Replace(kyvernoBundlePolicy)
	}
	cpAtt := func(repo string) string {
		body := "          attestations:\n            - type: " + slsaType + "\n              attestors:\n                - entries:\n                    - keyless:\n" +
			"                        subject: " + testSigner + "\n                        issuer: " + testIssuer + "\n"
		return strings.NewReplacer("HOST", host, "REPO", repo, "TYPE", "SigstoreBundle", "BODY", body).Replace(kyvernoBundlePolicy)
	}
	ignoreSCT := "        ctlog:\n          insecureIgnoreSCT: true\n"
	ivp := func(repo, identity, ctlog string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "IDENTITY", identity, "CTLOG", ctlog).Replace(ivpKeylessBundlePolicy)
	}
	cip := func(repo, identity, keyless string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "IDENTITY", identity, "KEYLESS", keyless).Replace(cipKeylessBundlePolicy)
	}
	me := "{issuer: " + testIssuer + ", subject: " + testSigner + "}"
	rekorPEM, err := os.ReadFile(f.rekorPub)
	if err != nil {
		t.Fatal(err)
	}
	cipTrustRoot := func(repo string) string {
		return cip(repo, me, "        trustRootRef: test-root\n        insecureIgnoreSCT: true\n") + strings.NewReplacer("CHAIN", base64.StdEncoding.EncodeToString(f.caPEM),
			"REKORKEY", base64.StdEncoding.EncodeToString(rekorPEM)).Replace(trustRootObject)
	}
	cipIgnore := "        insecureIgnoreSCT: true\n"
	cipAtt := func(repo, identity, keyless string) string {
		return strings.Replace(cip(repo, identity, keyless), "---\n", "      attestations:\n        - name: prov\n          predicateType: "+slsaType+"\n---\n", 1)
	}
	verifyAtt := func(flags ...string) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) {
			return c.VerifyAttestationWith(ctx, ref, cosignbin.Bundle, append(flags, "--type", "slsaprovenance")...)
		}
	}
	verifyBundle := func(flags ...string) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) {
			return c.VerifyFormatWith(ctx, ref, cosignbin.Bundle, flags...)
		}
	}
	id := func(subject string, more ...string) []string {
		return append([]string{"--certificate-identity", subject, "--certificate-oidc-issuer", testIssuer}, more...)
	}
	noSCT := "--insecure-ignore-sct=true"
	okFlags := append(id(testSigner, noSCT), trusted...)
	mismatch := "no matching CertificateIdentity found"
	otherCA := "leaf certificate verification failed"
	sct := "only able to verify 0 SCT entries"
	verified := [2]string{"", "Existence of the claims in the transparency log was verified offline"}
	ignTlogIm, ignTlogBundle := f.signKeylessBundle(t, host, "kbignoretlog", good)
	subjIm, subjBundle := f.signKeylessBundle(t, host, "kbsubjonly", good)

	cases := []tlogCase{
		// Kyverno ClusterPolicy, type: SigstoreBundle: sigstore-go with
		// WithTransparencyLog(1), WithObserverTimestamps(1), no SCT asked
		// for: cosign's --insecure-ignore-sct with the log required.
		{"Kyverno SigstoreBundle, identity matches", sign("kbmatch", good), cp("kbmatch", subject(testSigner), ""), trusted,
			verifyBundle(okFlags...), types.OK, "", true, verified},
		{"Kyverno SigstoreBundle, other subject", sign("kbother", good), cp("kbother", subject("someone-else@regcheck.test"), ""), trusted,
			verifyBundle(append(id("someone-else@regcheck.test", noSCT), trusted...)...), types.Broken, types.SignatureRefused, false, [2]string{mismatch, mismatch}},
		{"Kyverno SigstoreBundle, subjectRegExp matches", sign("kbregexp", good), cp("kbregexp", "                    subjectRegExp: '.*@regcheck\\.test'\n", ""), trusted,
			verifyBundle("--certificate-identity-regexp", `.*@regcheck\.test`, "--certificate-oidc-issuer", testIssuer, noSCT, "--trusted-root", f.trustedRoot), types.OK, "", true, verified},
		{"Kyverno SigstoreBundle, no trusted root", sign("kbnoroot", good), cp("kbnoroot", subject(testSigner), ""), nil,
			verifyBundle(id(testSigner, noSCT)...), types.Unknown, types.SignatureUnverifiable, false, [2]string{"give that trusted root as --trusted-root", "TUF"}},
		{"Kyverno SigstoreBundle, another CA", sign("kbotherca", keylessSpec{key: otherKey, cert: otherCert, predicateType: cosignSignType}), cp("kbotherca", subject(testSigner), ""), trusted,
			verifyBundle(okFlags...), types.Broken, types.SignatureRefused, false, [2]string{otherCA, otherCA}},
		{"Kyverno SigstoreBundle, tampered statement", sign("kbtamper", keylessSpec{key: leafKey, cert: leafCert, predicateType: cosignSignType, tamper: true}), cp("kbtamper", subject(testSigner), ""), trusted,
			verifyBundle(okFlags...), types.Broken, types.SignatureRefused, false, [2]string{"does not match envelope payload hash", "does not match envelope payload hash"}},
		{"Kyverno SigstoreBundle, attestation, identity matches", sign("kbatt", keylessSpec{key: leafKey, cert: leafCert, predicateType: slsaType}), cpAtt("kbatt"), trusted,
			func(ref string) (bool, string, error) {
				return c.VerifyAttestationWith(ctx, ref, cosignbin.Bundle, append(okFlags, "--type", "slsaprovenance")...)
			}, types.OK, "", true, verified},
		// The log required and ctlog.ignoreSCT: Kyverno's verifier gets
		// WithTransparencyLog(1) alone, which sigstore-go will not build.
		{"Kyverno SigstoreBundle, ctlog.ignoreSCT with the log", sign("kbignoresct", good), cp("kbignoresct", subject(testSigner), "                    ctlog: {ignoreSCT: true}\n"), trusted,
			kyvernoUnbuildable, types.Broken, types.SignatureRefused, false, [2]string{"sigstore-go refuses to build", "you must specify at least one of"}},
		// The log ignored, the SCT not: WithObserverTimestamps(1) alone,
		// which only an RFC 3161 timestamp can meet.
		{"Kyverno SigstoreBundle, rekor.ignoreTlog, SCT not ignored", ignTlogIm, cp("kbignoretlog", subject(testSigner), "                    rekor: {ignoreTlog: true}\n"), trusted,
			kyvernoSigstoreGo(t, f.trustedRoot, ignTlogBundle, ignTlogIm.digest, true, verify.WithObserverTimestamps(1)), types.Broken, types.SignatureRefused, false,
			[2]string{"threshold not met for verified signed & log entry integrated timestamps", "threshold not met for verified signed & log entry integrated timestamps"}},
		// Only the subject named: buildPolicy gives sigstore-go no
		// identity, which it refuses (cosign would take the subject).
		{"Kyverno SigstoreBundle, subject without issuer", subjIm, strings.Replace(cp("kbsubjonly", subject(testSigner), ""), "                    issuer: "+testIssuer+"\n", "", 1), trusted,
			kyvernoSigstoreGo(t, f.trustedRoot, subjBundle, subjIm.digest, false, verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1)), types.Broken, types.SignatureRefused, false,
			[2]string{"can't verify identities without providing at least one identity", "can't verify identities without providing at least one identity"}},
		{"Kyverno SigstoreBundle, rekor.ignoreTlog and ctlog.ignoreSCT", sign("kbnolog", good),
			cp("kbnolog", subject(testSigner), "                    rekor: {ignoreTlog: true}\n                    ctlog: {ignoreSCT: true}\n"), trusted,
			verifyBundle(append(okFlags, "--insecure-ignore-tlog=true")...), types.OK, "", true, [2]string{}},

		// ImageValidatingPolicy: cosign.VerifyImageAttestations with the
		// attestor's CheckOpts (the SCT unless ctlog.insecureIgnoreSCT).
		{"ImageValidatingPolicy, identity matches", sign("kimatch", good), ivp("kimatch", me, ignoreSCT), trusted,
			verifyBundle(okFlags...), types.OK, "", true, verified},
		{"ImageValidatingPolicy, other subject", sign("kiother", good), ivp("kiother", "{issuer: "+testIssuer+", subject: someone-else@regcheck.test}", ignoreSCT), trusted,
			verifyBundle(append(id("someone-else@regcheck.test", noSCT), trusted...)...), types.Broken, types.SignatureRefused, false, [2]string{mismatch, mismatch}},
		{"ImageValidatingPolicy, subjectRegExp matches", sign("kiregexp", good), ivp("kiregexp", "{issuer: "+testIssuer+", subjectRegExp: '.*@regcheck\\.test'}", ignoreSCT), trusted,
			verifyBundle("--certificate-identity-regexp", `.*@regcheck\.test`, "--certificate-oidc-issuer", testIssuer, noSCT, "--trusted-root", f.trustedRoot), types.OK, "", true, verified},
		{"ImageValidatingPolicy, no trusted root", sign("kinoroot", good), ivp("kinoroot", me, ignoreSCT), nil,
			verifyBundle(id(testSigner, noSCT)...), types.Unknown, types.SignatureUnverifiable, false, [2]string{"give that trusted root as --trusted-root", "TUF"}},
		{"ImageValidatingPolicy, another CA", sign("kiotherca", keylessSpec{key: otherKey, cert: otherCert, predicateType: cosignSignType}), ivp("kiotherca", me, ignoreSCT), trusted,
			verifyBundle(okFlags...), types.Broken, types.SignatureRefused, false, [2]string{otherCA, otherCA}},
		{"ImageValidatingPolicy, SCT required, none embedded", sign("kisct", good), ivp("kisct", me, ""), trusted,
			verifyBundle(append(id(testSigner), trusted...)...), types.Broken, types.SignatureRefused, false, [2]string{sct, sct}},

		// policy-controller, signatureFormat: bundle. A keyless authority's
		// bundle signature is refused before anything is read: its
		// validSignatures calls cosign.VerifyImageSignatures with
		// NewBundleFormat, which answers "bundle support for image
		// signatures is not yet implemented" (cosign v3.1.3
		// pkg/cosign/verify.go), where cosign verify --new-bundle-format
		// verifies the same bundle and exits 0. Its bundle attestations are
		// verified (VerifyImageAttestations with its CheckOpts: its TUF
		// root, --trusted-root here, and the log always required).
		{"policy-controller bundle signature, identity matches: the engine refuses it", sign("kpmatch", good), cip("kpmatch", me, cipIgnore), trusted,
			verifyBundle(okFlags...), types.Broken, types.SignatureRefused, true, [2]string{"bundle support for image signatures is not yet implemented", ""}},
		{"policy-controller bundle signature, no trusted root: refused all the same", sign("kpnoroot", good), cip("kpnoroot", me, cipIgnore), nil,
			verifyBundle(id(testSigner, noSCT)...), types.Broken, types.SignatureRefused, false, [2]string{"bundle support for image signatures is not yet implemented", "TUF"}},
		{"policy-controller bundle attestation, identity matches", sign("kpatt", keylessSpec{key: leafKey, cert: leafCert, predicateType: slsaType}), cipAtt("kpatt", me, cipIgnore), trusted,
			verifyAtt(okFlags...), types.OK, "", true, verified},
		{"policy-controller bundle attestation, subjectRegExp does not match", sign("kpattother", keylessSpec{key: leafKey, cert: leafCert, predicateType: slsaType}),
			cipAtt("kpattother", "{issuer: "+testIssuer+", subjectRegExp: '^ci@.*'}", cipIgnore), trusted,
			verifyAtt("--certificate-identity-regexp", "^ci@.*", "--certificate-oidc-issuer", testIssuer, noSCT, "--trusted-root", f.trustedRoot), types.Broken, types.AttestationRefused, false, [2]string{mismatch, mismatch}},
		// A TrustRoot named: policy-controller's trusted root is rebuilt
		// from its sigstoreKeys, which regcheck does not do yet.
		{"policy-controller bundle attestation, TrustRoot named", sign("kptrustroot", keylessSpec{key: leafKey, cert: leafCert, predicateType: slsaType}),
			strings.Replace(cipTrustRoot("kptrustroot"), "---\n", "      attestations:\n        - name: prov\n          predicateType: "+slsaType+"\n---\n", 1), trusted,
			verifyAtt(okFlags...), types.Unknown, types.SignatureUnverifiable, true, [2]string{"does not rebuild offline yet", ""}},
		{"policy-controller bundle attestation, another CA", sign("kpattca", keylessSpec{key: otherKey, cert: otherCert, predicateType: slsaType}), cipAtt("kpattca", me, cipIgnore), trusted,
			verifyAtt(okFlags...), types.Broken, types.AttestationRefused, false, [2]string{otherCA, otherCA}},
	}
	runOracleCases(t, host, cases)
}
