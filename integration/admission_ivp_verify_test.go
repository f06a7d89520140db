//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// ivpVerifyPolicies are ImageValidatingPolicies with key A as their
// attestor (the log ignored: ctlog.insecureIgnoreTlog, as the fixtures
// are signed with --tlog-upload=false): ivp-attested requires a SLSA
// provenance attestation signed by it (verifyAttestationSignatures, as
// Kyverno's documentation writes it), ivp-bundle-signed a signature by
// it (verifyImageSignatures), each in Deny, and the same in Audit.
const ivpVerifyPolicies = `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ivp-attested
spec:
  validationActions: [ACTION]
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE]
        resources: [pods]
  matchImageReferences:
    - glob: "HOST/ivpattREPO/*"
  attestors:
    - name: cosign
      cosign:
        key:
          data: |-
PEM
        ctlog:
          insecureIgnoreTlog: true
  attestations:
    - name: provenance
      intoto:
        type: https://slsa.dev/provenance/v0.2
  validations:
    - expression: >-
        images.containers.map(image, verifyAttestationSignatures(image, attestations.provenance, [attestors.cosign])).all(e, e > 0)
      message: failed to verify the provenance attestation
---
apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ivp-bundle-signed
spec:
  validationActions: [ACTION]
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE]
        resources: [pods]
  matchImageReferences:
    - glob: "HOST/ivpsigREPO/*"
  attestors:
    - name: cosign
      cosign:
        key:
          data: |-
PEM
        ctlog:
          insecureIgnoreTlog: true
  validations:
    - expression: >-
        images.containers.map(image, verifyImageSignatures(image, [attestors.cosign])).all(e, e > 0)
      message: failed image signature verification
`

// ivpVerifyCase is one image of TestAdmissionIVPVerify: what regcheck
// must say, and the cosign run (key A, the engine's flags) that is its
// ground truth with the exit it must have.
type ivpVerifyCase struct {
	ivpCase
	cosign func(ref string) (bool, string, error)
	exitOK bool // cosign exits 0
}

