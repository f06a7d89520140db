//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	cosignbin "github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// kyvernoKeylessAttPolicy is a Kyverno Enforce ClusterPolicy (type:
// Cosign, the legacy .att) on HOST/REPO* requiring an attestation of
// predicate type TYPE by one keyless entry for SUBJECT from the test
// issuer, SCTs ignored (the test CA has no CT log), the log proof
// required (Kyverno's default).
const kyvernoKeylessAttPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-keyless-attestation
spec:
  rules:
    - name: verify-keyless-attestation
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/REPO*"]
          type: Cosign
          failureAction: Enforce
          attestations:
            - type: TYPE
              attestors:
                - entries:
                    - keyless:
                        subject: SUBJECT
                        issuer: ` + testIssuer + `
                        ctlog:
                          ignoreSCT: true
`

// otherType is a predicate type the fixtures never attest, and cosign
// verify-attestation's --type naming it.
const (
	otherType       = "https://cyclonedx.org/bom"
	otherTypeCosign = "cyclonedx"
)

// TestVerifyKeylessAttestation holds regcheck's verdict on a keyless
// legacy attestation (the .att tag: a DSSE envelope of an in-toto
// statement signed by a leaf of the test CA, the certificate and a SET
// of the test log in its annotations) under a Kyverno keyless attestor
// and a policy-controller keyless authority with attestations, to cosign
// verify-attestation v3.1.3 (--offline, --certificate-identity,
// --certificate-oidc-issuer, --insecure-ignore-sct=true, --trusted-root
// made by cosign trusted-root create, --type, TUF_ROOT an empty folder)
// on the same fixture.
func TestVerifyKeylessAttestation(t *testing.T) {
	ctx := context.Background()
	c := newCosign(t)
	f := newTrustFixture(t, c)
	other := newTrustFixture(t, c) // another CA (and log), same names
	host := startEmpty(t, registry.V3).Host()
	now := time.Now()
	leafKey, leafCert := f.leaf(t, testSigner, now.Add(-time.Minute), now.Add(10*time.Minute))
	otherKey, otherCert := other.leaf(t, testSigner, now.Add(-time.Minute), now.Add(10*time.Minute))
	attest := func(repo string, withSET bool) admImage {
		return f.attestLegacyAs(t, host, repo, sigSpec{key: leafKey, cert: leafCert}, goodEntry, withSET, slsaType)
	}
	trusted := []string{"--trusted-root", f.trustedRoot}
	kyverno := func(repo, subject, typ string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "SUBJECT", subject, "TYPE", typ).Replace(kyvernoKeylessAttPolicy)
	}
	cip := func(repo, identity, typ string) string {
		p := strings.NewReplacer("HOST", host, "REPO", repo, "IDENTITY", identity).Replace(cipKeylessPolicy)
		p = strings.Replace(p, "\n---\n", "\n"+strings.Replace(cipAttestations, slsaType, typ, 1)+"---\n", 1)
		return f.withTrustRoot(t, p)
	}
	id := "{issuer: " + testIssuer + ", subject: " + testSigner + "}"
	verifyAtt := func(subject, typ string, flags ...string) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) {
			return c.VerifyAttestationWith(ctx, ref, cosignbin.Legacy, append([]string{"--certificate-identity", subject,
				"--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct=true", "--type", typ}, flags...)...)
		}
	}
	mismatch := "none of the expected identities matched"
	wrongType := "none of the attestations matched the predicate type: "
	// The statement is a SLSA provenance, its unsigned annotation says
	// otherType: present by the annotation, refused by the statement.
	misannotated := func(repo string) admImage {
		return f.attestLegacyAs(t, host, repo, sigSpec{key: leafKey, cert: leafCert}, goodEntry, true, otherType)
	}
	cases := []tlogCase{
		{"Kyverno keyless, identity matches", attest("kaok", true), kyverno("kaok", testSigner, slsaType), trusted,
			verifyAtt(testSigner, "slsaprovenance", trusted...), types.OK, "", true, [2]string{}},
		{"Kyverno keyless, other subject", attest("kasubject", true), kyverno("kasubject", "someone-else@regcheck.test", slsaType), trusted,
			verifyAtt("someone-else@regcheck.test", "slsaprovenance", trusted...), types.Broken, types.AttestationRefused, false,
			[2]string{"subject mismatch: expected someone-else@regcheck.test", mismatch}}, // Kyverno's own words, then cosign's
		{"Kyverno keyless, no trusted root", attest("kanoroot", true), kyverno("kanoroot", testSigner, slsaType), nil,
			verifyAtt(testSigner, "slsaprovenance"), types.Unknown, types.SignatureUnverifiable, false, [2]string{"no Fulcio CA was given", "TUF"}},
		{"Kyverno keyless, another CA", f.attestLegacyAs(t, host, "kaotherca", sigSpec{key: otherKey, cert: otherCert}, goodEntry, true, slsaType),
			kyverno("kaotherca", testSigner, slsaType), trusted,
			verifyAtt(testSigner, "slsaprovenance", trusted...), types.Broken, types.AttestationRefused, false, [2]string{"leaf certificate verification failed", "leaf certificate verification failed"}},
		{"Kyverno keyless, wrong predicate type", attest("katype", true), kyverno("katype", testSigner, otherType), trusted,
			verifyAtt(testSigner, otherTypeCosign, trusted...), types.Broken, types.SignedAttestationMissing, false, [2]string{"none is there", wrongType}},
		{"Kyverno keyless, annotated type, statement another", misannotated("kamisann"), kyverno("kamisann", testSigner, otherType), trusted,
			verifyAtt(testSigner, otherTypeCosign, trusted...), types.Broken, types.AttestationRefused, false, [2]string{wrongType + otherType + ", found: " + slsaType, wrongType}},
		{"Kyverno keyless, no SET, log required", attest("kanoset", false), kyverno("kanoset", testSigner, slsaType), trusted,
			verifyAtt(testSigner, "slsaprovenance", trusted...), types.Broken, types.AttestationRefused, false, [2]string{"offline verification failed", "offline verification failed"}},
		{"policy-controller keyless, identity matches", attest("caok", true), cip("caok", id, slsaType), nil,
			verifyAtt(testSigner, "slsaprovenance", trusted...), types.OK, "", true, [2]string{}},
		{"policy-controller keyless, other subject", attest("casubject", true), cip("casubject", "{issuer: "+testIssuer+", subjectRegExp: '^ci@.*'}", slsaType), nil,
			func(ref string) (bool, string, error) {
				return c.VerifyAttestationWith(ctx, ref, cosignbin.Legacy, "--certificate-identity-regexp", "^ci@.*",
					"--certificate-oidc-issuer", testIssuer, "--insecure-ignore-sct=true", "--type", "slsaprovenance", "--trusted-root", f.trustedRoot)
			}, types.Broken, types.AttestationRefused, false, [2]string{mismatch, mismatch}},
		{"policy-controller keyless, wrong predicate type", attest("catype", true), cip("catype", id, otherType), nil,
			verifyAtt(testSigner, otherTypeCosign, trusted...), types.Broken, types.SignedAttestationMissing, false, [2]string{"none is there", wrongType}},
		{"policy-controller keyless, annotated type, statement another", misannotated("camisann"), cip("camisann", id, otherType), nil,
			verifyAtt(testSigner, otherTypeCosign, trusted...), types.Broken, types.AttestationRefused, false, [2]string{wrongType + otherType + ", found: " + slsaType, wrongType}},
		// policy-controller, with the authority's ctlog, searches Rekor
		// for an entry no SET carries: not decided offline.
		{"policy-controller keyless, ctlog, no SET", attest("canoset", false), cip("canoset", id, slsaType), nil,
			verifyAtt(testSigner, "slsaprovenance", trusted...), types.Unknown, types.SignatureUnverifiable, false, [2]string{"searches Rekor for its entry online", "offline verification failed"}},
	}
	runOracleCases(t, host, cases)
}
