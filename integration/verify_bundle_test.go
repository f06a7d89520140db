//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// kyvernoBundlePolicy is a Kyverno Enforce ClusterPolicy on HOST/REPO*
// of type TYPE (Cosign, SigstoreBundle); BODY is its attestors or
// attestations block.
const kyvernoBundlePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-signed
spec:
  rules:
    - name: verify-signature
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/REPO*"]
          failureAction: Enforce
          type: TYPE
BODY`

// kyvernoAttestorsBlock is a rule's attestors: one entry, the key PUB;
// REKOR is its rekor block or "".
const kyvernoAttestorsBlock = `          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
REKOR`

// kyvernoAttestationsBlock requires a SLSA v0.2 provenance attestation
// signed by PUB, the log and the SCT ignored (under type: SigstoreBundle
// Kyverno otherwise requires an RFC 3161 timestamp of a key-signed
// bundle: admission/kyvernobundle.go).
const kyvernoAttestationsBlock = `          attestations:
            - type: https://slsa.dev/provenance/v0.2
              attestors:
                - entries:
                    - keys:
                        publicKeys: "PUB"
                        rekor: {ignoreTlog: true}
                        ctlog: {ignoreSCT: true}
`

// kyvernoAttestationsNoSCT is kyvernoAttestationsBlock with the log
// ignored and the SCT not.
var kyvernoAttestationsNoSCT = strings.Replace(kyvernoAttestationsBlock, "                        ctlog: {ignoreSCT: true}\n", "", 1)

// noStamp is what sigstore-go says, through cosign, of a bundle without
// the RFC 3161 timestamp --use-signed-timestamps requires.
const noStamp = "threshold not met for verified signed timestamps: 0 < 1"

// kyvernoUnbuildable is the oracle where cosign cannot say Kyverno's
// rule: sigstore-go (v1.3.0, Kyverno's) building the verifier Kyverno's
// SigstoreBundle path builds for a key attestor whose log is required
// and whose SCT is ignored (kyverno/kyverno
// pkg/image/verifiers/cpol/cosign/sigstore.go, buildVerifyOptions:
// WithTransparencyLog(1) alone). cosign never builds that verifier (a key
// asks it for WithNoObserverTimestamps).
func kyvernoUnbuildable(string) (bool, string, error) {
	if _, err := verify.NewVerifier(&root.BaseTrustedMaterial{}, verify.WithTransparencyLog(1)); err != nil {
		return false, "sigstore-go: " + err.Error(), nil
	}
	return true, "sigstore-go built the verifier", nil
}

// conditionsBlock is a condition on the attestation's predicate.
const conditionsBlock = `              conditions:
                - all:
                    - key: "{{ builder.id }}"
                      operator: Equals
                      value: https://example.com/builder
`

// cipBundlePolicy is a policy-controller ClusterImagePolicy on HOST/REPO*
// with one key authority (no ctlog: the log is ignored) in FORMAT, with
// ATTESTATIONS ("" for none: a signature is required).
const cipBundlePolicy = `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata:
  name: signed-by-key
spec:
  images:
    - glob: "HOST/REPO*"
  authorities:
    - key:
        data: "PUB"
      signatureFormat: FORMAT
ATTESTATIONS---
apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels:
    policy.sigstore.dev/include: "true"
`

const cipAttestations = `      attestations:
        - name: provenance
          predicateType: https://slsa.dev/provenance/v0.2