// TestAdmissionIVPVerify: what an ImageValidatingPolicy verifies beyond
// the legacy .sig (TestAdmissionIVP): verifyAttestationSignatures
// verified by the attestor's key, and the layout Kyverno reads, bundles
// when the image has any, else the legacy tags
// (buildCheckOptsWithBundleDetection). Each case's verdict is held, with
// scan -f and with the policies applied to a real apiserver with
// Kyverno's CRDs, to cosign verify / verify-attestation v3.1.3 with key A
// on the same fixture, with Kyverno's flags: --new-bundle-format where
// the image has bundles, --new-bundle-format=false where not,
// --insecure-ignore-tlog (ctlog.insecureIgnoreTlog), TUF_ROOT an empty
// folder, offline. Verified = ok and exit 0; refused = broken (Deny) or
// at-risk (Audit) and exit non-zero; missing = broken and exit non-zero.
func TestAdmissionIVPVerify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, b := newAdmCosign(t), newAdmCosign(t)
	reg := startEmpty(t, registry.V3)
	host := reg.Host()
	attest := func(c *cosign.Cosign, repo string, f cosign.Format) admImage {
		ref := host + "/" + repo + ":v1"
		d := pushSingle(t, ref, "ivp attest "+repo)
		if err := c.Attest(ctx, host+"/"+repo+"@"+d, "slsaprovenance", slsaPredicate, f); err != nil {
			t.Fatal(err)
		}
		return admImage{ref: ref, digest: d}
	}
	// both: a legacy .sig by A and a bundle by B: Kyverno reads the bundle.
	both := pushAndSign(t, a, host, "ivpsig/both")
	if err := b.Sign(ctx, host+"/ivpsig/both@"+both.digest, cosign.Bundle, false); err != nil {
		t.Fatal(err)
	}
	verifyAtt := func(f cosign.Format) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) {
			return a.VerifyAttestationKey(ctx, ref, a.Pub, "slsaprovenance", f, true, "")
		}
	}
	verify := func(f cosign.Format) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) { return a.VerifyKey(ctx, ref, a.Pub, f, true, "") }
	}
	c := func(name string, im admImage, want types.Verdict, code types.Code, run func(string) (bool, string, error), ok bool) ivpVerifyCase {
		return ivpVerifyCase{ivpCase{name: name, im: im, want: want, code: code}, run, ok}
	}
	cases := []ivpVerifyCase{
		c("Deny, .att signed by the attestor", attest(a, "ivpatt/good", cosign.Legacy), types.OK, "", verifyAtt(cosign.Legacy), true),
		c("Deny, .att signed by another key", attest(b, "ivpatt/wrong", cosign.Legacy), types.Broken, types.AttestationRefused, verifyAtt(cosign.Legacy), false),
		c("Deny, attestation missing (signed, not attested)", pushAndSign(t, a, host, "ivpatt/missing"), types.Broken, types.SignedAttestationMissing, verifyAtt(cosign.Legacy), false),
		c("Deny, attestation bundle signed by the attestor", attest(a, "ivpatt/bgood", cosign.Bundle), types.OK, "", verifyAtt(cosign.Bundle), true),
		c("Deny, attestation bundle signed by another key", attest(b, "ivpatt/bwrong", cosign.Bundle), types.Broken, types.AttestationRefused, verifyAtt(cosign.Bundle), false),
		c("Audit, attestation bundle signed by another key", attest(b, "ivpattaudit/bwrong", cosign.Bundle), types.AtRisk, types.AttestationRefused, verifyAtt(cosign.Bundle), false),
		c("Deny, bundle-only image signed with the attestor's key", pushAndSignBundle(t, a, host, "ivpsig/bgood"), types.OK, "", verify(cosign.Bundle), true),
		c("Deny, bundle-only image signed with another key", pushAndSignBundle(t, b, host, "ivpsig/bwrong"), types.Broken, types.SignatureRefused, verify(cosign.Bundle), false),
		c("Audit, bundle-only image signed with another key", pushAndSignBundle(t, b, host, "ivpsigaudit/bwrong"), types.AtRisk, types.SignatureRefused, verify(cosign.Bundle), false),
		c("Deny, .sig by the attestor and a bundle by another key: the bundle is read", both, types.Broken, types.SignatureRefused, verify(cosign.Bundle), false),
		c("Deny, an attestation bundle by the attestor stands for the signature", attest(a, "ivpsig/attonly", cosign.Bundle), types.OK, "", verify(cosign.Bundle), true),
	}
	for _, tc := range cases {
		ref := strings.TrimSuffix(tc.im.ref, ":v1") + "@" + tc.im.digest
		ok, out, err := tc.cosign(ref)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: cosign (key A) passed=%v: %s", tc.name, ok, lastLines(out, 1))
		if ok != tc.exitOK {
			t.Fatalf("%s: cosign passed=%v, want %v (the fixture is not what the case says):\n%s", tc.name, ok, tc.exitOK, lastLines(out, 5))
		}
	}
	// The legacy .sig of the mixed image verifies on its own: only the
	// layout decides that case.
	if ok, out, err := a.VerifyKey(ctx, host+"/ivpsig/both@"+both.digest, a.Pub, cosign.Legacy, true, ""); err != nil || !ok {
		t.Fatalf("cosign verify --new-bundle-format=false on the mixed image: passed=%v, %v:\n%s", ok, err, lastLines(out, 5))
	}
	pem := indentPEM(t, a.Pub, 12)
	deny := strings.NewReplacer("HOST", host, "PEM", pem, "ACTION", "Deny", "REPO", "").Replace(ivpVerifyPolicies)
	audit := strings.NewReplacer("HOST", host, "PEM", pem, "ACTION", "Audit", "REPO", "audit", "ivp-attested", "ivp-attested-audit", "ivp-bundle-signed", "ivp-bundle-signed-audit").Replace(ivpVerifyPolicies)
	policies := deny + "---\n" + audit

	t.Run("scan -f", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { checkIVP(t, tc.ivpCase, scanWithPolicy(t, tc.im.ref, policies)) })
		}
	})
	t.Run("scan --cluster", func(t *testing.T) {
		var ims []admImage
		for _, tc := range cases {
			ims = append(ims, tc.im)
		}
		got, stderr := ivpClusterScan(t, ctx, ivpCluster(t, ctx, ims), policies)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				im := got[tc.im.ref]
				if im == nil {
					t.Fatalf("no result for %s:\n%s", tc.im.ref, stderr)
				}
				checkIVP(t, tc.ivpCase, im)
			})
		}
	})
}
