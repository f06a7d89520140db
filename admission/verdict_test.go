package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

const (
	imgDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	sigDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// fakeFinder returns one Set (or error) for every subject, and counts calls.
type fakeFinder struct {
	set   artifacts.Set
	err   error
	calls int
}

func (f *fakeFinder) Find(_ context.Context, _ name.Repository, subject string) (artifacts.Set, error) {
	f.calls++
	s := f.set
	s.Image = subject
	return s, f.err
}

func sig(layout artifacts.Layout, whole bool, findings ...types.Finding) artifacts.Artifact {
	return artifacts.Artifact{Kind: artifacts.Signature, Layout: layout, Subject: imgDigest, Ref: "registry.example.com/team/web:sha256-1111.sig",
		Digest: sigDigest, Whole: whole, Findings: findings}
}

func att(pred string, whole bool) artifacts.Artifact {
	return artifacts.Artifact{Kind: artifacts.Attestation, Layout: artifacts.ReferrersAPI, Subject: imgDigest, Ref: "registry.example.com/team/web@" + sigDigest,
		Digest: sigDigest, PredicateTypes: []string{pred}, Whole: whole}
}

var (
	blobGone = types.NewFinding(types.BlobMissing, "sha256:33", "", "the signature layer is gone")
	fault5xx = types.NewFinding(types.RegistryFault, "", "", "GET referrers: 503")
	slsa     = "https://slsa.dev/provenance/v1"
	spdx     = "https://spdx.dev/Document"
)

func TestApply(t *testing.T) {
	ps := readTestPolicies(t)
	ps.LabelsKnown = true
	ps.Labels["dev"] = map[string]string{}
	devUse := types.Use{Source: "cluster", Kind: "Deployment", Namespace: "dev", Name: "web"}
	shopUse := types.Use{Source: "cluster", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, c := range []struct {
		name      string
		image     string
		uses      []types.Use
		set       artifacts.Set
		err       error
		want      types.Verdict
		codes     string // code/severity of the findings added, in order
		mentions  string // a finding's message must say this
		wantCalls int
	}{
		{name: "enforce, signature tag gone", image: "registry.example.com/team/web:v1", uses: []types.Use{devUse},
			want: types.Broken, codes: "signature-missing/critical", mentions: "kyverno ClusterPolicy check-signed, rule verify-signature (Enforce) (testdata/policies.yaml:2) requires a signature", wantCalls: 1},
		{name: "enforce, signature layer gone", image: "registry.example.com/team/web:v1", uses: []types.Use{devUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, false, blobGone)}},
			want: types.Broken, codes: "signature-missing/critical", mentions: "is not whole (blob-missing: the signature layer is gone)", wantCalls: 1},
		{name: "enforce, signature whole", image: "registry.example.com/team/web:v1", uses: []types.Use{devUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true)}},
			want: types.OK, wantCalls: 1},
		{name: "Cosign type: a bundle does not stand for the .sig tag", image: "registry.example.com/team/web:v1", uses: []types.Use{devUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.ReferrersAPI, true)}},
			want: types.Broken, codes: "signature-missing/critical", wantCalls: 1},
		{name: "a fault hides the signature: unknown, never missing", image: "registry.example.com/team/web:v1", uses: []types.Use{devUse},
			set:  artifacts.Set{Faults: []types.Finding{fault5xx}},
			want: types.Unknown, codes: "registry-error/warning", mentions: "could not be asked: GET referrers: 503", wantCalls: 1},
		{name: "a fault walking the signature: unknown", image: "registry.example.com/team/web:v1", uses: []types.Use{devUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, false, types.NewFinding(types.RateLimited, "", "", "429"))}},
			want: types.Unknown, codes: "rate-limited/warning", wantCalls: 1},
		{name: "finder error: a fault", image: "registry.example.com/team/web:v1", uses: []types.Use{devUse},
			err: fmt.Errorf("asking: %w", types.ErrUnreachable), want: types.Unknown, codes: "unreachable/warning", wantCalls: 1},
		{name: "no policy applies: a broken signature is info", image: "ghcr.io/org/app:v1", uses: []types.Use{devUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, false, blobGone)}},
			want: types.OK, codes: "artifact-missing/info", mentions: "no policy read requires it", wantCalls: 1},
		{name: "no policy applies, a fault: nothing", image: "ghcr.io/org/app:v1", uses: []types.Use{devUse},
			set: artifacts.Set{Faults: []types.Finding{fault5xx}}, want: types.OK, wantCalls: 1},
		{name: "shop: enforce + audit + warn, all lacking", image: "registry.example.com/team/web:v1", uses: []types.Use{shopUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true)}},
			want: types.AtRisk, codes: "signed-attestation-missing/warning signed-attestation-missing/warning", mentions: "of predicate type " + slsa, wantCalls: 1},
		{name: "shop: attestations whole", image: "registry.example.com/team/web:v1", uses: []types.Use{shopUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true), att(slsa, true), att(spdx, true)}},
			want: types.OK, wantCalls: 1},
		{name: "shop: one attestation gone, another predicate whole", image: "registry.example.com/team/web:v1", uses: []types.Use{shopUse},
			set:  artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true), att(spdx, true)}},
			want: types.AtRisk, codes: "signed-attestation-missing/warning", mentions: "kyverno ClusterPolicy audit-provenance, rule provenance (Audit)", wantCalls: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeFinder{set: c.set, err: c.err}
			chk := &Checker{Policies: ps, Finder: f, Parse: scan.ParseReference}
			im := &types.Image{Reference: c.image, Digest: imgDigest, Verdict: types.OK, Uses: c.uses}
			res := &types.Result{Images: []*types.Image{im, {Reference: "ghcr.io/org/gone:v1", Verdict: types.Broken}}}
			if err := chk.Apply(context.Background(), res); err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, fd := range im.Findings {
				codes = append(codes, fmt.Sprintf("%s/%s", fd.Code, fd.Severity))
			}
			if got := strings.Join(codes, " "); got != c.codes {
				t.Errorf("findings %s, want %s: %+v", got, c.codes, im.Findings)
			}
			if im.Verdict != c.want {
				t.Errorf("verdict %s, want %s", im.Verdict, c.want)
			}
			if c.mentions != "" && !strings.Contains(fmt.Sprint(im.Findings), c.mentions) {
				t.Errorf("no finding says %q: %+v", c.mentions, im.Findings)
			}
			if f.calls != c.wantCalls {
				t.Errorf("Find called %d times, want %d (an unresolved image is not looked at)", f.calls, c.wantCalls)
			}
		})
	}
}

