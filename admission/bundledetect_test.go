package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// detectingVerifier is a fullVerifier that also verifies in the layout
// the image has, answering by key, and records each VerifyDetected call
// ("detected" and the predicate type, "" for the signature).
type detectingVerifier struct {
	fullVerifier
}

func (d *detectingVerifier) VerifyDetected(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, pt string) Verdict {
	d.checked = append(d.checked, strings.TrimSpace("detected "+pt))
	return d.VerifyLegacy(ctx, ref, sigs, e)
}

// sigstoreBundle is the artifact type cosign v3 gives its bundles.
const sigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"

// TestIVPVerifyDetected: an ImageValidatingPolicy's signature and its
// verifyAttestationSignatures attestations are verified in the layout the
// image has (DetectingVerifier), against the attestors the call lists: a
// refused attestation is attestation-refused (broken under Deny, at-risk
// under Audit), a missing one signed-attestation-missing; a whole
// attestation bundle stands for the signature, as Kyverno takes any
// bundle that verifies with the key for one.
func TestIVPVerifyDetected(t *testing.T) {
	a := keyAttestor("a", ivpKeyA, true)
	b := keyAttestor("b", ivpKeyB, true)
	attCall := "images.containers.map(image, verifyAttestationSignatures(image, attestations.slsa, [attestors.a])).all(e, e > 0)"
	attestations := "  attestations:\n    - name: slsa\n      intoto:\n        type: " + slsa + "\n"
	bundleAtt := attIn(artifacts.ReferrersTag, slsa)
	bundleAtt.ArtifactType = sigstoreBundle
	inToto := attIn(artifacts.ReferrersAPI, slsa)
	inToto.ArtifactType = "application/vnd.in-toto+json"
	for _, c := range []struct {
		name          string
		actions, atts string // validationActions, the attestors
		call          string
		set           []artifacts.Artifact
		want          types.Verdict
		codes         string
		mentions      string
		checked       string
	}{
		{"attestation signed by the attestor", "Deny", a, attCall, []artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, types.OK, "", "", "detected " + slsa},
		{"attestation signed by another key", "Deny", strings.Replace(a, indent(ivpKeyA, 12), indent(ivpKeyB, 12), 1), attCall,
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, types.Broken, "attestation-refused/critical",
			"requires an attestation of predicate type " + slsa + " of sha256:111111111111 by spec.attestors[0] (a).cosign.key.data", "detected " + slsa},
		{"attestation signed by another key, Audit", "Audit", strings.Replace(a, indent(ivpKeyA, 12), indent(ivpKeyB, 12), 1), attCall,
			[]artifacts.Artifact{bundleAtt}, types.AtRisk, "attestation-refused/warning", "the pod is admitted", "detected " + slsa},
		{"attestation missing", "Deny", a, attCall, []artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.Broken, "signed-attestation-missing/critical", "", ""},
		{"one of two attestors, > 0", "Deny", b + a, "images.containers.map(image, verifyAttestationSignatures(image, attestations.slsa, [attestors.b, attestors.a])).all(e, e > 0)",
			[]artifacts.Artifact{attIn(artifacts.CosignTag, slsa)}, types.OK, "", "", "detected " + slsa + ", detected " + slsa},
		{"bundle-only signature", "Deny", a, sigAny, []artifacts.Artifact{sig(artifacts.ReferrersTag, true)}, types.OK, "", "", "detected"},
		{"bundle-only signature, another key", "Deny", b, strings.Replace(sigAny, "attestors.a", "attestors.b", 1), []artifacts.Artifact{sig(artifacts.ReferrersTag, true)},
			types.Broken, "signature-refused/critical", "the signature is there, and cosign refuses it", "detected"},
		{"an attestation bundle stands for the signature", "Deny", a, sigAny, []artifacts.Artifact{bundleAtt}, types.OK, "", "", "detected"},
		{"an in-toto referrer that is no sigstore bundle does not", "Deny", a, sigAny, []artifacts.Artifact{inToto}, types.Broken, "signature-missing/critical", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := ivpDoc(ivpBody(c.actions, c.atts, c.call) + attestations)
			ps := readIVP(t, doc)
			ps.LabelsKnown = true
			dv := &detectingVerifier{fullVerifier{fakeVerifier: fakeVerifier{outcomes: map[string]Outcome{ivpKeyA: Verified}}}}
			chk := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Image: imgDigest, Artifacts: c.set}}, Parse: scan.ParseReference, Verifier: dv}
			im := &types.Image{Reference: "registry.example.com/team/web:v1", Digest: imgDigest, Verdict: types.OK,
				Uses: []types.Use{{Source: "cluster", Kind: "Pod", Namespace: "dev", Name: "web"}}}
			if err := chk.Apply(context.Background(), &types.Result{Images: []*types.Image{im}}); err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, fd := range im.Findings {
				codes = append(codes, fmt.Sprintf("%s/%s", fd.Code, fd.Severity))
			}
			if got := strings.Join(codes, " "); got != c.codes || im.Verdict != c.want {
				t.Errorf("verdict %s, findings %q; want %s, %q: %+v", im.Verdict, got, c.want, c.codes, im.Findings)
			}
			if c.mentions != "" && !strings.Contains(fmt.Sprint(im.Findings), c.mentions) {
				t.Errorf("no finding says %q: %+v", c.mentions, im.Findings)
			}
			if got := strings.Join(dv.checked, ", "); got != c.checked {
				t.Errorf("checked %q, want %q", got, c.checked)
			}
		})
	}
}
