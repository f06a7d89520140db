package admission

import (
	"fmt"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// kyvernoDigestRequired reads whether a Kyverno ClusterPolicy or Policy
// verifyImages entry refuses an image written without a digest, as
// Kyverno 1.19 does: verifyDigest and mutateDigest both default to true
// (api/kyverno/v1/image_verification_types.go, +kubebuilder:default=true);
// with mutateDigest the mutating webhook has resolved the tag to
// tag@digest before validation, so only mutateDigest: false leaves the
// tag, and validateImage (pkg/engine/handlers/validation/validate_image.go)
// then fails "missing digest for IMAGE" under verifyDigest.
func kyvernoDigestRequired(vi map[string]any) bool {
	verify, mutate := true, true
	if v, ok := vi["verifyDigest"].(bool); ok {
		verify = v
	}
	if v, ok := vi["mutateDigest"].(bool); ok {
		mutate = v
	}
	return verify && !mutate
}

// digestRefusal says, for a rule that requires a digest
// (Rule.digestRequired), that the uses writing the image without one
// are refused before any signature is verified: broken under Enforce, a
// warning under Audit (act).
func (ru *ruleUses) digestRefusal(im *types.Image) []types.Finding {
	if !ru.rule.digestRequired {
		return nil
	}
	var tagged []types.Use
	var image string
	for _, u := range ru.uses {
		w := written(u, im.Reference)
		if r, err := imageref.Parse(w); err == nil && r.Digest == "" {
			tagged, image = append(tagged, u), w
		}
	}
	if len(tagged) == 0 {
		return nil
	}
	only := *ru
	only.uses = tagged
	msg := fmt.Sprintf("%s%s requires a digest in the image reference of %s (verifyDigest, true unless set false) and does not add one (mutateDigest: false); Kyverno refuses the pod before verifying any signature: \"missing digest for %s\"",
		ru.rule.named(), ru.overridden(), usesText(tagged), image)
	return []types.Finding{only.act(types.NewAdvisedFinding(types.SignatureRefused, im.Digest, "", msg,
		"pin the image to its digest in the workload (regcheck pin), or set mutateDigest: true (Enforce only) or verifyDigest: false in the policy"))}
}
