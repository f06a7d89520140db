//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// admissionPolicies are the policies the cluster holds, as users write
// them: Kyverno Enforce and Audit ClusterPolicies, a namespaced Policy,
// and a policy-controller ClusterImagePolicy (as v1alpha1, its stored
// version: no conversion webhook runs).
const admissionPolicies = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-signed-team
spec:
  rules:
    - name: verify-team
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["*/team/*"]
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true} # signed with --tlog-upload=false
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: audit-signed
spec:
  validationFailureAction: Audit
  rules:
    - name: verify-audit
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/audit/*"]
          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true} # signed with --tlog-upload=false
---
apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: shop-signed
  namespace: shop
spec:
  validationFailureAction: Enforce
  rules:
    - name: verify-shop
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/shop/*"]
          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true} # signed with --tlog-upload=false
---
apiVersion: policy.sigstore.dev/v1alpha1
kind: ClusterImagePolicy
metadata:
  name: sigstore-signed
spec:
  images:
    - glob: "HOST/sig/**"
  authorities:
    - key:
        data: "PUB"
---
apiVersion: kyverno.io/v1
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
        - imageReferences: ["HOST/bundle/*"]
          type: SigstoreBundle
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true} # signed with --tlog-upload=false
                    ctlog: {ignoreSCT: true} # a key-signed bundle has no SCT (Kyverno requires a timestamp otherwise)
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-provenance
spec:
  rules:
    - name: verify-provenance
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/attest/*"]
          failureAction: Enforce
          attestations:
            - type: https://slsa.dev/provenance/v0.2
              attestors:
                - entries:
                    - keys:
                        publicKeys: "PUB"
                        rekor: {ignoreTlog: true} # signed with --tlog-upload=false
`

// admImage is one image of the test: pushed, signed with cosign, its
// signature perhaps deleted.
type admImage struct {
	ref, digest string
}

// pushAndSign pushes an image to host/repo:v1 and signs its digest with
// cosign in the legacy .sig layout.
func pushAndSign(t *testing.T, c *cosign.Cosign, host, repo string) admImage {
	t.Helper()
	ref := host + "/" + repo + ":v1"
	d := pushSingle(t, ref, "admission "+repo)
	if err := c.Sign(context.Background(), host+"/"+repo+"@"+d, cosign.Legacy, false); err != nil {
		t.Fatal(err)
	}
	return admImage{ref: ref, digest: d}
}

// pushAndSignBundle pushes an image and signs it in cosign v3's bundle
// format: an OCI 1.1 referrer (on distribution 3.1.2, which has no
// referrers API, listed in the referrers tag's index).
func pushAndSignBundle(t *testing.T, c *cosign.Cosign, host, repo string) admImage {
	t.Helper()
	ref := host + "/" + repo + ":v1"
	d := pushSingle(t, ref, "admission bundle "+repo)
	if err := c.Sign(context.Background(), host+"/"+repo+"@"+d, cosign.Bundle, false); err != nil {
		t.Fatal(err)
	}
	return admImage{ref: ref, digest: d}
}

// pushAndAttest pushes an image and attests it (SLSA provenance v0.2) in
// the legacy .att layout.
func pushAndAttest(t *testing.T, c *cosign.Cosign, host, repo string) admImage {
	t.Helper()
	ref := host + "/" + repo + ":v1"
	d := pushSingle(t, ref, "admission attest "+repo)
	pred := []byte(`{"buildType":"https://example.com/build","builder":{"id":"https://example.com/builder"}}`)
	if err := c.Attest(context.Background(), host+"/"+repo+"@"+d, "slsaprovenance", pred, cosign.Legacy); err != nil {
		t.Fatal(err)
	}
	return admImage{ref: ref, digest: d}
}

// deleteTagTarget deletes, through the registry's API, the manifest a
// tag of repo points at (and so the tag).
func deleteTagTarget(t *testing.T, host, repo, tag string) {
	t.Helper()
	r, err := name.NewRepository(host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r.Tag(tag))
	if err != nil {
		t.Fatalf("%s:%s: %v", r, tag, err)
	}
	if err := remote.Delete(r.Digest(desc.Digest.String())); err != nil {
		t.Fatal(err)
	}
}

// deleteReferrers deletes, through the registry's API, every referrer of
// im (its sigstore bundle); the referrers tag's index still lists them.
func deleteReferrers(t *testing.T, host, repo string, im admImage) {
	t.Helper()
	r, err := name.NewRepository(host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Referrers(r.Digest(im.digest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) == 0 {
		t.Fatalf("no referrer of %s: %v", im.ref, err)
	}
	for _, d := range m.Manifests {
		if err := remote.Delete(r.Digest(d.Digest.String())); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteSignature deletes, through the registry's API, the manifest the
// .sig tag of im points at: the tag goes with it, as a GC of dangling
// signatures leaves things.
func deleteSignature(t *testing.T, host, repo string, im admImage) {
	t.Helper()
	r, err := name.NewRepository(host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r.Tag("sha256-" + strings.TrimPrefix(im.digest, "sha256:") + ".sig"))
	if err != nil {
		t.Fatalf("the .sig tag of %s: %v", im.ref, err)
	}
	if err := remote.Delete(r.Digest(desc.Digest.String())); err != nil {
		t.Fatal(err)
	}
}

// deleteSignatureLayer deletes, through the registry's API, the layer of
// im's .sig manifest: the tag and manifest stay, the signature is not
// whole.
func deleteSignatureLayer(t *testing.T, host, repo string, im admImage) {
	t.Helper()
	r, err := name.NewRepository(host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r.Tag("sha256-" + strings.TrimPrefix(im.digest, "sha256:") + ".sig"))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		t.Fatalf("the .sig of %s has no layer: %v", im.ref, err)
	}
	d, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodDelete, "http://"+host+"/v2/"+repo+"/blobs/"+d.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("DELETE blob %s: %s", d, resp.Status)
	}
}

// applyPolicies creates the YAML documents' objects with the dynamic client.
func applyPolicies(t *testing.T, ctx context.Context, dyn dynamic.Interface, docs string) {
	t.Helper()
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(docs), 1<<16)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			break
		}
		u := &unstructured.Unstructured{Object: obj}
		gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
		plural := strings.ToLower(u.GetKind()) + "s"
		if strings.HasSuffix(strings.ToLower(u.GetKind()), "policy") {
			plural = strings.TrimSuffix(strings.ToLower(u.GetKind()), "y") + "ies"
		}
		res := dyn.Resource(gv.WithResource(plural))
		var err error
		if u.GetNamespace() != "" {
			_, err = res.Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = res.Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// clusterScanErr is clusterScan with stderr, for the notices.
func clusterScanErr(t *testing.T, kubeconfig string, extra ...string) (int, map[string]*types.Image, report.Document, string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"scan", "--cluster", "-A", "--kubeconfig", kubeconfig, "-o", "json"}, extra...)
	code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb}, args)
	var doc report.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("exit %d, output not JSON: %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	return code, byReference(doc), doc, errb.String()
}

// findingOf returns the image's first finding with code c.
func findingOf(im *types.Image, c types.Code) *types.Finding {
	for i := range im.Findings {
		if im.Findings[i].Code == c {
			return &im.Findings[i]
		}
	}
	return nil
}

// TestAdmissionCluster: images signed with real cosign on a real
// registry, run in a real apiserver holding Kyverno's and
// policy-controller's real CRDs and policies; signatures deleted. scan
// --cluster says broken for the enforced use, at-risk for the audited,
// nothing beyond info without a policy, unknown when the registry fails;
// cosign verify agrees on what is gone; pin refuses the digest.
func TestAdmissionCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sig := newAdmCosign(t)
	reg := startEmpty(t, registry.V3)
	host := reg.Host()
	proxy, err := faultproxy.Start(faultproxy.Config{Upstream: host, Rules: []faultproxy.Rule{
		{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.ManifestByTag}, Path: ".sig"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })

	enforced := pushAndSign(t, sig, host, "team/web")              // Enforce: signature deleted
	whole := pushAndSign(t, sig, host, "team/api")                 // Enforce: signature whole
	audited := pushAndSign(t, sig, host, "audit/app")              // Audit: signature deleted
	free := pushAndSign(t, sig, host, "free/app")                  // no policy: signature deleted
	shop := pushAndSign(t, sig, host, "shop/cart")                 // namespaced Policy: deleted
	cipSigned := pushAndSign(t, sig, host, "sig/labelled")         // ClusterImagePolicy, opted-in namespace: deleted
	cipPlain := pushAndSign(t, sig, host, "sig/plain")             // ClusterImagePolicy, namespace not opted in: deleted
	flaky := pushAndSign(t, sig, host, "team/flaky")               // Enforce, read through a proxy that fails .sig tags
	bundleGone := pushAndSignBundle(t, sig, host, "bundle/gone")   // SigstoreBundle, Enforce: bundle deleted
	bundleWhole := pushAndSignBundle(t, sig, host, "bundle/whole") // SigstoreBundle, Enforce: whole
	attestGone := pushAndAttest(t, sig, host, "attest/gone")       // an attestation required: .att deleted
	attestWhole := pushAndAttest(t, sig, host, "attest/whole")
	deleteReferrers(t, host, "bundle/gone", bundleGone)
	deleteTagTarget(t, host, "attest/gone", "sha256-"+strings.TrimPrefix(attestGone.digest, "sha256:")+".att")
	for _, d := range []struct {
		repo string
		im   admImage
	}{{"team/web", enforced}, {"audit/app", audited}, {"shop/cart", shop}, {"sig/labelled", cipSigned}, {"sig/plain", cipPlain}} {
		deleteSignature(t, host, d.repo, d.im)
	}
	deleteSignatureLayer(t, host, "free/app", free)
	// Ground truth: cosign verify fails exactly where the signature is gone.
	for _, c := range []struct {
		im   admImage
		want bool
	}{{enforced, false}, {whole, true}, {audited, false}, {free, false}, {flaky, true}} {
		ok, out, err := sig.Verify(ctx, strings.TrimSuffix(c.im.ref, ":v1")+"@"+c.im.digest, cosign.Legacy)
		if err != nil || ok != c.want {
			t.Fatalf("cosign verify %s = %v (%v), want %v\n%s", c.im.ref, ok, err, c.want, out)
		}
	}
	for _, c := range []struct {
		im   admImage
		want bool
	}{{bundleGone, false}, {bundleWhole, true}} {
		ok, out, err := sig.Verify(ctx, strings.TrimSuffix(c.im.ref, ":v1")+"@"+c.im.digest, cosign.Bundle)
		if err != nil || ok != c.want {
			t.Fatalf("cosign verify (bundle) %s = %v (%v), want %v\n%s", c.im.ref, ok, err, c.want, out)
		}
	}
	for _, c := range []struct {
		im   admImage
		want bool
	}{{attestGone, false}, {attestWhole, true}} {
		ok, out, err := sig.VerifyAttestation(ctx, strings.TrimSuffix(c.im.ref, ":v1")+"@"+c.im.digest, "slsaprovenance", cosign.Legacy)
		if err != nil || ok != c.want {
			t.Fatalf("cosign verify-attestation %s = %v (%v), want %v\n%s", c.im.ref, ok, err, c.want, out)
		}
	}

	kc, cs := startKube(t, ctx)
	for _, ns := range []string{"prod", "audit", "free", "shop", "other", "signed", "plain"} {
		namespaceWithSA(t, ctx, cs, ns)
	}
	nsSigned, err := cs.CoreV1().Namespaces().Get(ctx, "signed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsSigned.Labels = map[string]string{"policy.sigstore.dev/include": "true"}
	if _, err := cs.CoreV1().Namespaces().Update(ctx, nsSigned, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	flakyRef := proxy.Host() + "/team/flaky:v1"
	for _, w := range []struct{ ns, name, ref, digest string }{
		{"prod", "web", enforced.ref, enforced.digest}, {"prod", "api", whole.ref, whole.digest},
		{"audit", "app", audited.ref, audited.digest}, {"free", "app", free.ref, free.digest},
		{"shop", "cart", shop.ref, shop.digest}, {"other", "cart", shop.ref, shop.digest},
		{"signed", "labelled", cipSigned.ref, cipSigned.digest}, {"plain", "plain", cipPlain.ref, cipPlain.digest},
		{"prod", "flaky", flakyRef, flaky.digest},
		{"prod", "bundle-gone", bundleGone.ref, bundleGone.digest}, {"prod", "bundle-whole", bundleWhole.ref, bundleWhole.digest},
		{"prod", "attest-gone", attestGone.ref, attestGone.digest}, {"prod", "attest-whole", attestWhole.ref, attestWhole.digest},
	} {
		repo := strings.TrimSuffix(w.ref, ":v1")
		workload(t, ctx, cs, w.ns, w.name, w.ref, "IfNotPresent", "node-a", repo+"@"+w.digest)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "adm", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}

	limited := limitedKubeconfig(t, ctx, kc)

	t.Run("no CRDs: no policy, said once, nothing looked for", func(t *testing.T) {
		_, got, _, stderr := clusterScanErr(t, kubeconfig, "--log-level", "info")
		if im := got[enforced.ref]; im == nil || im.Verdict != types.OK || findingOf(im, types.SignatureMissing) != nil {
			t.Errorf("%s without policies: %+v, want ok", enforced.ref, im)
		}
		for _, e := range []string{"kyverno", "policy-controller"} {
			if n := strings.Count(stderr, "no "+e+" policies"); n != 1 {
				t.Errorf("stderr says %d times that there are no %s policies, want once:\n%s", n, e, stderr)
			}
		}
		// Without RBAC on the policy kinds (an older deploy/rbac.yaml),
		// discovery still says they are not served: no warning.
		_, _, doc, stderr := clusterScanErr(t, limited)
		if len(doc.InputErrors) > 0 || strings.Contains(stderr, "kyverno.io") || strings.Contains(stderr, "policy.sigstore.dev") {
			t.Errorf("a ServiceAccount without RBAC on uninstalled policy kinds: input errors %+v\n%s", doc.InputErrors, stderr)
		}
	})

	crdStart := time.Now()
	if err := kc.InstallPolicyCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Kyverno's and policy-controller's CRDs found and Established in %v", time.Since(crdStart).Round(time.Millisecond))
	dyn, err := dynamic.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	applyPolicies(t, ctx, dyn, strings.NewReplacer("HOST", host, "PUB", pubYAML(t, sig)).Replace(admissionPolicies))

	t.Run("policies applied", func(t *testing.T) {
		code, got, _, stderr := clusterScanErr(t, kubeconfig)
		if code != cli.ExitFindings {
			t.Errorf("exit %d, want %d (broken images)\n%s", code, cli.ExitFindings, stderr)
		}
		for _, c := range []struct {
			ref      string
			verdict  types.Verdict
			code     types.Code
			severity types.Severity
			mentions string
		}{
			{enforced.ref, types.Broken, types.SignatureMissing, types.SeverityCritical, "kyverno ClusterPolicy require-signed-team, rule verify-team (Enforce)"},
			{whole.ref, types.OK, "", 0, ""},
			{audited.ref, types.AtRisk, types.SignatureMissing, types.SeverityWarning, "kyverno ClusterPolicy audit-signed, rule verify-audit (Audit)"},
			{shop.ref, types.Broken, types.SignatureMissing, types.SeverityCritical, "kyverno Policy shop/shop-signed, rule verify-shop (Enforce) requires a signature of " + types.ShortDigest(shop.digest) + " for Deployment shop/cart;"},
			{cipSigned.ref, types.Broken, types.SignatureMissing, types.SeverityCritical, "policy-controller ClusterImagePolicy sigstore-signed (enforce)"},
			{cipPlain.ref, types.OK, "", 0, ""},
			{flakyRef, types.Unknown, types.RegistryFault, types.SeverityWarning, "whether it is there could not be asked"},
			{bundleGone.ref, types.Broken, types.SignatureMissing, types.SeverityCritical, "kyverno ClusterPolicy require-bundle, rule verify-bundle (Enforce)"},
			{bundleWhole.ref, types.OK, "", 0, ""},
			{attestGone.ref, types.Broken, types.SignedAttestationMissing, types.SeverityCritical, "an attestation of predicate type https://slsa.dev/provenance/v0.2"},
			{attestWhole.ref, types.OK, "", 0, ""},
		} {
			im := got[c.ref]
			if im == nil {
				t.Errorf("%s not in the report", c.ref)
				continue
			}
			if im.Verdict != c.verdict {
				t.Errorf("%s: verdict %s, want %s: %+v", c.ref, im.Verdict, c.verdict, im.Findings)
			}
			if c.code == "" {
				for _, f := range im.Findings {
					if f.Severity > types.SeverityInfo {
						t.Errorf("%s: finding %+v, want nothing beyond info", c.ref, f)
					}
				}
				continue
			}
			f := findingOf(im, c.code)
			if f == nil || f.Severity != c.severity || !strings.Contains(f.Message, c.mentions) {
				t.Errorf("%s: finding %s = %+v, want severity %s saying %q", c.ref, c.code, f, c.severity, c.mentions)
			}
			if c.code == types.SignatureMissing && (!strings.Contains(f.Advice, "the image itself is whole") || findingOf(im, types.BlobMissing) != nil) {
				t.Errorf("%s: %+v: want re-sign advice and a whole image", c.ref, im.Findings)
			}
		}
		if f := findingOf(got[shop.ref], types.SignatureMissing); f != nil && strings.Contains(f.Message, "other/cart") {
			t.Errorf("the shop Policy is said to apply in namespace other: %s", f.Message)
		}
		// No policy: the signature whose layer is gone is info, the verdict ok.
		im := got[free.ref]
		if im == nil || im.Verdict != types.OK || findingOf(im, types.ArtifactMissing) == nil || findingOf(im, types.ArtifactMissing).Severity != types.SeverityInfo {
			t.Errorf("%s (no policy): %+v, want ok with an artifact-missing info", free.ref, im)
		}
	})

	t.Run("policies forbidden: a warning, the run goes on", func(t *testing.T) {
		code, got, doc, stderr := clusterScanErr(t, limited)
		if im := got[enforced.ref]; im == nil || findingOf(im, types.SignatureMissing) != nil {
			t.Errorf("%s with the policies unreadable: %+v, want scanned, no signature-missing", enforced.ref, im)
		}
		if !strings.Contains(stderr, "clusterpolicies.kyverno.io") || !strings.Contains(stderr, "forbidden") {
			t.Errorf("stderr does not warn that listing the policies is forbidden:\n%s", stderr)
		}
		found := false
		for _, ie := range doc.InputErrors {
			found = found || strings.Contains(ie.Message, "clusterimagepolicies.policy.sigstore.dev") && !ie.Notice
		}
		if !found || code != cli.ExitIncomplete {
			t.Errorf("exit %d, input errors %+v: want %d and the unread policies named", code, doc.InputErrors, cli.ExitIncomplete)
		}
	})

	t.Run("--policies=false", func(t *testing.T) {
		_, got, _, _ := clusterScanErr(t, kubeconfig, "--policies=false")
		if im := got[enforced.ref]; im == nil || im.Verdict != types.OK {
			t.Errorf("%s with --policies=false: %+v, want ok", enforced.ref, im)
		}
	})

	t.Run("pin refuses the digest an Enforce policy would reject", func(t *testing.T) {
		dir := t.TempDir()
		files := map[string]string{
			"web.yaml":    deployment("web", enforced.ref, ""),
			"api.yaml":    deployment("api", whole.ref, ""),
			"policy.yaml": strings.NewReplacer("HOST", host, "PUB", pubYAML(t, sig)).Replace(strings.Split(admissionPolicies, "---")[0]),
		}
		for n, body := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		code, out, stderr := runCLI(t, "pin", dir)
		all := out + stderr
		if code != cli.ExitFindings || !strings.Contains(all, "refusing to pin "+enforced.ref+" to "+enforced.digest) ||
			!strings.Contains(all, "signature-missing") {
			t.Errorf("pin: exit %d, want %d refusing %s for signature-missing:\n%s", code, cli.ExitFindings, enforced.ref, all)
		}
		if !strings.Contains(all, whole.ref+"@"+whole.digest) {
			t.Errorf("pin did not pin %s, whose signature is whole:\n%s", whole.ref, all)
		}
		code, out, stderr = runCLI(t, "pin", "--policies=false", dir)
		if strings.Contains(out+stderr, "refusing to pin") {
			t.Errorf("pin --policies=false: exit %d, still refuses:\n%s%s", code, out, stderr)
		}
	})

	t.Run("pin with the policies forbidden: said, pinned, incomplete", func(t *testing.T) {
		dir := t.TempDir()
		// Deployment prod/web, container web, as workload made it.
		web := strings.NewReplacer("  name: web\n", "  name: web\n  namespace: prod\n", "- name: app\n", "- name: web\n").Replace(deployment("web", enforced.ref, ""))
		if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(web), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := runCLI(t, "pin", "--from-cluster", "--kubeconfig", limited, "-A", dir)
		if code != cli.ExitIncomplete || !strings.Contains(stderr, "policy-unread: the cluster's image policies: listing clusterpolicies.kyverno.io") {
			t.Errorf("pin, the policies forbidden: exit %d, want %d and policy-unread naming the ClusterPolicy list:\n%s%s", code, cli.ExitIncomplete, out, stderr)
		}
		if !strings.Contains(out, enforced.ref+"@"+enforced.digest) {
			t.Errorf("pin did not pin the rest (%s to the digest running):\n%s%s", enforced.ref, out, stderr)
		}
	})

	t.Run("scan -f reads the policies among the files", func(t *testing.T) {
		dir := t.TempDir()
		body := deployment("web", enforced.ref, "") + "---\n" + strings.NewReplacer("HOST", host, "PUB", pubYAML(t, sig)).Replace(strings.Split(admissionPolicies, "---")[0])
		if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		doc, code, _ := scanCLI(t, "-f", dir)
		got := byReference(doc)
		im := got[enforced.ref]
		if code != cli.ExitFindings || im == nil || im.Verdict != types.Broken || findingOf(im, types.SignatureMissing) == nil {
			t.Errorf("scan -f: exit %d, %+v; want broken, signature-missing", code, im)
		} else if f := findingOf(im, types.SignatureMissing); !strings.Contains(f.Message, filepath.Join(dir, "all.yaml")+":") {
			t.Errorf("finding %q does not name the policy's file", f.Message)
		}
	})
}

// limitedKubeconfig writes a kubeconfig for a ServiceAccount that may
// read what inventory lists, but not the image policies.
func limitedKubeconfig(t *testing.T, ctx context.Context, kc *kubeapi.Cluster) string {
	t.Helper()
	cs, err := kc.Client()
	if err != nil {
		t.Fatal(err)
	}
	read := []string{"get", "list"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "no-policies"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: read}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("prod").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-policies"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-policies"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "no-policies"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "no-policies", Namespace: "prod"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, token, err := kc.ServiceAccountConfig(ctx, "prod", "no-policies")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(p, "no-policies", token); err != nil {
		t.Fatal(err)
	}
	return p
}

// newAdmCosign is a cosign with a fresh key pair, or the test fails
// saying how to build it.
func newAdmCosign(t *testing.T) *cosign.Cosign {
	t.Helper()
	c, err := cosign.New(context.Background(), t.TempDir())
	if err != nil {
		t.Fatalf("cosign: %v (hack/build-bins.sh builds it)", err)
	}
	return c
}
