package artifacts

import (
	"context"

	"github.com/regcheck/regcheck/types"
)

// walkArtifact walks an artifact's manifest to its blobs with the one
// walker and says whether it is whole: its manifest and every blob it
// lists are served. Its Findings are the walk's (blob-missing,
// manifest-missing, faults).
func (l *look) walkArtifact(ctx context.Context, a *Artifact) {
	got := l.w.Walk(ctx, l.repo.Digest(a.Digest))
	a.Findings = append(a.Findings, got.Findings...)
	a.Whole = wholeBy(a.Findings)
}

// wholeBy reports whether findings leave an artifact whole: none says a
// piece is absent or wrong, none is a fault that hid one.
func wholeBy(findings []types.Finding) bool {
	for _, f := range findings {
		if notWhole(f.Code) {
			return false
		}
	}
	return true
}

// notWhole reports whether a finding's code means the artifact cannot be
// taken as there: an absence, a mismatch, or a fault.
func notWhole(c types.Code) bool {
	switch c {
	case types.TagMissing, types.ManifestMissing, types.ChildMissing, types.BlobMissing,
		types.AttestationMissing, types.DigestMismatch, types.UnsupportedMedia:
		return true
	}
	return c.Fault()
}