// TestApplyAdvice: an enforced signature-missing says what to do and
// that the image itself is whole.
func TestApplyAdvice(t *testing.T) {
	ps := readTestPolicies(t)
	chk := &Checker{Policies: ps, Finder: &fakeFinder{}, Parse: scan.ParseReference}
	im := &types.Image{Reference: "registry.example.com/team/web:v1", Digest: imgDigest,
		Uses: []types.Use{{Source: "file", File: "k8s/web.yaml", Line: 12, Kind: "Deployment", Name: "web"}}}
	if err := chk.Apply(context.Background(), &types.Result{Images: []*types.Image{im}}); err != nil {
		t.Fatal(err)
	}
	if len(im.Findings) == 0 {
		t.Fatal("no finding")
	}
	f := im.Findings[0]
	if !strings.Contains(f.Advice, "the image itself is whole") || !strings.Contains(f.Message, "Deployment default/web") ||
		!strings.Contains(f.Message, "the pod will be refused") {
		t.Errorf("finding %+v: want the advice to re-sign, the use named, the refusal said", f)
	}
}

func TestApplyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	chk := &Checker{Policies: &Policies{}, Finder: &fakeFinder{}, Parse: scan.ParseReference}
	err := chk.Apply(ctx, &types.Result{Images: []*types.Image{{Reference: "a/b:c", Digest: imgDigest}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Apply = %v, want context.Canceled", err)
	}
}

// TestPresenceOfAlternatives: a rule met by any one of its alternatives
// (policy-controller's authorities, Kyverno's attestor sets) is present
// when one is met; else unknown when a fault may hide any one of them,
// whichever it is; missing only when every one is proven missing. An
// unknown rule gives fault findings (unknown), never a missing one.
func TestPresenceOfAlternatives(t *testing.T) {
	legacy := Needs{Signature: true, Format: Legacy}
	bundled := Needs{Signature: true, Format: Bundle}
	rateLimited := types.NewFinding(types.RateLimited, "", "", "429 reading the bundle")
	bundleHidden := sig(artifacts.ReferrersAPI, false, rateLimited) // a bundle whose walk faulted
	legacyHidden := sig(artifacts.CosignTag, false, rateLimited)
	for _, c := range []struct {
		name  string
		alts  []Needs
		set   artifacts.Set
		state artifacts.Presence
	}{
		{"first missing, second hidden by a fault", []Needs{legacy, bundled}, artifacts.Set{Artifacts: []artifacts.Artifact{bundleHidden}}, artifacts.Unknown},
		{"first hidden by a fault, second missing", []Needs{legacy, bundled}, artifacts.Set{Artifacts: []artifacts.Artifact{legacyHidden}}, artifacts.Unknown},
		{"first missing, second present", []Needs{legacy, bundled}, artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.ReferrersAPI, true)}}, artifacts.Present},
		{"both missing", []Needs{legacy, bundled}, artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, false, blobGone)}}, artifacts.Missing},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Rule{Engine: PolicyController, Kind: "ClusterImagePolicy", Name: "signed", Enforce: true, Alternatives: c.alts}
			c.set.Image = imgDigest
			sets := &repoSets{got: map[string]repoSet{"": {set: c.set}}}
			if got := r.presence(context.Background(), sets).state; got != c.state {
				t.Fatalf("presence %s, want %s", got, c.state)
			}
			ru := &ruleUses{rule: r, enforce: true}
			for _, f := range ru.verdict(context.Background(), sets, imgDigest) {
				if f.Code.Fault() != (c.state == artifacts.Unknown) {
					t.Errorf("finding %s (%s) for a rule %s", f.Code, f.Message, c.state)
				}
			}
		})
	}
}
