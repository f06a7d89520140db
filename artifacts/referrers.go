package artifacts

import (
	"context"
	"errors"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// MaxReferrers is how many referrers of one subject regcheck reads, from
// the referrers API or the referrers tag's index, in the order listed:
// real subjects have a few (a signature, an SBOM, attestations), and each
// referrer costs requests (its manifest, its blobs). Past it, a
// limit-exceeded finding says how many were left out, as for an index's
// children (walk.MaxChildren); the artifacts among them are unknown.
const MaxReferrers = 1000

// capReferrers keeps the first MaxReferrers of descs, with a
// limit-exceeded fault when it leaves some out; from names the list.
func (l *look) capReferrers(sub subject, descs []ocispec.Descriptor, from string) []ocispec.Descriptor {
	if len(descs) <= MaxReferrers {
		return descs
	}
	f := types.NewFinding(types.LimitExceeded, sub.Digest, sub.Platform,
		"%s lists %d referrers of %s, more than the %d regcheck reads (artifacts.MaxReferrers): the last %d were not checked",
		from, len(descs), sub.Digest, MaxReferrers, len(descs)-MaxReferrers)
	l.mu.Lock()
	l.set.Faults = append(l.set.Faults, f)
	l.mu.Unlock()
	return descs[:MaxReferrers]
}

// referrers finds the subject's OCI 1.1 referrers: through the API, or,
// where the registry does not serve it, under the referrers tag. When the
// API could not be asked (a fault), the referrers tag is read too: a
// whole artifact there is still found, and the fault keeps what is not
// found unknown, never missing.
func (l *look) referrers(ctx context.Context, sub subject) {
	if l.noAPI.Load() {
		l.referrersTag(ctx, sub)
		return
	}
	descs, err := l.src.Referrers(ctx, l.repo, sub.Digest, "")
	switch {
	case errors.Is(err, scan.ErrReferrersUnsupported):
		l.noAPI.Store(true)
		l.referrersTag(ctx, sub)
		return
	case err != nil:
		l.fault(err, sub.Digest, sub.Platform, "asking the referrers API")
		l.referrersTag(ctx, sub)
		return
	}
	for _, d := range l.capReferrers(sub, descs, "the referrers API") {
		l.referrer(ctx, sub, d, ReferrersAPI)
	}
}

// referrersTag reads the referrers tag schema's index of the subject.
func (l *look) referrersTag(ctx context.Context, sub subject) {
	tag := scan.ReferrersTag(sub.Digest)
	ref := l.repo.Name() + ":" + tag
	d, dangling, ok := l.resolveTag(ctx, sub, tag)
	switch {
	case dangling:
		l.add(Artifact{Kind: Other, Layout: ReferrersTag, Subject: sub.Digest, Platform: sub.Platform, Ref: ref,
			Findings: []types.Finding{l.danglingFinding(sub, tag)}})
		return
	case !ok:
		return
	}
	m, err := l.r.Manifest(ctx, l.repo, d)
	switch {
	case errors.Is(err, types.ErrNotFound):
		l.add(Artifact{Kind: Other, Layout: ReferrersTag, Subject: sub.Digest, Platform: sub.Platform, Ref: ref, Digest: d,
			Findings: []types.Finding{types.NewFinding(types.ManifestMissing, d, sub.Platform,
				"the referrers tag %s points at index %s, which the registry no longer serves", ref, d)}})
		return
	case err != nil:
		l.fault(err, sub.Digest, sub.Platform, "reading the referrers index %s@%s", l.repo.Name(), d)
		return
	case !m.IsIndex():
		l.fault(errors.New("not an image index"), sub.Digest, sub.Platform, "the referrers tag %s points at a %s", ref, m.MediaType)
		return
	}
	for _, c := range l.capReferrers(sub, m.Manifests, "the referrers tag "+ref) {
		l.referrer(ctx, sub, c, ReferrersTag)
	}
}

// referrer keeps one referrer the API or the referrers index lists,
// walked to its blobs.
func (l *look) referrer(ctx context.Context, sub subject, d ocispec.Descriptor, layout Layout) {
	a := Artifact{Layout: layout, Subject: sub.Digest, Platform: sub.Platform,
		Ref: l.repo.Name() + "@" + d.Digest.String(), Digest: d.Digest.String(), ArtifactType: d.ArtifactType}
	a.Kind, a.PredicateTypes = classify(d)
	if a.Kind == Other || unannotatedBundle(d) {
		// The list did not say enough (cosign's referrers tag index
		// carries no annotations): ask the manifest.
		var err error
		if d, err = l.describe(ctx, d); err != nil && types.FaultCode(err) != "" {
			// What the referrer is could not be read: any requirement of
			// the subject is unknown, with this cause.
			l.fault(err, sub.Digest, sub.Platform, "classifying a referrer of %s", types.ShortDigest(sub.Digest))
		}
		a.ArtifactType = d.ArtifactType
		a.Kind, a.PredicateTypes = classify(d)
	}
	l.walkArtifact(ctx, &a)
	if a.Kind == Attestation && len(a.PredicateTypes) == 0 {
		a.PredicateTypes = l.layerPredicateTypes(ctx, a.Digest)
	}
	l.add(a)
}
