package artifacts

import (
	"context"

	"github.com/regcheck/regcheck/scan"
)

// cosignSuffixes are cosign's tag scheme: <alg>-<hex><suffix> holds the
// subject's artifacts of the kind.
var cosignSuffixes = []struct {
	suffix string
	kind   Kind
}{
	{".sig", Signature},
	{".att", Attestation},
	{".sbom", SBOM},
}

// cosignTags finds the subject's artifacts under cosign's tags.
func (l *look) cosignTags(ctx context.Context, sub subject) {
	for _, c := range cosignSuffixes {
		tag := scan.ReferrersTag(sub.Digest) + c.suffix
		a := Artifact{Kind: c.kind, Layout: CosignTag, Subject: sub.Digest, Platform: sub.Platform, Ref: l.repo.Name() + ":" + tag}
		d, dangling, ok := l.resolveTag(ctx, sub, tag)
		switch {
		case dangling:
			a.Findings = append(a.Findings, l.danglingFinding(sub, tag))
			l.add(a)
			continue
		case !ok:
			continue
		}
		a.Digest = d
		l.walkArtifact(ctx, &a)
		if a.Kind == Attestation {
			a.PredicateTypes = l.layerPredicateTypes(ctx, d)
		}
		l.add(a)
	}
}
