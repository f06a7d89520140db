package admission

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// repoFinder answers by repository: a whole signature in signed, none
// elsewhere, a fault in faulty; it records the repositories asked.
type repoFinder struct {
	signed, faulty string
	layout         artifacts.Layout // the signature's; "" is cosign's tag
	asked          []string
}

func (f *repoFinder) Find(_ context.Context, repo name.Repository, subject string) (artifacts.Set, error) {
	f.asked = append(f.asked, repo.String())
	switch repo.String() {
	case f.faulty:
		return artifacts.Set{}, fmt.Errorf("asking: %w", types.ErrUnreachable)
	case f.signed:
		return artifacts.Set{Image: subject, Artifacts: []artifacts.Artifact{sig(cmp.Or(f.layout, artifacts.CosignTag), true)}}, nil
	}
	return artifacts.Set{Image: subject}, nil
}

// repoVerifier verifies when it is asked to read the signatures in
// signed, and records where it read.
type repoVerifier struct {
	signed string
	read   []string
}

func (v *repoVerifier) VerifyLegacy(_ context.Context, _ name.Digest, sigs name.Repository, _ KeyEntry) Verdict {
	v.read = append(v.read, sigs.String())
	if sigs.String() == v.signed {
		return Verdict{Outcome: Verified}
	}
	return Verdict{Outcome: Refused, Reason: "no signatures found"}
}

// bundleRule is a Kyverno policy p of type SigstoreBundle.
func bundleRule(p string) string {
	return strings.Replace(p, "          attestors:", "          type: SigstoreBundle\n          attestors:", 1)
}

// TestSignaturesInAnotherRepository: a rule that keeps its signatures in
// another repository (Kyverno's repository, rule or attestor entry;
// policy-controller's source.oci) is judged there, for presence and for
// verification; a fault there is unknown, never missing.
func TestSignaturesInAnotherRepository(t *testing.T) {
	const sigs = "registry.example.com/signatures"
	a := testPEM("key A")
	entry := func(repo string) string {
		if repo == "" {
			return keyEntry(a, ignoreTlog)
		}
		return strings.Replace(keyEntry(a, ignoreTlog), "                - keys:\n", "                - repository: "+repo+"\n                  keys:\n", 1)
	}
	ruleRepo := func(p string) string {
		return strings.Replace(p, "        - imageReferences:", "        - repository: "+sigs+"\n          imageReferences:", 1)
	}
	cipSource := func(p string) string {
		return strings.Replace(p, "    - key:\n", "    - source:\n        - oci: "+sigs+"\n      key:\n", 1)
	}
	for _, c := range []struct {
		name, policy string
		faulty       string
		want         types.Verdict
		codes        string
		read         string // where the verifier read, in order
	}{
		{"kyverno rule repository", ruleRepo(kyvernoPolicy("Enforce", 0, entry(""))), "", types.OK, "", sigs},
		{"kyverno entry repository", kyvernoPolicy("Enforce", 0, entry(sigs)), "", types.OK, "", sigs},
		{"kyverno entries in two repositories, count 1", kyvernoPolicy("Enforce", 1, entry(sigs), entry("registry.example.com/other")), "", types.OK, "", sigs + " registry.example.com/other"},
		{"kyverno without repository: beside the image, none", kyvernoPolicy("Enforce", 0, entry("")), "", types.Broken, "signature-missing/critical", ""},
		{"kyverno repository that faults: unknown", ruleRepo(kyvernoPolicy("Enforce", 0, entry(""))), sigs, types.Unknown, "unreachable/warning", ""},
		// SigstoreBundle reads the image's own referrers, whatever
		// repository is named (fetchBundles: ref.Context()).
		{"kyverno SigstoreBundle, rule repository: read beside the image, none", bundleRule(ruleRepo(kyvernoPolicy("Enforce", 0, entry("")))), "", types.Broken, "signature-missing/critical", ""},
		{"kyverno SigstoreBundle, entry repository: read beside the image, none", bundleRule(kyvernoPolicy("Enforce", 0, entry(sigs))), "", types.Broken, "signature-missing/critical", ""},
		{"policy-controller source.oci", cipSource(cipPolicy(keyAuthority(a, false))), "", types.OK, "", sigs},
		{"policy-controller without source", cipPolicy(keyAuthority(a, false)), "", types.Broken, "signature-missing/critical", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readPolicy(t, c.policy)
			f := &repoFinder{signed: sigs, faulty: c.faulty}
			if strings.Contains(c.policy, "type: SigstoreBundle") {
				f.layout = artifacts.ReferrersAPI
			}
			v := &repoVerifier{signed: sigs}
			chk := &Checker{Policies: ps, Finder: f, Parse: scan.ParseReference, Verifier: v}
			im := applyDev(t, chk)
			var codes []string
			for _, fd := range im.Findings {
				codes = append(codes, fmt.Sprintf("%s/%s", fd.Code, fd.Severity))
			}
			if got := strings.Join(codes, " "); got != c.codes || im.Verdict != c.want {
				t.Errorf("verdict %s, findings %q; want %s, %q: %+v (asked %v)", im.Verdict, got, c.want, c.codes, im.Findings, f.asked)
			}
			if got := strings.Join(v.read, " "); got != c.read {
				t.Errorf("verified reading %q, want %q", got, c.read)
			}
		})
	}
}
