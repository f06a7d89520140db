//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

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
