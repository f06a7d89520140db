package admission

import (
	"strings"
	"testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// keylessAuthority is a keyless authority with one identity.
const keylessAuthority = "    - keyless:\n        identities:\n          - issuer: https://issuer.example.com\n            subject: ci@example.com\n"

// staticFail is a static authority that fails.
const staticFail = "    - static:\n        action: fail\n        message: no images from here\n"

// TestPolicyControllerBundleRefusal: policy-controller refuses a key
// authority with signatureFormat: bundle before reading anything
// (pkg/webhook/validator.go, checkOptsFromAuthority: "when using the new
// bundle format, the authority must be keyless"), and a keyless
// authority's bundle signature in cosign's VerifyImageSignatures ("bundle
// support for image signatures is not yet implemented"): whatever the
// image has, the authority admits nothing; broken under enforce, at-risk
// under warn, with the engine's text and what to do, and nothing is
// verified; unknown where a signature of cosign's experimental OCI 1.1
// layout is there, which the keyless path reads under enable-oci11.
// Another authority that verifies admits. signatureFormat is compared
// exactly: "Bundle" reads the legacy layout. A static authority whose
// action is fail is refused the same way.
func TestPolicyControllerBundleRefusal(t *testing.T) {
	a, b := testPEM("key A"), testPEM("key B")
	bundleFormat := "      signatureFormat: bundle\n"
	oci11Sig := sig(artifacts.ReferrersAPI, true)
	oci11Sig.ArtifactType = cosignOCI11Signature
	keyText := "constructing checkOpts for authority-0: when using the new bundle format, the authority must be keyless"
	for _, c := range []struct {
		name     string
		policy   string
		set      []artifacts.Artifact
		want     types.Verdict
		codes    string
		mentions []string
		checked  string
	}{
		{"key, bundle, a bundle by the key", cipPolicy(keyAuthority(a, false) + bundleFormat), []artifacts.Artifact{sig(artifacts.ReferrersAPI, true)},
			types.Broken, "signature-refused/critical", []string{"by authorities[0] (authority-0).signatureFormat", keyText, "the pod will be refused", "signatureFormat: legacy"}, ""},
		{"key, bundle, nothing there: refused, not missing", cipPolicy(keyAuthority(a, false) + bundleFormat), nil,
			types.Broken, "signature-refused/critical", []string{keyText}, ""},
		{"key, bundle, warn", strings.Replace(cipPolicy(keyAuthority(a, false)+bundleFormat), "spec:\n", "spec:\n  mode: warn\n", 1), []artifacts.Artifact{sig(artifacts.ReferrersAPI, true)},
			types.AtRisk, "signature-refused/warning", []string{keyText, "the pod is admitted"}, ""},
		{"key, bundle, named", cipPolicy("    - name: release\n" + strings.Replace(keyAuthority(a, false), "    - key", "      key", 1) + bundleFormat), nil,
			types.Broken, "signature-refused/critical", []string{"authorities[0] (release).signatureFormat", "constructing checkOpts for release: when using"}, ""},
		{"key, bundle, beside a legacy authority that verifies", cipPolicy(keyAuthority(b, false)+bundleFormat, keyAuthority(a, false)),
			[]artifacts.Artifact{sig(artifacts.CosignTag, true), sig(artifacts.ReferrersAPI, true)}, types.OK, "", nil, ""},
		{"two key authorities with bundle: both refusals in the engine's words", cipPolicy(keyAuthority(a, false)+bundleFormat, keyAuthority(b, false)+bundleFormat), nil,
			types.Broken, "signature-refused/critical", []string{"any of authorities[0] (authority-0).signatureFormat, authorities[1] (authority-1).signatureFormat", keyText,
				"constructing checkOpts for authority-1", "refuses that authority before reading"}, ""},
		{"signatureFormat Bundle is not bundle: the legacy .sig verifies", cipPolicy(keyAuthority(a, false) + "      signatureFormat: Bundle\n"),
			[]artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.OK, "", nil, ""},
		{"keyless, bundle signature", cipPolicy(keylessAuthority + bundleFormat), []artifacts.Artifact{sig(artifacts.ReferrersAPI, true)},
			types.Broken, "signature-refused/critical", []string{"signature keyless validation failed for authority authority-0 for the image: bundle support for image signatures is not yet implemented"}, ""},
		{"keyless, bundle signature, a signature of cosign's experimental OCI 1.1 layout there: read under enable-oci11, unknown", cipPolicy(keylessAuthority + bundleFormat), []artifacts.Artifact{oci11Sig},
			types.Unknown, "signature-unverifiable/warning", []string{"unless enable-oci11 is set in config-policy-controller"}, ""},
		// static.action fail admits nothing (ValidatePolicy: "disallowed by
		// static policy: MESSAGE"); any other action passes the policy.
		{"static fail, signed", cipPolicy(staticFail), []artifacts.Artifact{sig(artifacts.CosignTag, true)},
			types.Broken, "signature-refused/critical", []string{"authorities[0] (authority-0).static.action", "disallowed by static policy: no images from here", "the pod will be refused", "leave the image out of its spec.images"}, ""},
		{"static fail, warn", strings.Replace(cipPolicy(staticFail), "spec:\n", "spec:\n  mode: warn\n", 1), nil,
			types.AtRisk, "signature-refused/warning", []string{"disallowed by static policy", "the pod is admitted"}, ""},
		{"static fail beside a key authority that verifies", cipPolicy(staticFail, keyAuthority(a, false)), []artifacts.Artifact{sig(artifacts.CosignTag, true)},
			types.OK, "", nil, ""},
		{"keyless, bundle attestation: read, not refused up front", cipPolicy(keylessAuthority + bundleFormat + "      attestations:\n        - name: prov\n          predicateType: " + slsa + "\n"),
			[]artifacts.Artifact{attIn(artifacts.ReferrersAPI, slsa)}, types.Unknown, "signature-unverifiable/warning", nil, "bundle " + slsa},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readPolicy(t, c.policy)
			fv := &fullVerifier{fakeVerifier: fakeVerifier{outcomes: map[string]Outcome{a: Verified}}}
			chk := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Image: imgDigest, Artifacts: c.set}}, Parse: scan.ParseReference, Verifier: fv}
			im := applyDev(t, chk)
			wantFindings(t, im, c.want, c.codes, c.mentions...)
			if got := strings.Join(fv.checked, ", "); got != c.checked {
				t.Errorf("checked %q, want %q", got, c.checked)
			}
		})
	}
}
