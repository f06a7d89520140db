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

// TestVerifyRepositoryMatchesCosign holds regcheck to cosign verify v3.1.3
// for signatures kept in another repository (cosign's COSIGN_REPOSITORY):
// a Kyverno rule's repository (and an attestor entry's), and a
// policy-controller authority's source.oci, read them there, as each
// engine does (ociremote.WithTargetRepository); a policy that names no
// repository looks beside the image and finds none, as cosign verify
// without COSIGN_REPOSITORY does. Before, every image under a policy with
// repository: was broken.
func TestVerifyRepositoryMatchesCosign(t *testing.T) {
	ctx := context.Background()
	a, b := newCosign(t), newCosign(t)
	host := startEmpty(t, registry.V3).Host()
	sigs := host + "/signatures"
	ref := host + "/vrepo:v1"
	digest := pushSingle(t, ref, "signed into another repository")
	if err := a.SignIn(ctx, host+"/vrepo@"+digest, sigs); err != nil {
		t.Fatal(err)
	}
	rule := "          repository: " + sigs + "\n"
	entry := "                - repository: " + sigs + "\n                  keys:\n"
	kyverno := func(pub, ruleRepo, entryRepo string) string {
		p := strings.NewReplacer("HOST", host, "REPO", "vrepo", "PEM", indentPEM(t, pub, 22), "REKOR", ignoreTlogBlock).Replace(kyvernoKeyPolicy)
		p = strings.Replace(p, "          failureAction: Enforce\n", "          failureAction: Enforce\n"+ruleRepo, 1)
		if entryRepo != "" {
			p = strings.Replace(p, "                - keys:\n", entryRepo, 1)
		}
		return p
	}
	cip := func(pub, src string) string {
		p := strings.NewReplacer("HOST", host, "REPO", "vrepo", "PEM", indentPEM(t, pub, 10)).Replace(cipKeyPolicy)
		if src != "" {
			p = strings.Replace(p, "    - key:\n", "    - source:\n        - oci: "+src+"\n      key:\n", 1)
		}
		return p
	}
	for _, tt := range []struct {
		name, policy string
		pub, in      string // the key and the COSIGN_REPOSITORY cosign verifies with
		want         types.Verdict
		code         types.Code
		cosignOK     bool
	}{
		{"Kyverno repository", kyverno(a.Pub, rule, ""), a.Pub, sigs, types.OK, "", true},
		{"Kyverno attestor entry repository", kyverno(a.Pub, "", entry), a.Pub, sigs, types.OK, "", true},
		{"Kyverno repository, wrong key", kyverno(b.Pub, rule, ""), b.Pub, sigs, types.Broken, types.SignatureRefused, false},
		{"Kyverno without repository", kyverno(a.Pub, "", ""), a.Pub, "", types.Broken, types.SignatureMissing, false},
		{"policy-controller source.oci", cip(a.Pub, sigs), a.Pub, sigs, types.OK, "", true},
		{"policy-controller without source", cip(a.Pub, ""), a.Pub, "", types.Broken, types.SignatureMissing, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := scanWithPolicy(t, ref, tt.policy)
			ok, out, err := a.VerifyKeyIn(ctx, host+"/vrepo@"+digest, tt.in, tt.pub, cosign.Legacy, true, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("regcheck %s; cosign verify (COSIGN_REPOSITORY=%q) passed=%v: %s", got.Verdict, tt.in, ok, lastLines(out, 1))
			if ok != tt.cosignOK {
				t.Fatalf("cosign verify passed=%v, want %v (the fixture is not what the case says):\n%s", ok, tt.cosignOK, lastLines(out, 5))
			}
			if got.Verdict != tt.want || (tt.code != "" && findingOf(got, tt.code) == nil) {
				t.Fatalf("regcheck: verdict %s, want %s with %s:\n%+v\npolicy:\n%s", got.Verdict, tt.want, tt.code, got.Findings, tt.policy)
			}
		})
	}
}
