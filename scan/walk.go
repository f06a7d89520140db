package scan

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// remote is the registry as a walk.Reader: the client's requests, with
// their retries, counting and memory.
type remote struct{ c *client }

var _ walk.Reader = remote{}

// Resolve HEADs the tag (see client.resolve).
func (r remote) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	return r.c.resolve(ctx, repo.Tag(tag))
}

// Manifest GETs and checks a manifest (see client.manifest).
func (r remote) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	return r.c.manifest(ctx, repo, digest)
}

// Blob HEADs a blob (see client.blob).
func (r remote) Blob(ctx context.Context, repo name.Repository, digest string) error {
	return r.c.blob(ctx, repo, digest)
}

// walkImage walks one parsed reference into im.
func (s *Scanner) walkImage(ctx context.Context, ref name.Reference, im *types.Image) {
	w, log := s.walker, (*answerLog)(nil)
	if s.path != nil {
		var r walk.Reader
		r, log = s.path.forImage()
		w = s.walker.With(r)
	}
	got := w.Walk(ctx, ref)
	im.Digest, im.MediaType = got.Digest, got.MediaType
	im.Findings = append(im.Findings, got.Findings...)
	im.Manifests, im.Blobs, im.Tree = got.Manifests, got.Blobs, got.Tree
	if s.path != nil {
		im.Findings = append(im.Findings, s.pathFindings(ctx, ref, im, log)...)
	}
	im.Verdict = types.VerdictOf(im.Findings)
}
