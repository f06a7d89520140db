//go:build integration

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// ivpPolicies are Kyverno ImageValidatingPolicies as Kyverno's
// documentation writes them (kyverno.io/docs/policy-types/
// image-validating-policy): one in Deny with key A (signed with
// --tlog-upload=false, so the log is ignored), one in Audit with key A,
// one in Deny with a keyless attestor and no trust material.
const ivpPolicies = `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ivp-require-signed
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE]
        resources: [pods]
  matchImageReferences:
    - glob: "HOST/ivp/*"
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
---
apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ivp-audit-signed
spec:
  validationActions: [Audit]
  matchImageReferences:
    - glob: "HOST/ivpaudit/*"
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
---
apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: ivp-keyless
spec:
  validationActions: [Deny]
  matchImageReferences:
    - glob: "HOST/ivpkeyless/*"
  attestors:
    - name: github
      cosign:
        keyless:
          identities:
            - subject: https://github.com/org/repo/.github/workflows/build.yaml@refs/heads/main
              issuer: https://token.actions.githubusercontent.com
  validations:
    - expression: >-
        images.containers.map(image, verifyImageSignatures(image, [attestors.github])).all(e, e > 0)
      message: failed keyless verification
`

// ivpCase is one image of TestAdmissionIVP and what is expected of it.
type ivpCase struct {
	name     string
	im       admImage
	want     types.Verdict
	code     types.Code // a finding the verdict must carry; "" for none beyond info
	cosignOK *bool      // cosign verify --key A: nil when not asked (keyless, not matched)
}

// TestAdmissionIVP: Kyverno ImageValidatingPolicies over images signed by
// the real cosign v3.1.3 on a real registry, given with scan -f and
// applied, with Kyverno's own policies.kyverno.io CRDs, to a real
// apiserver for scan --cluster. In Deny with key A: signed with A is ok
// (cosign verify --key A exits 0); its signature deleted is broken
// (signature-missing); signed with B is broken (signature-refused;
// cosign exits non-zero). In Audit, signed with B: at-risk. An image
// no matchImageReferences glob matches: no finding. A keyless attestor
// with no trust material: unknown, never ok.
func TestAdmissionIVP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, b := newAdmCosign(t), newAdmCosign(t)
	reg := startEmpty(t, registry.V3)
	host := reg.Host()
	yes, no := true, false
	gone := pushAndSign(t, a, host, "ivp/gone")
	deleteSignature(t, host, "ivp/gone", gone)
	cases := []ivpCase{
		{"Deny, signed with the policy's key", pushAndSign(t, a, host, "ivp/good"), types.OK, "", &yes},
		{"Deny, signature deleted", gone, types.Broken, types.SignatureMissing, &no},
		{"Deny, signed with another key", pushAndSign(t, b, host, "ivp/wrong"), types.Broken, types.SignatureRefused, &no},
		{"Audit, signed with another key", pushAndSign(t, b, host, "ivpaudit/wrong"), types.AtRisk, types.SignatureRefused, &no},
		{"not matched by matchImageReferences", pushAndSign(t, b, host, "other/app"), types.OK, "", nil},
		// Signed with a key, under a keyless attestor: no certificate, which
		// cosign refuses whatever roots the engine holds.
		{"keyless, a key-signed image, no trust material", pushAndSign(t, a, host, "ivpkeyless/app"), types.Broken, types.SignatureRefused, nil},
	}
	for _, c := range cases {
		if c.cosignOK == nil {
			continue
		}
		ref := strings.TrimSuffix(c.im.ref, ":v1") + "@" + c.im.digest
		ok, out, err := a.VerifyKey(ctx, ref, a.Pub, cosign.Legacy, true, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: cosign verify --key A passed=%v: %s", c.name, ok, lastLines(out, 1))
		if ok != *c.cosignOK {
			t.Fatalf("%s: cosign verify --key A passed=%v, want %v (the fixture is not what the case says):\n%s", c.name, ok, *c.cosignOK, lastLines(out, 5))
		}
	}
	policies := strings.NewReplacer("HOST", host, "PEM", indentPEM(t, a.Pub, 12)).Replace(ivpPolicies)

	t.Run("scan -f", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				checkIVP(t, c, scanWithPolicy(t, c.im.ref, policies))
			})
		}
	})

	t.Run("scan --cluster", func(t *testing.T) {
		var ims []admImage
		for _, c := range cases {
			ims = append(ims, c.im)
		}
		kc := ivpCluster(t, ctx, ims)
		_, _, _, stderr := clusterScanErr(t, kubeconfigOf(t, kc), "--log-level", "info")
		if n := strings.Count(stderr, "no kyverno ImageValidatingPolicies"); n != 1 {
			t.Errorf("without the CRDs, stderr says %d times that there are no ImageValidatingPolicies, want once:\n%s", n, stderr)
		}
		got, stderr := ivpClusterScan(t, ctx, kc, policies)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				im := got[c.im.ref]
				if im == nil {
					t.Fatalf("no result for %s:\n%s", c.im.ref, stderr)
				}
				checkIVP(t, c, im)
			})
		}
	})
}

// ivpCluster starts a kube-apiserver with a workload in namespace prod
// per image, each pulled as its digest.
func ivpCluster(t *testing.T, ctx context.Context, ims []admImage) *kubeapi.Cluster {
	t.Helper()
	kc, cs := startKube(t, ctx)
	namespaceWithSA(t, ctx, cs, "prod")
	for i, im := range ims {
		repo := strings.TrimSuffix(im.ref, ":v1")
		workload(t, ctx, cs, "prod", fmt.Sprintf("w%d", i), im.ref, "IfNotPresent", "node-a", repo+"@"+im.digest)
	}
	return kc
}

// ivpClusterScan installs Kyverno's policies.kyverno.io CRDs in kc,
// applies the policies and scans the cluster: the results by reference,
// and stderr.
func ivpClusterScan(t *testing.T, ctx context.Context, kc *kubeapi.Cluster, policies string) (map[string]*types.Image, string) {
	t.Helper()
	if err := kc.InstallPolicyCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(kc.Config)
	if err != nil {
		t.Fatal(err)
	}
	applyPolicies(t, ctx, dyn, policies)
	_, got, _, stderr := clusterScanErr(t, kubeconfigOf(t, kc))
	return got, stderr
}

// kubeconfigOf writes an admin kubeconfig for kc.
func kubeconfigOf(t *testing.T, kc *kubeapi.Cluster) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(p, "adm", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkIVP holds one image's result to its case.
func checkIVP(t *testing.T, c ivpCase, im *types.Image) {
	t.Helper()
	if im.Verdict != c.want {
		t.Fatalf("verdict %s, want %s: %+v", im.Verdict, c.want, im.Findings)
	}
	if c.code == "" {
		for _, f := range im.Findings {
			if f.Severity != types.SeverityInfo {
				t.Errorf("a finding beyond info: %+v", f)
			}
		}
		return
	}
	f := findingOf(im, c.code)
	if f == nil {
		t.Fatalf("no %s finding: %+v", c.code, im.Findings)
	}
	if !strings.Contains(f.Message, "ImageValidatingPolicy ivp-") {
		t.Errorf("the finding does not name the policy: %s", f.Message)
	}
	t.Logf("%s: %s", c.code, f.Message)
}
