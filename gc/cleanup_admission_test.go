package gc_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/cleanup"
	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// sigTagCleanup deletes every cosign .sig tag, as GitLab's default
// name_regex .* does: the signature manifests stay, untagged.
type sigTagCleanup struct{}

func (sigTagCleanup) Name() string        { return "sig-tag cleanup" }
func (sigTagCleanup) Source() string      { return "cleanup_admission_test.go" }
func (sigTagCleanup) Applies(string) bool { return true }
func (sigTagCleanup) Run(r *cleanup.Repository, _ time.Time) cleanup.Plan {
	var p cleanup.Plan
	for _, t := range r.SortedTags() {
		if strings.HasSuffix(t, ".sig") {
			p.Tags = append(p.Tags, cleanup.TagDeletion{Tag: t, Digest: r.Tags[t].Digest, Rule: cleanup.Rule{Rule: "name_regex .*", Keep: "add " + t + " to name_regex_keep"}})
		}
	}
	return p
}

// TestCheckCleanupPolicies: a cleanup that deletes the .sig tag of an
// in-use image breaks it under an enforcing policy requiring the cosign
// signature (signature-missing, with the cleanup's fix), makes it at-risk
// under an auditing one, and without a policy lists the loss only.
func TestCheckCleanupPolicies(t *testing.T) {
	bin, err := registry.Binary(registry.V3)
	bins.Require(t, err, "registry")
	ctx := context.Background()
	reg, err := registry.Start(ctx, bin, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	repo, _ := name.NewRepository(reg.Host()+"/app", name.Insecure)
	cur, err := fixture.PushSingle(ctx, repo.Tag("v1").String(), "current")
	if err != nil {
		t.Fatal(err)
	}
	sig := putArtifact(t, repo.Tag(strings.Replace(cur, ":", "-", 1)+".sig"), "", "", "legacy sig of current", nil)
	targets := []types.Target{{Ref: repo.Tag("v1").String(), Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "prod", Name: "web"}}}}
	policy := func(action string) *admission.Policies {
		return policiesOf(t, strings.NewReplacer("HOST", reg.Host(), "TYPE", "Cosign", "ACTION", action).Replace(bundlePolicy))
	}
	for _, tt := range []struct {
		name     string
		policies *admission.Policies
		want     types.Verdict // "" for no entry
	}{
		{"no policy", nil, ""},
		{"enforced", policy("Enforce"), types.Broken},
		{"audited", policy("Audit"), types.AtRisk},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := scan.New()
			if err != nil {
				t.Fatal(err)
			}
			rep, err := gc.CheckCleanup(ctx, sc, gc.CleanupOptions{Policies: []cleanup.Policy{sigTagCleanup{}}, At: time.Now(), Runs: 1, Admission: tt.policies}, targets)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.WouldLoseArtifacts) != 1 || rep.WouldLoseArtifacts[0].Digest != sig || !strings.Contains(rep.WouldLoseArtifacts[0].Reason, "name_regex .*") {
				t.Errorf("artifacts lost %+v, want the .sig manifest %s, by the rule", rep.WouldLoseArtifacts, sig)
			}
			if tt.want == "" {
				if len(rep.WouldBreak) > 0 {
					t.Errorf("would break %+v, want nothing", rep.WouldBreak)
				}
				return
			}
			if len(rep.WouldBreak) != 1 {
				t.Fatalf("would break %+v, want %s", rep.WouldBreak, repo.Tag("v1"))
			}
			e := rep.WouldBreak[0]
			codes := []types.Code{}
			for _, l := range e.Losses {
				codes = append(codes, l.Code)
			}
			if e.Verdict != tt.want || !slices.Equal(codes, []types.Code{types.SignatureMissing}) || !strings.Contains(e.Advice, "name_regex_keep") {
				t.Errorf("entry %+v", e)
			}
		})
	}
}
