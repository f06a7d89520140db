package gc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

// bundlePolicy is a Kyverno ClusterPolicy requiring a sigstore bundle
// signature of HOST/app images, with failure action ACTION.
const bundlePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-bundle
spec:
  rules:
    - name: verify
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/app:*"]
          type: TYPE
          failureAction: ACTION
          attestors:
            - entries:
                - keys:
                    publicKeys: "cosign.pub"
`

// policiesOf reads one policy document as -f would.
func policiesOf(t *testing.T, doc string) *admission.Policies {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, problems := admission.ReadFiles([]string{p})
	if len(problems) > 0 || len(ps.Rules) != 1 {
		t.Fatalf("reading the policy: %d rules, problems %+v", len(ps.Rules), problems)
	}
	return ps
}

// TestCheckPolicies: distribution 2.8's --delete-untagged deletes the
// bundle referrer that signs an in-use image. With an enforcing policy
// that requires a bundle, the run breaks the image (admission refuses
// its next pod); with an auditing one it is at-risk; with a policy that
// reads the .sig tag the run keeps, or with no policy, nothing breaks and
// the loss stays information.
func TestCheckPolicies(t *testing.T) {
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
	putArtifact(t, repo.Tag(strings.Replace(cur, ":", "-", 1)+".sig"), "", "", "legacy sig of current", nil)
	bundle := putArtifact(t, repo.Digest(cur), "application/vnd.dev.sigstore.bundle.v0.3+json", cur, "bundle of current",
		map[string]string{"dev.sigstore.bundle.content": "message-signature", "dev.sigstore.bundle.predicateType": "https://sigstore.dev/cosign/sign/v1"})
	if err := reg.Stop(); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(reg.Root)
	if err != nil {
		t.Fatal(err)
	}
	use := types.Use{Source: "cluster", Kind: "Deployment", Namespace: "prod", Name: "web"}
	targets := []types.Target{{Ref: repo.Tag("v1").String(), Uses: []types.Use{use}}}
	policy := func(typ, action string) *admission.Policies {
		return policiesOf(t, strings.NewReplacer("HOST", reg.Host(), "TYPE", typ, "ACTION", action).Replace(bundlePolicy))
	}
	for _, tt := range []struct {
		name     string
		policies *admission.Policies
		du       bool
		want     types.Verdict // "" for no entry
	}{
		{"no policy", nil, true, ""},
		{"enforced bundle", policy("SigstoreBundle", "Enforce"), true, types.Broken},
		{"audited bundle", policy("SigstoreBundle", "Audit"), true, types.AtRisk},
		{"enforced .sig tag, kept", policy("Cosign", "Enforce"), true, ""},
		{"enforced bundle, run keeps it", policy("SigstoreBundle", "Enforce"), false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, _, err := gc.Check(st, gc.Options{Model: gcresult.Distribution28, DeleteUntagged: tt.du, Policies: tt.policies}, targets)
			if err != nil {
				t.Fatal(err)
			}
			if tt.du && len(rep.WouldLoseArtifacts) != 1 {
				t.Errorf("artifacts lost %+v, want the bundle %s", rep.WouldLoseArtifacts, bundle)
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
			if e.Verdict != tt.want || e.Digest != cur || len(e.Losses) != 1 || e.Losses[0].Code != types.SignatureMissing ||
				e.Losses[0].Digest != bundle || len(e.Lost) != 1 || e.Lost[0] != bundle ||
				!strings.Contains(e.Reason, "require-bundle") || !strings.Contains(e.Advice, "cosign sign") {
				t.Errorf("entry %+v", e)
			}
		})
	}
}
