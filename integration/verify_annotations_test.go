//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// kyvernoAnnotatedAttestors is a rule's attestors: one entry, the key
// PUB, the log and SCT ignored (with both ignored, Kyverno's SigstoreBundle
// path verifies with the key alone: cpol/cosign/sigstore.go,
// buildVerifyOptions, getTrustedMaterial), requiring the annotation
// env=ENV.
const kyvernoAnnotatedAttestors = `          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true}
                    ctlog: {ignoreSCT: true}
                  annotations:
                    env: ENV
`

// ivpSignedPolicy is a Kyverno ImageValidatingPolicy on HOST/REPO* in
// ACTION (Deny, Audit) with one key attestor, the key PUB, the log
// ignored; ANNOTATIONS is its cosign.annotations block or "".
const ivpSignedPolicy = `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: require-signed
spec:
  validationActions: [ACTION]
  matchImageReferences:
    - glob: "HOST/REPO*"
  attestors:
    - name: cosign
      cosign:
        key:
          data: "PUB"
        ctlog:
          insecureIgnoreTlog: true
ANNOTATIONS  validations:
    - expression: >-
        images.containers.map(image, verifyImageSignatures(image, [attestors.cosign])).all(e, e > 0)
      message: failed image signature verification
`

// TestVerifyAnnotations holds regcheck's verdict on an attestor's
// annotations to cosign verify v3.1.3 on images signed by the real
// cosign sign -a env=prod, legacy and bundle. Kyverno's ClusterPolicy
// (type Cosign) checks them in the payload as cosign verify -a does
// (env=prod: ok, exit 0; env=dev: broken, exit non-zero). Kyverno's
// SigstoreBundle path does not check them (cpol/cosign/sigstore.go): the
// ground truth is cosign verify --new-bundle-format without -a (exit 0),
// and cosign -a env=dev is run too, to show the fixture does not hold
// env=dev. An ImageValidatingPolicy compares them with the signature's
// OCI layer annotations (ivpol/cosign/certs.go,
// checkSignatureAnnotations), which cosign sign -a does not write: broken
// where cosign verify -a env=prod exits 0 (the engine and cosign differ;
// regcheck says what the engine does).
func TestVerifyAnnotations(t *testing.T) {
	ctx := context.Background()
	a := newCosign(t)
	r := startEmpty(t, registry.V3)
	host := r.Host()
	signed := func(repo string, f cosign.Format) admImage {
		ref := host + "/" + repo + ":v1"
		d := pushSingle(t, ref, "annotated "+repo)
		if err := a.SignAnnotated(ctx, host+"/"+repo+"@"+d, f, "env=prod"); err != nil {
			t.Fatal(err)
		}
		return admImage{ref: ref, digest: d}
	}
	kyverno := func(repo, typ, env string) string {
		p := strings.Replace(kyvernoBundlePolicy, "BODY", strings.Replace(kyvernoAnnotatedAttestors, "ENV", env, 1), 1)
		return strings.NewReplacer("HOST", host, "REPO", repo, "TYPE", typ, "PUB", pubYAML(t, a)).Replace(p)
	}
	ivp := func(repo, env string) string {
		ann := "        annotations:\n          env: " + env + "\n"
		return strings.NewReplacer("HOST", host, "REPO", repo, "ACTION", "Deny", "ANNOTATIONS", ann, "PUB", pubYAML(t, a)).Replace(ivpSignedPolicy)
	}
	withA := func(f cosign.Format, ann ...string) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) { return a.VerifyKeyAnnotated(ctx, ref, a.Pub, f, ann...) }
	}
	// The engine's own flags (no -a: Kyverno's SigstoreBundle path does
	// not check annotations), after showing that cosign -a env=dev
	// refuses the fixture.
	bundleUnchecked := func(ref string) (bool, string, error) {
		if ok, out, err := a.VerifyKeyAnnotated(ctx, ref, a.Pub, cosign.Bundle, "env=dev"); err != nil || ok {
			t.Errorf("cosign verify -a env=dev on a bundle signed env=prod: passed=%v err=%v\n%s", ok, err, lastLines(out, 3))
		}
		return a.VerifyKeyAnnotated(ctx, ref, a.Pub, cosign.Bundle)
	}
	legacy, bundle := signed("annlegacy", cosign.Legacy), signed("annbundle", cosign.Bundle)
	cases := []bundleCase{
		{name: "legacy, Kyverno Cosign asks env=prod", im: legacy, policy: kyverno("annlegacy", "Cosign", "prod"),
			cosign: withA(cosign.Legacy, "env=prod"), want: types.OK, cosignOK: true},
		{name: "legacy, Kyverno Cosign asks env=dev", im: legacy, policy: kyverno("annlegacy", "Cosign", "dev"),
			cosign: withA(cosign.Legacy, "env=dev"), want: types.Broken, code: types.SignatureRefused, says: "annotations env=dev"},
		{name: "bundle, Kyverno SigstoreBundle asks env=prod", im: bundle, policy: kyverno("annbundle", "SigstoreBundle", "prod"),
			cosign: withA(cosign.Bundle, "env=prod"), want: types.OK, cosignOK: true},
		{name: "bundle, Kyverno SigstoreBundle asks env=dev: not checked by Kyverno", im: bundle, policy: kyverno("annbundle", "SigstoreBundle", "dev"),
			cosign: bundleUnchecked, want: types.OK, cosignOK: true},
		{name: "legacy, ImageValidatingPolicy asks env=prod: the layer annotations do not hold it", im: legacy, policy: ivp("annlegacy", "prod"),
			cosign: withA(cosign.Legacy, "env=prod"), want: types.Broken, code: types.SignatureRefused, says: "OCI layer annotations", cosignOK: true},
		{name: "bundle, ImageValidatingPolicy asks env=prod: the layer annotations do not hold it", im: bundle, policy: ivp("annbundle", "prod"),
			cosign: withA(cosign.Bundle, "env=prod"), want: types.Broken, code: types.SignatureRefused, says: "OCI layer annotations", cosignOK: true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) { checkBundleCase(t, host, tt) })
	}
}
