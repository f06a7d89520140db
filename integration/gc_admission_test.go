//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// gcAdmissionPolicies enforce a sigstore bundle signature on HOST/bundle/*
// and a legacy .sig signature on HOST/legacy/*, and audit a bundle on
// HOST/audit/*.
const gcAdmissionPolicies = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-bundle
spec:
  rules:
    - name: bundle
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
    - name: legacy
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/legacy/*"]
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true} # signed with --tlog-upload=false
    - name: audit
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/audit/*"]
          type: SigstoreBundle
          failureAction: Audit
          attestors:
            - entries:
                - keys:
                    publicKeys: "PUB"
                    rekor: {ignoreTlog: true} # signed with --tlog-upload=false
                    ctlog: {ignoreSCT: true} # a key-signed bundle has no SCT (Kyverno requires a timestamp otherwise)
`

// gcCheckJSON runs gc-check -o json and decodes its report.
func gcCheckJSON(t *testing.T, args ...string) (int, gcresult.Report, string) {
	t.Helper()
	code, out, stderr := runCLI(t, append([]string{"gc-check", "-o", "json"}, args...)...)
	var rep gcresult.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("gc-check: exit %d, output not JSON: %v\n%s\n%s", code, err, out, stderr)
	}
	return code, rep, stderr
}

// TestGCCheckAdmission: images signed with real cosign v3 on a real
// docker/distribution 2.8.3, whose --delete-untagged deletes every
// sigstore bundle (an untagged referrer); a real apiserver holds
// Kyverno's CRDs and policies. gc-check --cluster reads the policies: the
// image an Enforce policy requires a bundle of would break (exit 1), the
// audited one is at-risk, the one whose .sig tag the run keeps does not
// break. Without --cluster the loss is information (exit 0). Then the
// real collector runs and cosign verify holds the prediction: the bundle
// is gone, the .sig stays.
func TestGCCheckAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sig := newAdmCosign(t)
	reg := startEmpty(t, registry.V2)
	host := reg.Host()
	bundle := pushAndSignBundle(t, sig, host, "bundle/app")
	audited := pushAndSignBundle(t, sig, host, "audit/app")
	legacy := pushAndSign(t, sig, host, "legacy/app")
	verify := func(im admImage, f cosign.Format) bool {
		t.Helper()
		ok, out, err := sig.Verify(ctx, strings.TrimSuffix(im.ref, ":v1")+"@"+im.digest, f)
		if err != nil {
			t.Fatalf("cosign verify %s: %v\n%s", im.ref, err, out)
		}
		return ok
	}
	if !verify(bundle, cosign.Bundle) || !verify(audited, cosign.Bundle) || !verify(legacy, cosign.Legacy) {
		t.Fatal("cosign verify fails before the run")
	}

	kc, cs := startKube(t, ctx)
	namespaceWithSA(t, ctx, cs, "prod")
	for _, w := range []struct {
		name string
		im   admImage
	}{{"bundle", bundle}, {"audit", audited}, {"legacy", legacy}} {
		workload(t, ctx, cs, "prod", w.name, w.im.ref, "IfNotPresent", "node-a", strings.TrimSuffix(w.im.ref, ":v1")+"@"+w.im.digest)
	}
	if err := kc.InstallPolicyCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	applyPolicies(t, ctx, dyn, strings.NewReplacer("HOST", host, "PUB", pubYAML(t, sig)).Replace(gcAdmissionPolicies))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "adm", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Stop(); err != nil {
		t.Fatal(err)
	}
	storageArgs := []string{"--storage", reg.Root, "--gc-model", "distribution-2.8", "--delete-untagged", "--registry", host}

	t.Run("with --cluster: the enforced bundle's loss breaks the image", func(t *testing.T) {
		code, rep, stderr := gcCheckJSON(t, append(storageArgs, "--cluster", "-A", "--kubeconfig", kubeconfig)...)
		if code != cli.ExitFindings {
			t.Errorf("exit %d, want %d\n%s", code, cli.ExitFindings, stderr)
		}
		got := map[string]gcresult.Entry{}
		for _, e := range rep.WouldBreak {
			got[e.Reference] = e
		}
		e, ok := got[bundle.ref]
		if !ok || e.Verdict != types.Broken || e.Digest != bundle.digest || len(e.Losses) != 1 ||
			e.Losses[0].Code != types.SignatureMissing || !strings.Contains(e.Reason, "require-bundle") {
			t.Errorf("%s: %+v, want broken for the bundle signature require-bundle requires", bundle.ref, e)
		}
		if a, ok := got[audited.ref]; !ok || a.Verdict != types.AtRisk {
			t.Errorf("%s: %+v, want at-risk (Audit)", audited.ref, a)
		}
		if l, ok := got[legacy.ref]; ok {
			t.Errorf("%s would break: %+v; its .sig tag is kept", legacy.ref, l)
		}
	})

	t.Run("without policies: information only", func(t *testing.T) {
		code, rep, stderr := gcCheckJSON(t, append(storageArgs, bundle.ref, audited.ref, legacy.ref)...)
		if code != 0 || len(rep.WouldBreak) != 0 {
			t.Errorf("exit %d, would break %+v; want 0 and nothing\n%s", code, rep.WouldBreak, stderr)
		}
		lost := map[string]bool{}
		for _, l := range rep.WouldLoseArtifacts {
			lost[l.Reference] = true
		}
		if !lost[bundle.ref] || !lost[audited.ref] || lost[legacy.ref] {
			t.Errorf("artifacts lost %+v, want the two bundles only", rep.WouldLoseArtifacts)
		}
	})

	// Ground truth: the real collector, then cosign verify.
	if _, err := reg.GC(ctx, true, false); err != nil {
		t.Fatal(err)
	}
	if err := reg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if verify(bundle, cosign.Bundle) || verify(audited, cosign.Bundle) {
		t.Error("cosign verify of a bundle passes after the run, which was predicted to delete it")
	}
	if !verify(legacy, cosign.Legacy) {
		t.Error("cosign verify of the .sig fails after the run, which was predicted to keep it")
	}
}
