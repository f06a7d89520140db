package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// fullVerifier is a fakeVerifier that also verifies bundles and
// attestations, answering by key, and records what each call checked
// (format, and predicate type for an attestation).
type fullVerifier struct {
	fakeVerifier
	checked []string
}

func (f *fullVerifier) VerifyBundle(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) Verdict {
	f.checked = append(f.checked, "bundle")
	return f.VerifyLegacy(ctx, ref, sigs, e)
}

func (f *fullVerifier) VerifyAttestation(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, fm Format, pt string) Verdict {
	f.checked = append(f.checked, string(fm)+" "+pt)
	return f.VerifyLegacy(ctx, ref, sigs, e)
}

// attIn is an attestation of pred in layout l.
func attIn(l artifacts.Layout, pred string) artifacts.Artifact {
	a := att(pred, true)
	a.Layout = l
	return a
}

// kyvernoRulePolicy is an Enforce (or Audit) ClusterPolicy on team
// images of type typ with the given verifyImages body.
func kyvernoRulePolicy(action, typ, body string) string {
	return fmt.Sprintf(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed
spec:
  validationFailureAction: %s
  rules:
    - name: verify
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["registry.example.com/team/*"]
          type: %s
%s`, action, typ, body)
}

// attestationsBody requires a provenance attestation signed by p, with
// extra lines (conditions) after its attestors.
func attestationsBody(p, extra string) string {
	return `          attestations:
            - type: ` + slsa + `
              attestors:
                - entries:
                    - keys:
                        publicKeys: |-
` + indent(p, 26) + "\n" + extra
}

// cipAttestationPolicy is a ClusterImagePolicy whose key authority
// requires a provenance attestation, with its policy block (or none).
func cipAttestationPolicy(p, format, policy string) string {
	return cipPolicy(keyAuthority(p, false) + "      signatureFormat: " + format + "\n      attestations:\n        - name: prov\n          predicateType: " + slsa + "\n" + policy)
}

// TestVerifyBundleAndAttestations: bundle signatures and attestations
// (legacy and bundle) are verified against their attestors with the
// engines' rules; a refused attestation is attestation-refused, broken
// under Enforce and at-risk under Audit; one whose conditions or policy
// regcheck does not evaluate is unknown, never ok; a Verifier that
// cannot verify bundles or attestations leaves them to presence. Under
// Kyverno type: SigstoreBundle a sigstore attestation bundle stands for
// the signature (fetchBundles asks no predicate type for one).
func TestVerifyBundleAndAttestations(t *testing.T) {
	a, b := testPEM("key A"), testPEM("key B")
	sigBundle := sig(artifacts.ReferrersAPI, true)
	bundleAtt := attIn(artifacts.ReferrersAPI, slsa)
	bundleAtt.ArtifactType = sigstoreBundle
	inToto := attIn(artifacts.ReferrersAPI, slsa)
	inToto.ArtifactType = "application/vnd.in-toto+json"
	for _, c := range []struct {
		name     string
		policy   string
		set      []artifacts.Artifact
		legacy   bool // the Verifier verifies legacy signatures only
		want     types.Verdict
		codes    string
		mentions string
		checked  string
	}{
		{"legacy signature: VerifyLegacy as before", kyvernoPolicy("Enforce", 0, keyEntry(a, ignoreTlog)), []artifacts.Artifact{sig(artifacts.CosignTag, true)}, false, types.OK, "", "", ""},
		{"bundle signature, the key verifies", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(a, ignoreTlog)),
			[]artifacts.Artifact{sigBundle}, false, types.OK, "", "", "bundle"},
		{"bundle signature, another key", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(b, ignoreTlog)),
			[]artifacts.Artifact{sigBundle}, false, types.Broken, "signature-refused/critical", "the signature is there, and cosign refuses it", "bundle"},
		{"bundle signature, a Verifier of legacy signatures only: presence", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(b, ignoreTlog)),
			[]artifacts.Artifact{sigBundle}, true, types.OK, "", "", ""},
		{"policy-controller, a refused legacy authority and a key authority with signatureFormat bundle: broken, each one's refusal", cipPolicy(keyAuthority(b, false), keyAuthority(a, false)+"      signatureFormat: bundle\n"),
			[]artifacts.Artifact{sig(artifacts.CosignTag, true)}, false, types.Broken, "signature-refused/critical",
			"authorities[1] (authority-1).signatureFormat: the engine refuses the authority before reading anything: \"constructing checkOpts for authority-1: when using the new bundle format, the authority must be keyless\"", ""},
		{"Kyverno SigstoreBundle, only an attestation bundle: it stands for the signature", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(a, ignoreTlog)),
			[]artifacts.Artifact{bundleAtt}, false, types.OK, "", "", "bundle"},
		{"Kyverno SigstoreBundle, only an attestation bundle, another key", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(b, ignoreTlog)),
			[]artifacts.Artifact{bundleAtt}, false, types.Broken, "signature-refused/critical", "the signature is there, and cosign refuses it", "bundle"},
		{"Kyverno SigstoreBundle, an in-toto referrer that is no sigstore bundle is no signature", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(a, ignoreTlog)),
			[]artifacts.Artifact{inToto}, false, types.Broken, "signature-missing/critical", "", ""},
		{"Kyverno type Cosign, only an attestation bundle: no signature", kyvernoRulePolicy("Enforce", "Cosign", "          attestors:\n            - entries:\n"+keyEntry(a, ignoreTlog)),
			[]artifacts.Artifact{bundleAtt}, false, types.Broken, "signature-missing/critical", "", ""},
		{"legacy attestation, the key verifies", kyvernoRulePolicy("Enforce", "Cosign", attestationsBody(a, "")),
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, false, types.OK, "", "", "legacy " + slsa},
		{"legacy attestation, another key", kyvernoRulePolicy("Enforce", "Cosign", attestationsBody(b, "")),
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, false, types.Broken, "attestation-refused/critical",
			"requires an attestation of predicate type " + slsa + " of sha256:111111111111 by attestations[0].attestors[0].entries[0].keys.publicKeys", "legacy " + slsa},
		{"legacy attestation, publicKeys holds A then B: Kyverno verifies with the first key alone", kyvernoRulePolicy("Enforce", "Cosign", attestationsBody(a+"\n"+b, "")),
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, false, types.OK, "", "", "legacy " + slsa},
		{"legacy attestation, publicKeys holds B then A: the first key refuses", kyvernoRulePolicy("Enforce", "Cosign", attestationsBody(b+"\n"+a, "")),
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, false, types.Broken, "attestation-refused/critical", "attestations[0].attestors[0].entries[0].keys.publicKeys", "legacy " + slsa},
		{"bundle attestation, another key, Audit", kyvernoRulePolicy("Audit", "SigstoreBundle", attestationsBody(b, "")),
			[]artifacts.Artifact{attIn(artifacts.ReferrersAPI, slsa)}, false, types.AtRisk, "attestation-refused/warning", "the pod is admitted", "bundle " + slsa},
		{"conditions are not evaluated: unknown", kyvernoRulePolicy("Enforce", "Cosign", attestationsBody(a, "              conditions:\n                - all:\n                    - key: \"{{ builder.id }}\"\n                      operator: Equals\n                      value: x\n")),
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, false, types.Unknown, "signature-unverifiable/warning", "its conditions (attestations[0].conditions (JMESPath)) are not evaluated", "legacy " + slsa},
		// Kyverno 1.19 verifies an attestation naming no attestors with one
		// empty (keyless, public-good) attestor, not the rule's keys.
		{"an attestation naming no attestors: Kyverno's empty keyless attestor", kyvernoRulePolicy("Enforce", "Cosign", "          attestors:\n            - entries:\n"+keyEntry(a, ignoreTlog)+"          attestations:\n            - type: "+slsa+"\n"),
			[]artifacts.Artifact{sig(artifacts.CosignTag, true), attIn(artifacts.CosignTag, slsa)}, false, types.Unknown, "signature-unverifiable/warning",
			"by attestations[0] (no attestors: Kyverno's empty keyless attestor)", "legacy " + slsa},
		{"policy-controller bundle attestation, a key authority: refused before reading, in the engine's words", cipAttestationPolicy(a, "bundle", ""),
			[]artifacts.Artifact{attIn(artifacts.ReferrersAPI, slsa)}, false, types.Broken, "attestation-refused/critical",
			"policy-controller refuses that authority before reading any signature or attestation of the image, signed or not: creating CheckOpts: when using the new bundle format, the authority must be keyless", ""},
		{"policy-controller attestation, another key", cipAttestationPolicy(b, "legacy", ""),
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, false, types.Broken, "attestation-refused/critical", "by authorities[0] (authority-0).key.data", "legacy " + slsa},
		{"policy-controller attestation policy not evaluated: unknown", cipAttestationPolicy(a, "legacy", "          policy:\n            type: cue\n            data: 'predicateType: \""+slsa+"\"'\n"),
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, false, types.Unknown, "signature-unverifiable/warning", "attestations[0].policy (cue)", "legacy " + slsa},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readPolicy(t, c.policy)
			fv := &fullVerifier{fakeVerifier: fakeVerifier{outcomes: map[string]Outcome{a: Verified}}}
			var v Verifier = fv
			if c.legacy {
				v = &fv.fakeVerifier
			}
			chk := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Image: imgDigest, Artifacts: c.set}}, Parse: scan.ParseReference, Verifier: v}
			im := applyDev(t, chk)
			wantFindings(t, im, c.want, c.codes, c.mentions)
			if got := strings.Join(fv.checked, ", "); got != c.checked {
				t.Errorf("checked %q, want %q", got, c.checked)
			}
		})
	}
}

// TestInvisibleFormat: a whole signature in the layout the rule does not
// read is missing for the rule, and the finding says it is there and
// what to do.
func TestInvisibleFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(kyvernoPolicy("Enforce", 0, keyEntry(testPEM("key A"), ignoreTlog))), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, _ := ReadFiles([]string{p})
	chk := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Image: imgDigest, Artifacts: []artifacts.Artifact{sig(artifacts.ReferrersAPI, true)}}},
		Parse: scan.ParseReference, Verifier: &fullVerifier{}}
	im := applyDev(t, chk)
	if im.Verdict != types.Broken || len(im.Findings) != 1 || im.Findings[0].Code != types.SignatureMissing ||
		!strings.Contains(im.Findings[0].Message, "a sigstore bundle") || !strings.Contains(im.Findings[0].Message, "type: SigstoreBundle") {
		t.Errorf("verdict %s: %+v", im.Verdict, im.Findings)
	}
}

// TestCosignVerifierGone: a registry that cannot be asked leaves bundles
// and attestations unverifiable, a fault, never refused; an entry that
// cannot be checked offline says why without asking.
func TestCosignVerifierGone(t *testing.T) {
	gone, _ := name.NewRepository("127.0.0.1:1/team/web", name.Insecure)
	ref := gone.Digest(imgDigest)
	e := KeyEntry{PEM: testPEMKey(t)}
	for _, c := range []struct {
		name  string
		run   func() Verdict
		fault bool
	}{
		{"bundle signature", func() Verdict { return CosignVerifier{}.VerifyBundle(context.Background(), ref, gone, e) }, true},
		{"legacy attestation", func() Verdict {
			return CosignVerifier{}.VerifyAttestation(context.Background(), ref, gone, e, Legacy, slsa)
		}, true},
		{"bundle attestation", func() Verdict {
			return CosignVerifier{}.VerifyAttestation(context.Background(), ref, gone, e, Bundle, slsa)
		}, true},
		{"the layout the image has (ImageValidatingPolicy), signature", func() Verdict {
			return CosignVerifier{}.VerifyDetected(context.Background(), ref, gone, e, "")
		}, true},
		{"the layout the image has, attestation", func() Verdict {
			return CosignVerifier{}.VerifyDetected(context.Background(), ref, gone, e, slsa)
		}, true},
		{"a keyless bundle", func() Verdict {
			return CosignVerifier{}.VerifyBundle(context.Background(), ref, gone, KeyEntry{Keyless: &Keyless{}, Path: "keyless"})
		}, false},
		{"a keyless .att, no trust material", func() Verdict {
			return CosignVerifier{}.VerifyAttestation(context.Background(), ref, gone, KeyEntry{Keyless: &Keyless{}, Path: "keyless"}, Legacy, slsa)
		}, false},
		{"a KMS key", func() Verdict {
			return CosignVerifier{}.VerifyAttestation(context.Background(), ref, gone, KeyEntry{Unverifiable: "a KMS key"}, Bundle, slsa)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := c.run()
			if v.Outcome != Unverifiable || v.Fault != c.fault {
				t.Errorf("got %+v; want unverifiable, fault %v", v, c.fault)
			}
		})
	}
}

// testPEMKey is a fresh P-256 public key as PEM.
func testPEMKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(t, k)
}
