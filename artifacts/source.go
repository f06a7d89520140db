package artifacts

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/walk"
)

// Source is what a Finder reads: a registry (or a store that stands for
// one) as a walk.Reader, with its tag list and its referrers API. A
// Source that also implements walk.RawReader lets the Finder read a
// referrer's annotations when the list that named it carried none.
type Source interface {
	walk.Reader
	// Tags lists every tag of the repository.
	Tags(ctx context.Context, repo name.Repository) ([]string, error)
	// Referrers lists the subject's referrers through the OCI 1.1 API,
	// or returns an error wrapping scan.ErrReferrersUnsupported where the
	// store serves none (then the referrers tag is read).
	Referrers(ctx context.Context, repo name.Repository, subject, artifactType string) ([]ocispec.Descriptor, error)
}

// scanner is a Scanner as a Source: its reader, tag lists and referrers.
type scanner struct {
	walk.Reader
	s *scan.Scanner
}

func (sc scanner) Tags(ctx context.Context, repo name.Repository) ([]string, error) {
	return sc.s.RepositoryTags(ctx, repo)
}

func (sc scanner) Referrers(ctx context.Context, repo name.Repository, subject, artifactType string) ([]ocispec.Descriptor, error) {
	return sc.s.Referrers(ctx, repo, subject, artifactType)
}