`

// bundleCase is one fixture: the image, the policy regcheck reads, the
// cosign run that is its ground truth, and what both must say.
type bundleCase struct {
	name     string
	im       admImage
	policy   string
	cosign   func(ref string) (bool, string, error)
	want     types.Verdict
	code     types.Code
	says     string // in the finding's message
	cosignOK bool
	// cosignSays, when set, is in the oracle's output: it refused for
	// the reason the case is about.
	cosignSays string
}

// TestVerifyBundle holds regcheck's verdict on v3 sigstore bundles and on
// attestations (legacy .att and bundle) to cosign verify /
// verify-attestation v3.1.3 run with the engine's flags on the same
// fixture: Kyverno type: SigstoreBundle and policy-controller
// signatureFormat: bundle read bundles (--new-bundle-format), Kyverno
// type: Cosign reads the legacy tags only (--new-bundle-format=false);
// the log is ignored where the policy ignores it (--insecure-ignore-tlog).
// Verified = ok and exit 0; refused = broken and exit non-zero; where
// the engine refuses what cosign verifies (policy-controller's key
// authority with signatureFormat: bundle), broken and exit 0, the case
// citing the engine's source.
func TestVerifyBundle(t *testing.T) {
	ctx := context.Background()
	a, b := newCosign(t), newCosign(t)
	r := startEmpty(t, registry.V3)
	host := r.Host()
	rekor := rekorKey(t)
	kyverno := func(repo, typ, body string, c *cosign.Cosign) string {
		p := strings.Replace(kyvernoBundlePolicy, "BODY", body, 1)
		return strings.NewReplacer("HOST", host, "REPO", repo, "TYPE", typ, "PUB", pubYAML(t, c)).Replace(p)
	}
	attestors := func(rekor string) string { return strings.Replace(kyvernoAttestorsBlock, "REKOR", rekor, 1) }
	// The log and the SCT ignored: Kyverno verifies with the key alone.
	ignore := "                    rekor: {ignoreTlog: true}\n                    ctlog: {ignoreSCT: true}\n"
	ignoreTlogOnly := "                    rekor: {ignoreTlog: true}\n"
	cip := func(repo, format, atts string, c *cosign.Cosign) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "FORMAT", format, "ATTESTATIONS", atts, "PUB", pubYAML(t, c)).Replace(cipBundlePolicy)
	}
	verify := func(f cosign.Format, ignoreTlog bool) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) { return a.VerifyKey(ctx, ref, a.Pub, f, ignoreTlog, rekor) }
	}
	root, err := a.TrustedRoot(ctx, rekor)
	if err != nil {
		t.Fatal(err)
	}
	verifyRoot := func(ref string) (bool, string, error) { return a.VerifyKeyRoot(ctx, ref, a.Pub, root, cosign.Bundle) }
	// Kyverno's rule for a key-signed bundle, the log ignored and the SCT
	// not: an observer timestamp, which only an RFC 3161 timestamp can be;
	// cosign says it with --use-signed-timestamps (sigstore-go
	// WithSignedTimestamps(1)) against the trusted root's authorities.
	stamped := []string{"--key", a.Pub, "--insecure-ignore-tlog=true", "--use-signed-timestamps", "--trusted-root", root}
	verifyStamped := func(ref string) (bool, string, error) { return a.VerifyFormatWith(ctx, ref, cosign.Bundle, stamped...) }
	verifyAttStamped := func(ref string) (bool, string, error) {
		return a.VerifyAttestationWith(ctx, ref, cosign.Bundle, append([]string{"--type", "slsaprovenance"}, stamped...)...)
	}
	verifyAtt := func(f cosign.Format) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) {
			return a.VerifyAttestationKey(ctx, ref, a.Pub, "slsaprovenance", f, true, rekor)
		}
	}
	attest := func(c *cosign.Cosign, repo string, f cosign.Format) admImage {
		ref := host + "/" + repo + ":v1"
		d := pushSingle(t, ref, "attest "+repo)
		if err := c.Attest(ctx, host+"/"+repo+"@"+d, "slsaprovenance", slsaPredicate, f); err != nil {
			t.Fatal(err)
		}
		return admImage{ref: ref, digest: d}
	}
	cases := []bundleCase{
		{name: "good v3 bundle, Kyverno SigstoreBundle ignoreTlog", im: pushAndSignBundle(t, a, host, "bgood"),
			policy: kyverno("bgood", "SigstoreBundle", attestors(ignore), a), cosign: verify(cosign.Bundle, true), want: types.OK, cosignOK: true},
		{name: "good v3 bundle, Kyverno SigstoreBundle ignoreTlog without ignoreSCT: a timestamp required", im: pushAndSignBundle(t, a, host, "bnosct"),
			policy: kyverno("bnosct", "SigstoreBundle", attestors(ignoreTlogOnly), a), cosign: verifyStamped,
			want: types.Broken, code: types.SignatureRefused, says: "ctlog: {ignoreSCT: true}", cosignSays: noStamp},
		{name: "v3 bundle, Kyverno SigstoreBundle log required with ignoreSCT: no verifier", im: pushAndSignBundle(t, a, host, "bsctlog"),
			policy: kyverno("bsctlog", "SigstoreBundle", attestors("                    ctlog: {ignoreSCT: true}\n"), a), cosign: kyvernoUnbuildable,
			want: types.Broken, code: types.SignatureRefused, says: "sigstore-go refuses to build", cosignSays: "you must specify at least one of"},
		// policy-controller refuses a key authority with signatureFormat:
		// bundle before reading anything (sigstore/policy-controller
		// pkg/webhook/validator.go, checkOptsFromAuthority: "when using the
		// new bundle format, the authority must be keyless", wrapped by
		// ValidatePolicySignaturesForAuthority as "constructing checkOpts
		// for <name>: "); the ClusterImagePolicy itself is admitted (its
		// Validate does not look at signatureFormat). cosign verify
		// --new-bundle-format --key has no such rule: it verifies the
		// bundle and exits 0; the engine's source is the truth here.
		{name: "good v3 bundle, policy-controller key authority with signatureFormat bundle: the engine refuses it", im: pushAndSignBundle(t, a, host, "bgoodcip"),
			policy: cip("bgoodcip", "bundle", "", a), cosign: verify(cosign.Bundle, true),
			want: types.Broken, code: types.SignatureRefused, says: "constructing checkOpts for authority-0: when using the new bundle format, the authority must be keyless", cosignOK: true},
		{name: "v3 bundle, the wrong key", im: pushAndSignBundle(t, b, host, "bwrong"),
			policy: kyverno("bwrong", "SigstoreBundle", attestors(ignore), a), cosign: verify(cosign.Bundle, true),
			want: types.Broken, code: types.SignatureRefused, says: "attestors[0].entries[0].keys.publicKeys"},
		{name: "v3 bundle, policy-controller, the wrong key: refused before the key is tried", im: pushAndSignBundle(t, b, host, "bwrongcip"),
			policy: cip("bwrongcip", "bundle", "", a), cosign: verify(cosign.Bundle, true),
			want: types.Broken, code: types.SignatureRefused, says: "the authority must be keyless"},
		// "Bundle" is not "bundle" to policy-controller
		// (checkOptsFromAuthority compares authority.SignatureFormat ==
		// "bundle"; the CRD has no enum): the legacy .sig is read.
		{name: "legacy signature, policy-controller signatureFormat Bundle (not bundle): legacy read", im: pushAndSign(t, a, host, "bcapscip"),
			policy: cip("bcapscip", "Bundle", "", a), cosign: verify(cosign.Legacy, true), want: types.OK, cosignOK: true},
		// The log required: cosign checks a bundle's log proof against a
		// trusted root only (one naming the test's Rekor key).
		{name: "v3 bundle, no log entry under Kyverno's default", im: pushAndSignBundle(t, a, host, "bnotlog"),
			policy: kyverno("bnotlog", "SigstoreBundle", attestors(""), a), cosign: verifyRoot,
			want: types.Broken, code: types.SignatureRefused, says: "no transparency-log entry"},
		{name: "v3 bundle under Kyverno type Cosign: invisible", im: pushAndSignBundle(t, a, host, "binvisible"),
			policy: kyverno("binvisible", "Cosign", attestors(ignore), a), cosign: verify(cosign.Legacy, true),
			want: types.Broken, code: types.SignatureMissing, says: "sigstore bundle"},
		{name: "legacy attestation missing", im: pushAndSign(t, a, host, "amissing"),
			policy: kyverno("amissing", "Cosign", kyvernoAttestationsBlock, a), cosign: verifyAtt(cosign.Legacy),
			want: types.Broken, code: types.SignedAttestationMissing},
		{name: "legacy attestation, good", im: attest(a, "agood", cosign.Legacy),
			policy: kyverno("agood", "Cosign", kyvernoAttestationsBlock, a), cosign: verifyAtt(cosign.Legacy), want: types.OK, cosignOK: true},
		// cosign verifies the signature only: the conditions are the
		// engine's, which regcheck does not evaluate: unknown, not ok.
		{name: "legacy attestation with conditions", im: attest(a, "acond", cosign.Legacy),
			policy: kyverno("acond", "Cosign", kyvernoAttestationsBlock+conditionsBlock, a), cosign: verifyAtt(cosign.Legacy),
			want: types.Unknown, code: types.SignatureUnverifiable, says: "attestations[0].conditions (JMESPath)", cosignOK: true},
		{name: "legacy attestation, the wrong key", im: attest(b, "awrong", cosign.Legacy),
			policy: kyverno("awrong", "Cosign", kyvernoAttestationsBlock, a), cosign: verifyAtt(cosign.Legacy),
			want: types.Broken, code: types.AttestationRefused, says: "attestations[0].attestors[0].entries[0].keys.publicKeys"},
		{name: "legacy attestation, policy-controller, the wrong key", im: attest(b, "awrongcip", cosign.Legacy),
			policy: cip("awrongcip", "legacy", cipAttestations, a), cosign: verifyAtt(cosign.Legacy),
			want: types.Broken, code: types.AttestationRefused, says: "signed-by-key"},
		{name: "bundle attestation missing", im: pushAndSignBundle(t, a, host, "bamissing"),
			policy: kyverno("bamissing", "SigstoreBundle", kyvernoAttestationsBlock, a), cosign: verifyAtt(cosign.Bundle),
			want: types.Broken, code: types.SignedAttestationMissing},
		{name: "bundle attestation, good", im: attest(a, "bagood", cosign.Bundle),
			policy: kyverno("bagood", "SigstoreBundle", kyvernoAttestationsBlock, a), cosign: verifyAtt(cosign.Bundle), want: types.OK, cosignOK: true},
		{name: "bundle attestation, ignoreTlog without ignoreSCT: a timestamp required", im: attest(a, "banosct", cosign.Bundle),
			policy: kyverno("banosct", "SigstoreBundle", kyvernoAttestationsNoSCT, a), cosign: verifyAttStamped,
			want: types.Broken, code: types.AttestationRefused, says: "ctlog: {ignoreSCT: true}", cosignSays: noStamp},
		{name: "bundle attestation, the wrong key", im: attest(b, "bawrong", cosign.Bundle),
			policy: kyverno("bawrong", "SigstoreBundle", kyvernoAttestationsBlock, a), cosign: verifyAtt(cosign.Bundle),
			want: types.Broken, code: types.AttestationRefused, says: "cosign refuses it"},
		// As for the signature: ValidatePolicyAttestationsForAuthority
		// wraps checkOptsFromAuthority's refusal as "creating CheckOpts: ";
		// cosign verify-attestation --new-bundle-format verifies it.
		{name: "bundle attestation by the key, policy-controller key authority with signatureFormat bundle: the engine refuses it", im: attest(a, "bagoodcip", cosign.Bundle),
			policy: cip("bagoodcip", "bundle", cipAttestations, a), cosign: verifyAtt(cosign.Bundle),
			want: types.Broken, code: types.AttestationRefused, says: "creating CheckOpts: when using the new bundle format, the authority must be keyless", cosignOK: true},
		// Only an attestation bundle (a DSSE in-toto statement of the
		// digest), no signature. Kyverno type: SigstoreBundle takes it
		// for the signature (kyverno/kyverno
		// pkg/image/verifiers/cpol/cosign/sigstore.go, fetchBundles: every
		// application/vnd.dev.sigstore.bundle* referrer, filtered by
		// predicate type only for an attestation; verifyBundles with the
		// digest as the artifact, met by the statement's subject), as
		// cosign verify --new-bundle-format does: ok and exit 0.
		{name: "only an attestation bundle, Kyverno SigstoreBundle: a signature", im: attest(a, "baonly", cosign.Bundle),
			policy: kyverno("baonly", "SigstoreBundle", attestors(ignore), a), cosign: verify(cosign.Bundle, true), want: types.OK, cosignOK: true},
		{name: "only an attestation bundle by another key, Kyverno SigstoreBundle", im: attest(b, "baonlywrong", cosign.Bundle),
			policy: kyverno("baonlywrong", "SigstoreBundle", attestors(ignore), a), cosign: verify(cosign.Bundle, true),
			want: types.Broken, code: types.SignatureRefused, says: "attestors[0].entries[0].keys.publicKeys"},
		// Kyverno type: Cosign reads the .sig tag only.
		{name: "only an attestation bundle, Kyverno type Cosign: no signature", im: attest(a, "baonlylegacy", cosign.Bundle),
			policy: kyverno("baonlylegacy", "Cosign", attestors(ignore), a), cosign: verify(cosign.Legacy, true),
			want: types.Broken, code: types.SignatureMissing},
		// policy-controller refuses the key authority before reading
		// (checkOptsFromAuthority); cosign verify --new-bundle-format
		// takes the attestation bundle for a signature and exits 0.
		{name: "only an attestation bundle, policy-controller key authority with signatureFormat bundle: the engine refuses it", im: attest(a, "baonlycip", cosign.Bundle),
			policy: cip("baonlycip", "bundle", "", a), cosign: verify(cosign.Bundle, true),
			want: types.Broken, code: types.SignatureRefused, says: "the authority must be keyless", cosignOK: true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) { checkBundleCase(t, host, tt) })
	}
}

// checkBundleCase scans the case's image under its policy, runs its
// cosign, and holds both to the case.
func checkBundleCase(t *testing.T, host string, tt bundleCase) {
	t.Helper()
	repo := strings.SplitN(strings.TrimPrefix(tt.im.ref, host+"/"), ":", 2)[0]
	got := scanWithPolicy(t, tt.im.ref, tt.policy)
	ok, out, err := tt.cosign(host + "/" + repo + "@" + tt.im.digest)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("regcheck %s %v; cosign passed=%v: %s", got.Verdict, codesOf(got), ok, lastLines(out, 1))
	if ok != tt.cosignOK || !strings.Contains(out, tt.cosignSays) {
		t.Fatalf("cosign passed=%v, want %v saying %q (the fixture is not what the case says):\n%s", ok, tt.cosignOK, tt.cosignSays, lastLines(out, 5))
	}
	if got.Verdict != tt.want || (tt.code != "" && findingOf(got, tt.code) == nil) {
		t.Fatalf("regcheck: verdict %s, want %s with %s; cosign passed=%v:\n%+v\ncosign: %s", got.Verdict, tt.want, tt.code, ok, got.Findings, lastLines(out, 3))
	}
	if tt.code == "" {
		return
	}
	f := findingOf(got, tt.code)
	t.Logf("finding: %s", f.Message)
	if !strings.Contains(f.Message, tt.says) || !strings.Contains(f.Message, "require-signed") && !strings.Contains(f.Message, "signed-by-key") {
		t.Errorf("the finding does not name the policy and %q: %s", tt.says, f.Message)
	}
}

// codesOf lists an image's finding codes.
func codesOf(im *types.Image) []types.Code {
	var out []types.Code
	for _, f := range im.Findings {
		out = append(out, f.Code)
	}
	return out
}

// TestVerifyBundleAudit: v3 bundles under policies that admit what they
// refuse (Kyverno type: SigstoreBundle with failureAction: Audit, an
// ImageValidatingPolicy with validationActions: [Audit], which reads the
// bundles when any are there, policy-controller signatureFormat: bundle in
// mode: warn), the log ignored. Signed with the wrong key: at-risk
// (signature-refused, a warning), and cosign verify --new-bundle-format
// --key exits non-zero on the same fixture; with the right key: no
// finding, cosign exits 0, except under policy-controller, which refuses
// a key authority with bundles whatever the key (at-risk under warn).
func TestVerifyBundleAudit(t *testing.T) {
	ctx := context.Background()
	a, b := newCosign(t), newCosign(t)
	r := startEmpty(t, registry.V3)
	host := r.Host()
	// The log and the SCT ignored: with both, Kyverno's SigstoreBundle
	// path verifies with the key alone (cpol/cosign/sigstore.go,
	// buildVerifyOptions: WithNoObserverTimestamps; getTrustedMaterial:
	// no TUF root).
	ignore := "                    rekor: {ignoreTlog: true}\n                    ctlog: {ignoreSCT: true}\n"
	kyverno := func(repo string) string {
		p := strings.Replace(kyvernoBundlePolicy, "BODY", strings.Replace(kyvernoAttestorsBlock, "REKOR", ignore, 1), 1)
		p = strings.Replace(p, "failureAction: Enforce", "failureAction: Audit", 1)
		return strings.NewReplacer("HOST", host, "REPO", repo, "TYPE", "SigstoreBundle", "PUB", pubYAML(t, a)).Replace(p)
	}
	ivp := func(repo string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "ACTION", "Audit", "ANNOTATIONS", "", "PUB", pubYAML(t, a)).Replace(ivpSignedPolicy)
	}
	cip := func(repo string) string {
		p := strings.Replace(cipBundlePolicy, "spec:\n  images:", "spec:\n  mode: warn\n  images:", 1)
		return strings.NewReplacer("HOST", host, "REPO", repo, "FORMAT", "bundle", "ATTESTATIONS", "", "PUB", pubYAML(t, a)).Replace(p)
	}
	verify := func(ref string) (bool, string, error) { return a.VerifyKey(ctx, ref, a.Pub, cosign.Bundle, true, "") }
	root, err := a.TrustedRoot(ctx, rekorKey(t))
	if err != nil {
		t.Fatal(err)
	}
	verifyStamped := func(ref string) (bool, string, error) {
		return a.VerifyFormatWith(ctx, ref, cosign.Bundle, "--key", a.Pub, "--insecure-ignore-tlog=true", "--use-signed-timestamps", "--trusted-root", root)
	}
	noSCT := strings.Replace(kyverno("audnosct"), "                    ctlog: {ignoreSCT: true}\n", "", 1)
	cases := []bundleCase{{name: "Kyverno SigstoreBundle Audit, the right key, ignoreTlog without ignoreSCT", im: pushAndSignBundle(t, a, host, "audnosct"),
		policy: noSCT, cosign: verifyStamped, want: types.AtRisk, code: types.SignatureRefused, says: "the pod is admitted", cosignSays: noStamp}}
	for _, engine := range []struct {
		name   string
		policy func(repo string) string
		good   types.Verdict // with the right key
	}{{"Kyverno SigstoreBundle Audit", kyverno, types.OK}, {"ImageValidatingPolicy Audit", ivp, types.OK},
		// policy-controller refuses a key authority with
		// signatureFormat: bundle before reading anything
		// (pkg/webhook/validator.go, checkOptsFromAuthority), which
		// mode: warn admits with a warning; cosign verifies the bundle.
		{"policy-controller warn", cip, types.AtRisk}} {
		repo := strings.ToLower(strings.Fields(engine.name)[0])
		good, wrong := "audgood"+repo, "audwrong"+repo
		goodCase := bundleCase{name: engine.name + ", the right key", im: pushAndSignBundle(t, a, host, good), policy: engine.policy(good),
			cosign: verify, want: engine.good, cosignOK: true}
		if engine.good == types.AtRisk {
			goodCase.name += ": refused before reading, admitted with a warning"
			goodCase.code, goodCase.says = types.SignatureRefused, "the authority must be keyless"
		}
		cases = append(cases, goodCase,
			bundleCase{name: engine.name + ", the wrong key", im: pushAndSignBundle(t, b, host, wrong), policy: engine.policy(wrong),
				cosign: verify, want: types.AtRisk, code: types.SignatureRefused, says: "the pod is admitted"})
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) { checkBundleCase(t, host, tt) })
	}
}
