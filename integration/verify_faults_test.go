//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// bundlePolicy is a Kyverno ClusterPolicy that enforces a sigstore
// bundle signature, by key, on HOST/REPO.
const bundlePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-bundle
spec:
  rules:
    - name: verify-bundle
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/REPO*"]
          type: SigstoreBundle
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    publicKeys: |-
PEM
`

// indentPEM indents a PEM file's lines for a YAML block scalar.
func indentPEM(t *testing.T, path string, indent int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat(" ", indent)
	return pad + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n"+pad)
}

// scanWithPolicy writes a Deployment running ref and the policy into a
// folder and scans it with -f: the image's result.
func scanWithPolicy(t *testing.T, ref, policy string) *types.Image {
	t.Helper()
	dir := t.TempDir()
	body := deployment("web", ref, "") + "---\n" + policy
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	doc, code, _ := scanCLI(t, "--no-cache", "--timeout", "20s", "-f", dir)
	im := byReference(doc)[ref]
	if im == nil {
		t.Fatalf("scan -f: exit %d, no result for %s: %+v", code, ref, doc.Images)
	}
	return im
}

// TestArtifactsAdmissionFaults: a bundle-signed image on a registry
// without the referrers API (distribution 2.8, the referrers tag schema),
// under a Kyverno Enforce rule, read through the fault proxy. A fault on
// the referrer's manifest, a 503 on the referrers tag's index, a
// referrers tag pointing at a plain manifest: each is unknown with its
// cause, never broken.
func TestArtifactsAdmissionFaults(t *testing.T) {
	c := newCosign(t)
	r := startEmpty(t, registry.V2)
	repo := "bundlefault"
	im := pushAndSignBundle(t, c, r.Host(), repo)
	hex := strings.TrimPrefix(im.digest, "sha256:")
	rp, err := name.NewRepository(r.Host()+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	index := stripReferrersIndex(t, rp.Tag("sha256-"+hex))
	idx, err := remote.Index(rp.Digest(index))
	if err != nil {
		t.Fatal(err)
	}
	im2, _ := idx.IndexManifest()
	if len(im2.Manifests) != 1 {
		t.Fatalf("the referrers index lists %d referrers, want 1", len(im2.Manifests))
	}
	referrer := im2.Manifests[0].Digest.String()
	pem := indentPEM(t, c.Pub, 22)
	for _, tt := range []struct {
		name  string
		rules []faultproxy.Rule
		cause string // in the finding's message
	}{
		{"5xx on the referrer's manifest", []faultproxy.Rule{{Fault: faultproxy.ServerError, Kinds: []faultproxy.Kind{faultproxy.ManifestByDigest}, Path: referrer}}, referrer},
		{"503 on the referrers tag's index", []faultproxy.Rule{{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.ManifestByDigest}, Path: index}}, "503"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := faultproxy.Start(faultproxy.Config{Upstream: r.Host(), Rules: tt.rules})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			policy := strings.NewReplacer("HOST", p.Host(), "REPO", repo, "PEM", pem).Replace(bundlePolicy)
			got := scanWithPolicy(t, p.Host()+"/"+repo+":v1", policy)
			if got.Verdict != types.Unknown || findingOf(got, types.SignatureMissing) != nil {
				t.Fatalf("verdict %s, want unknown and no signature-missing: %+v", got.Verdict, got.Findings)
			}
			if p.Total() == 0 {
				t.Fatal("the fault proxy injected nothing: the case tested nothing")
			}
			if !hasFinding(got, func(f types.Finding) bool {
				return f.Code.Fault() && strings.Contains(f.Message, "require-bundle") && strings.Contains(f.Message, tt.cause)
			}) {
				t.Errorf("no fault finding naming the policy and %q: %+v", tt.cause, got.Findings)
			}
		})
	}
	t.Run("referrers tag at a plain manifest", func(t *testing.T) {
		plain, err := remote.Get(rp.Tag("v1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Put(rp.Tag("sha256-"+hex), plain); err != nil {
			t.Fatal(err)
		}
		policy := strings.NewReplacer("HOST", r.Host(), "REPO", repo, "PEM", pem).Replace(bundlePolicy)
		got := scanWithPolicy(t, im.ref, policy)
		if got.Verdict != types.Unknown || findingOf(got, types.SignatureMissing) != nil {
			t.Errorf("verdict %s, want unknown and no signature-missing: %+v", got.Verdict, got.Findings)
		}
	})
}

// hasFinding reports whether one of im's findings satisfies ok.
func hasFinding(im *types.Image, ok func(types.Finding) bool) bool {
	for _, f := range im.Findings {
		if ok(f) {
			return true
		}
	}
	return false
}

// stripReferrersIndex rewrites the referrers tag's index without the
// artifact types and annotations of its entries (as a referrers index
// written by an older client carries none): regcheck must then read each
// referrer's manifest to tell what it is. It returns the new index's
// digest.
func stripReferrersIndex(t *testing.T, tag name.Tag) string {
	t.Helper()
	desc, err := remote.Get(tag)
	if err != nil {
		t.Fatalf("no referrers tag after cosign sign: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	for _, raw := range m["manifests"].([]any) {
		d := raw.(map[string]any)
		delete(d, "artifactType")
		delete(d, "annotations")
	}
	body, _ := json.Marshal(m)
	if err := remote.Put(tag, rawManifest{body, desc.MediaType}); err != nil {
		t.Fatal(err)
	}
	h, _, _ := v1.SHA256(bytes.NewReader(body))
	return h.String()
}

// signatureBundleLayer is the layer digest of the signature bundle among
// the referrers of digest in rp (the one whose predicate type is
// cosign's sign predicate), read through the referrers tag.
func signatureBundleLayer(t *testing.T, rp name.Repository, digest string) string {
	t.Helper()
	idx, err := remote.Referrers(rp.Digest(digest))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	for _, d := range im.Manifests {
		img, err := remote.Image(rp.Digest(d.Digest.String()))
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest() // the referrers tag's index copies no annotations
		if err != nil {
			t.Fatal(err)
		}
		if m.Annotations["dev.sigstore.bundle.predicateType"] == "https://sigstore.dev/cosign/sign/v1" {
			return layerOf(t, rp.Digest(d.Digest.String()).String())
		}
	}
	t.Fatalf("no signature bundle among the referrers of %s: %+v", digest, im.Manifests)
	return ""
}

// TestVerifyRegistryFaultsMatchCosign: real cosign-signed images on
// distribution 3.1.2, read through the fault proxy, which fails the GET
// of one signature's or attestation's layer (the artifacts finder's
// HEAD of it passes, so the verifier is what meets the fault). regcheck
// must say unknown with the cause, naming the policy, never
// signature-refused or attestation-refused (cosign folds the failed
// read into "no matching signatures"); the real cosign verify, with the
// engine's flags, through the same proxy, fails too on the legacy
// layouts: cosign cannot decide either (for bundles, see the case).
// Without the fault, both pass.
func TestVerifyRegistryFaultsMatchCosign(t *testing.T) {
	ctx := context.Background()
	a := newCosign(t)
	r := startEmpty(t, registry.V3)
	host := r.Host()
	repoOf := func(repo string) name.Repository {
		rp, err := name.NewRepository(host+"/"+repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return rp
	}
	sigTag := func(repo, digest, suffix string) name.Reference {
		return repoOf(repo).Tag(strings.Replace(digest, ":", "-", 1) + suffix)
	}
	legacy := pushAndSign(t, a, host, "flegacy")
	att := pushAndAttest(t, a, host, "fatt")
	// A signature bundle and an attestation bundle: GetBundles skips
	// the unreadable one and reads the other.
	bundle := pushAndSignBundle(t, a, host, "fbundle")
	if err := a.Attest(ctx, host+"/fbundle@"+bundle.digest, "slsaprovenance", slsaPredicate, cosign.Bundle); err != nil {
		t.Fatal(err)
	}
	layers := map[string]string{
		"flegacy": layerOf(t, sigTag("flegacy", legacy.digest, ".sig").String()),
		"fatt":    layerOf(t, sigTag("fatt", att.digest, ".att").String()),
		"fbundle": signatureBundleLayer(t, repoOf("fbundle"), bundle.digest),
	}
	ignore := "                    rekor: {ignoreTlog: true}\n                    ctlog: {ignoreSCT: true}\n"
	kyverno := func(phost, repo, typ, body string) string {
		p := strings.Replace(kyvernoBundlePolicy, "BODY", body, 1)
		return strings.NewReplacer("HOST", phost, "REPO", repo, "TYPE", typ, "PUB", pubYAML(t, a)).Replace(p)
	}
	attestors := strings.Replace(kyvernoAttestorsBlock, "REKOR", ignore, 1)
	type fcase struct {
		repo, typ, body string
		im              admImage
		cosign          func(ref string) (bool, string, error)
		// cosignPasses: cosign verify passes through the fault.
		cosignPasses bool
	}
	fixtures := map[string]fcase{
		"legacy signature, Kyverno Cosign": {"flegacy", "Cosign", attestors, legacy,
			func(ref string) (bool, string, error) { return a.VerifyKey(ctx, ref, a.Pub, cosign.Legacy, true, "") }, false},
		"legacy attestation, Kyverno Cosign": {"fatt", "Cosign", kyvernoAttestationsBlock, att,
			func(ref string) (bool, string, error) {
				return a.VerifyAttestationKey(ctx, ref, a.Pub, "slsaprovenance", cosign.Legacy, true, "")
			}, false},
		// cosign verify --new-bundle-format passes over the signature
		// bundle it cannot read (GetBundles) and takes the attestation
		// bundle, signed with the same key, as a signature (it filters
		// no predicate type): it passes. Kyverno's SigstoreBundle
		// verifier fails on a referrer it cannot read
		// (pkg/image/verifiers/cpol/cosign/sigstore.go, fetchBundles):
		// a fault. Unknown is regcheck's answer (never broken, nor ok:
		// without the fault the attestation bundle alone would be a
		// signature to both, TestVerifyBundle).
		"v3 signature bundle beside an attestation bundle, Kyverno SigstoreBundle": {"fbundle", "SigstoreBundle", attestors, bundle,
			func(ref string) (bool, string, error) { return a.VerifyKey(ctx, ref, a.Pub, cosign.Bundle, true, "") }, true},
	}
	var table []string
	for _, fx := range []string{"legacy signature, Kyverno Cosign", "legacy attestation, Kyverno Cosign", "v3 signature bundle beside an attestation bundle, Kyverno SigstoreBundle"} {
		for _, fault := range []faultproxy.Fault{"", faultproxy.Unavailable, faultproxy.TooManyRequests} {
			tt := fixtures[fx]
			name := fx + ", " + string(fault)
			if fault == "" {
				name = fx + ", no fault"
			}
			t.Run(name, func(t *testing.T) {
				var rules []faultproxy.Rule
				if fault != "" {
					rules = []faultproxy.Rule{{Fault: fault, Kinds: []faultproxy.Kind{faultproxy.Blob}, Methods: []string{"GET"}, Path: layers[tt.repo]}}
				}
				p, err := faultproxy.Start(faultproxy.Config{Upstream: host, Rules: rules})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				got := scanWithPolicy(t, p.Host()+"/"+tt.repo+":v1", kyverno(p.Host(), tt.repo, tt.typ, tt.body))
				ok, out, err := tt.cosign(p.Host() + "/" + tt.repo + "@" + tt.im.digest)
				if err != nil {
					t.Fatal(err)
				}
				table = append(table, fmt.Sprintf("%-85s regcheck %-8s cosign exit0=%v", name, got.Verdict, ok))
				t.Logf("regcheck %s %v; cosign passed=%v: %s", got.Verdict, codesOf(got), ok, lastLines(out, 2))
				if fault == "" {
					if got.Verdict != types.OK || !ok {
						t.Fatalf("without a fault: regcheck %s, cosign passed=%v, want ok and passed: %+v\n%s", got.Verdict, ok, got.Findings, lastLines(out, 3))
					}
					return
				}
				if p.Total() == 0 {
					t.Fatal("the fault proxy injected nothing: the case tested nothing")
				}
				if ok != tt.cosignPasses {
					t.Errorf("cosign verify passed=%v through the fault, want %v:\n%s", ok, tt.cosignPasses, lastLines(out, 3))
				}
				if got.Verdict != types.Unknown || findingOf(got, types.SignatureRefused) != nil || findingOf(got, types.AttestationRefused) != nil {
					t.Fatalf("regcheck: verdict %s, want unknown and no refusal: %+v", got.Verdict, got.Findings)
				}
				if !hasFinding(got, func(f types.Finding) bool {
					return f.Code.Fault() && strings.Contains(f.Message, "require-signed") && strings.Contains(f.Message, "could not be decided") && strings.Contains(f.Message, string(fault)[:3])
				}) {
					t.Errorf("no fault finding of the verification naming the policy and %s: %+v", fault, got.Findings)
				}
			})
		}
	}
	t.Logf("agreement:\n%s", strings.Join(table, "\n"))
}
