package gc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// artifactSuffixes are the tags an artifact of a subject sha256:<hex> is
// kept under: cosign's and the referrers tag schema's.
var artifactSuffixes = []string{".sig", ".att", ".sbom", ""}

// storageSource is a view of a registry's storage as the artifact finder
// reads a registry: its tags as tags/list lists them, no referrers API
// (distribution serves none), and manifests' bytes for their annotations.
type storageSource struct {
	walk.Reader
	s *storage.Storage
	v storage.Version
}

func newStorageSource(s *storage.Storage, v storage.Version) storageSource {
	return storageSource{Reader: s.Reader(v), s: s, v: v}
}

// Tags lists the repository's tag directories.
func (ss storageSource) Tags(_ context.Context, repo name.Repository) ([]string, error) {
	r := ss.s.Repositories[repo.RepositoryStr()]
	if r == nil {
		return nil, fmt.Errorf("repository %s is not in the storage: %w", repo.RepositoryStr(), types.ErrNotFound)
	}
	return append([]string(nil), r.TagOrder...), nil
}

// Referrers: distribution's storage serves no referrers API.
func (storageSource) Referrers(_ context.Context, repo name.Repository, subject, _ string) ([]ocispec.Descriptor, error) {
	return nil, fmt.Errorf("referrers of %s@%s: distribution: %w", repo.RepositoryStr(), subject, scan.ErrReferrersUnsupported)
}

// RawManifest reads the data of a manifest the view serves.
func (ss storageSource) RawManifest(ctx context.Context, repo name.Repository, digest string) ([]byte, string, error) {
	if _, err := ss.Manifest(ctx, repo, digest); err != nil {
		return nil, "", err
	}
	r := ss.s.Repositories[repo.RepositoryStr()]
	target, _ := ss.s.LinkedManifest(r, digest, ss.v)
	alg, hex, _ := strings.Cut(target, ":")
	if len(hex) < 2 {
		return nil, "", fmt.Errorf("manifest %s links an invalid digest %q", digest, target)
	}
	b, err := os.ReadFile(filepath.Join(ss.s.Root, "blobs", alg, hex[:2], hex, "data"))
	if err != nil {
		return nil, "", fmt.Errorf("reading manifest %s: %w", digest, err)
	}
	return b, "", nil
}

// HasManifest says whether the view serves the manifest.
func (ss storageSource) HasManifest(ctx context.Context, repo name.Repository, digest string) error {
	_, err := ss.Manifest(ctx, repo, digest)
	return err
}

// artifactSets are the artifacts of one in-use image (subject, as the
// walk resolved it) in the storage now and after the run.
type artifactSets struct {
	was, is artifacts.Set
}

// findArtifacts finds the artifacts of one in-use image now and after the
// run. A search that faults before the run returns an error: the
// prediction is incomplete for the image.
func findArtifacts(ctx context.Context, now, after artifacts.Source, im InUse, subject string) (artifactSets, error) {
	repo := im.ref.Context()
	was, err := artifacts.NewSourceFinder(now).Find(ctx, repo, subject)
	if err != nil {
		return artifactSets{}, err
	}
	if len(was.Faults) > 0 {
		return artifactSets{}, fmt.Errorf("finding the artifacts of %s: %s", im.Reference, was.Faults[0].Message)
	}
	is, err := artifacts.NewSourceFinder(after).Find(ctx, repo, subject)
	if err != nil {
		return artifactSets{}, err
	}
	return artifactSets{was: was, is: is}, nil
}

// losses are the artifacts whole now and not after the run.
func (sets artifactSets) losses(im InUse) []gcresult.ArtifactLoss {
	was, is := sets.was, sets.is
	kept := map[string]artifacts.Artifact{}
	for _, a := range is.Artifacts {
		kept[artifactKey(a)] = a
	}
	var out []gcresult.ArtifactLoss
	for _, a := range was.Artifacts {
		if !a.Whole {
			continue
		}
		b, ok := kept[artifactKey(a)]
		if ok && b.Whole {
			continue
		}
		out = append(out, gcresult.ArtifactLoss{Reference: im.Reference, Subject: a.Subject, Platform: a.Platform, Kind: string(a.Kind), Layout: string(a.Layout),
			Ref: a.Ref, Digest: a.Digest, PredicateTypes: a.PredicateTypes, Reason: lossReason(b, ok)})
	}
	return out
}

// artifactKey names an artifact across the two views.
func artifactKey(a artifacts.Artifact) string {
	return strings.Join([]string{string(a.Layout), a.Subject, a.Ref, a.Digest}, " ")
}

// lossReason says what the run leaves of an artifact.
func lossReason(after artifacts.Artifact, listed bool) string {
	if !listed {
		return "the run deletes it: no tag names it, and no tagged manifest lists it"
	}
	for _, f := range after.Findings {
		return "after the run: " + f.Message
	}
	return "not whole after the run"
}

// orphans lists the artifact tags whose subject the plan deletes.
func orphans(s *storage.Storage, p *Plan) []gcresult.OrphanedArtifact {
	out := []gcresult.OrphanedArtifact{}
	for _, m := range p.Manifests {
		r := s.Repositories[m.Repository]
		if r == nil {
			continue
		}
		for _, suffix := range artifactSuffixes {
			tag := scan.ReferrersTag(m.Digest) + suffix
			if t := r.Tags[tag]; t != nil && t.Current != "" {
				out = append(out, gcresult.OrphanedArtifact{Repository: m.Repository, Tag: tag, Subject: m.Digest})
			}
		}
	}
	return out
}
