//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// cipAuthoritiesPolicy is a ClusterImagePolicy NAME on HOST/REPO* whose
// AUTHORITIES are key authorities without ctlog (the log is ignored) in
// the legacy format (the default).
const cipAuthoritiesPolicy = `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata:
  name: NAME
spec:
  images:
    - glob: "HOST/REPO*"
  authorities:
AUTHORITIES---
`

// includeDefault opts the namespace the scanned Deployment is in to
// policy-controller's checks.
const includeDefault = `apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels:
    policy.sigstore.dev/include: "true"
`

// cipSpec is one ClusterImagePolicy of a case: its name and its
// authorities' keys, one key authority each.
type cipSpec struct {
	name string
	keys []*cosign.Cosign
}

// cipAuthorities writes the policies for host/repo.
func cipAuthorities(t *testing.T, host, repo string, specs []cipSpec) string {
	t.Helper()
	var b strings.Builder
	for _, s := range specs {
		var auths strings.Builder
		for i, k := range s.keys {
			fmt.Fprintf(&auths, "    - name: key-%d\n      key:\n        data: \"%s\"\n", i, pubYAML(t, k))
		}
		b.WriteString(strings.NewReplacer("NAME", s.name, "HOST", host, "REPO", repo, "AUTHORITIES", auths.String()).Replace(cipAuthoritiesPolicy))
	}
	return b.String() + includeDefault
}

// TestPolicyControllerAuthorities holds regcheck to policy-controller's
// rule (pkg/webhook/validator.go: validatePolicies requires every
// ClusterImagePolicy that matches the image; ValidatePolicy passes a
// policy when any one of its authorities passes), with the real cosign
// v3.1.3 as the ground truth of each authority: one cosign verify --key K
// --insecure-ignore-tlog --new-bundle-format=false per authority, combined
// by that rule (AND over the policies of OR over their authorities).
// Verified = ok; not = broken, signature-refused naming each failing
// policy and no passing one.
func TestPolicyControllerAuthorities(t *testing.T) {
	ctx := context.Background()
	a, b, c := newCosign(t), newCosign(t), newCosign(t)
	r := startEmpty(t, registry.V3)
	host := r.Host()
	both := pushAndSign(t, a, host, "pcboth")
	if err := b.Sign(ctx, host+"/pcboth@"+both.digest, cosign.Legacy, false); err != nil {
		t.Fatal(err)
	}
	twoPolicies := []cipSpec{{"signed-by-a", []*cosign.Cosign{a}}, {"signed-by-b", []*cosign.Cosign{b}}}
	anyOf := []cipSpec{{"signed-by-a-or-b", []*cosign.Cosign{a, b}}}
	for _, tt := range []struct {
		name     string
		im       admImage
		policies []cipSpec
		want     types.Verdict
		failing  []string // the policies that refuse
	}{
		{"two policies, signed for both", both, twoPolicies, types.OK, nil},
		{"two policies, signed for one only", pushAndSign(t, a, host, "pcone"), twoPolicies, types.Broken, []string{"signed-by-b"}},
		{"one policy, two authorities, signed by the second", pushAndSign(t, b, host, "pceither"), anyOf, types.OK, nil},
		{"one policy, two authorities, signed by the first", pushAndSign(t, a, host, "pcfirst"), anyOf, types.OK, nil},
		{"one policy, two authorities, signed by neither", pushAndSign(t, c, host, "pcneither"), anyOf, types.Broken, []string{"signed-by-a-or-b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := strings.SplitN(strings.TrimPrefix(tt.im.ref, host+"/"), ":", 2)[0]
			ref := host + "/" + repo + "@" + tt.im.digest
			cosignFailing := cosignPolicies(t, ctx, ref, tt.policies)
			if strings.Join(cosignFailing, ",") != strings.Join(tt.failing, ",") {
				t.Fatalf("by cosign, the policies that refuse are %v, want %v (the fixture is not what the case says)", cosignFailing, tt.failing)
			}
			got := scanWithPolicy(t, tt.im.ref, cipAuthorities(t, host, repo, tt.policies))
			t.Logf("regcheck %s %v; cosign: policies refusing %v", got.Verdict, codesOf(got), cosignFailing)
			if got.Verdict != tt.want {
				t.Fatalf("regcheck: verdict %s, want %s: %+v", got.Verdict, tt.want, got.Findings)
			}
			for _, p := range tt.policies {
				named := findingNaming(got, "ClusterImagePolicy "+p.name+" (enforce)")
				fails := slices.Contains(tt.failing, p.name)
				switch {
				case fails && (named == nil || named.Code != types.SignatureRefused):
					t.Errorf("no signature-refused finding names the failing policy %s: %+v", p.name, got.Findings)
				case !fails && named != nil:
					t.Errorf("a finding names %s, which cosign passes: %+v", p.name, *named)
				}
			}
		})
	}
}

// cosignPolicies runs cosign verify once per authority (its key, the log
// ignored, the legacy format, as policy-controller verifies a key
// authority without ctlog) and returns the policies none of whose
// authorities passes.
func cosignPolicies(t *testing.T, ctx context.Context, ref string, policies []cipSpec) []string {
	t.Helper()
	var failing []string
	for _, p := range policies {
		pass := false
		for _, k := range p.keys {
			ok, out, err := k.VerifyKey(ctx, ref, k.Pub, cosign.Legacy, true, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("cosign verify --key %s's key: passed=%v %s", p.name, ok, lastLines(out, 1))
			pass = pass || ok
		}
		if !pass {
			failing = append(failing, p.name)
		}
	}
	return failing
}

// findingNaming is the image's first finding whose message holds s.
func findingNaming(im *types.Image, s string) *types.Finding {
	for i := range im.Findings {
		if strings.Contains(im.Findings[i].Message, s) {
			return &im.Findings[i]
		}
	}
	return nil
}
