package gc

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// cleanedView is a registry as predicted cleanup runs leave it: removed
// tags and deleted manifests are not found, archived manifests answer as
// absent (as ECR's 404 until restored); the rest is read through. With no
// removals it is the registry as it is. It is an artifacts.Source, so that
// the signatures and attestations are looked for in both views alike.
type cleanedView struct {
	walk.Reader
	sc   *scan.Scanner
	gone map[string]*removal // repository name → what the runs remove
}

var _ artifacts.Source = cleanedView{}

// Resolve answers types.ErrNotFound for a removed tag.
func (v cleanedView) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	if g := v.gone[repo.Name()]; g != nil {
		if rm, ok := g.tags[tag]; ok {
			return walk.Descriptor{}, fmt.Errorf("tag %s would be deleted by %s (%s): %w", tag, rm.policy, rm.Rule.Rule, types.ErrNotFound)
		}
	}
	return v.Reader.Resolve(ctx, repo, tag)
}

// Manifest answers types.ErrNotFound for a deleted or archived manifest.
func (v cleanedView) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	if g := v.gone[repo.Name()]; g != nil {
		if rm, ok := g.manifests[digest]; ok {
			return walk.Manifest{}, fmt.Errorf("manifest %s would be deleted by %s (%s): %w", digest, rm.policy, rm.Rule.Rule, types.ErrNotFound)
		}
		if rm, ok := g.archived[digest]; ok {
			return walk.Manifest{}, fmt.Errorf("manifest %s would be archived by %s (%s): %w", digest, rm.policy, rm.Rule.Rule, types.ErrNotFound)
		}
	}
	return v.Reader.Manifest(ctx, repo, digest)
}

// Tags lists the repository's tags less the removed ones.
func (v cleanedView) Tags(ctx context.Context, repo name.Repository) ([]string, error) {
	tags, err := v.sc.RepositoryTags(ctx, repo)
	if err != nil {
		return nil, err
	}
	g := v.gone[repo.Name()]
	if g == nil {
		return tags, nil
	}
	return slices.DeleteFunc(slices.Clone(tags), func(t string) bool { _, ok := g.tags[t]; return ok }), nil
}

// Referrers lists the subject's referrers less the deleted and archived
// ones.
func (v cleanedView) Referrers(ctx context.Context, repo name.Repository, subject, artifactType string) ([]ocispec.Descriptor, error) {
	ds, err := v.sc.Referrers(ctx, repo, subject, artifactType)
	if err != nil {
		return nil, err
	}
	g := v.gone[repo.Name()]
	if g == nil {
		return ds, nil
	}
	return slices.DeleteFunc(slices.Clone(ds), func(d ocispec.Descriptor) bool {
		_, del := g.manifests[d.Digest.String()]
		_, arc := g.archived[d.Digest.String()]
		return del || arc
	}), nil
}
