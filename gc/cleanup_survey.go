package gc

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/cleanup"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// maxSurveyed bounds the manifests one repository's survey reads.
const maxSurveyed = 20000

// artifactTag is a tag cosign or the referrers tag schema keeps the
// artifacts of sha256:<hex> under.
var artifactTag = regexp.MustCompile(`^sha256-([0-9a-f]{64})(\.sig|\.att|\.sbom)?$`)

// surveyor reads one repository into a cleanup.Repository.
type surveyor struct {
	sc   *scan.Scanner
	rd   walk.Reader
	repo name.Repository

	mu  sync.Mutex
	out *cleanup.Repository
	// noReferrers: the registry does not serve the referrers API.
	noReferrers bool
}

// surveyRepository reads repo as a cleanup sees it: every tag and what it
// names, the manifests they and the pins reach through indexes (children
// with their platforms), and the referrers of each (the referrers API
// where served; cosign's and the referrers schema's sha256-<hex> tags
// always). A repository the registry does not know has no tags. Any
// other failure is the error: the repository is not examined.
func surveyRepository(ctx context.Context, sc *scan.Scanner, rd walk.Reader, repo name.Repository, pins []string) (*cleanup.Repository, error) {
	s := &surveyor{sc: sc, rd: rd, repo: repo, out: &cleanup.Repository{Name: repo.RepositoryStr(), Tags: map[string]*cleanup.Tag{}, Manifests: map[string]*cleanup.Manifest{}}}
	tags, err := sc.RepositoryTags(ctx, repo)
	if err != nil && !errors.Is(err, types.ErrNotFound) {
		return nil, fmt.Errorf("listing the tags of %s: %w", repo.Name(), err)
	}
	if err := s.resolveTags(ctx, tags); err != nil {
		return nil, err
	}
	var tops []string
	for _, t := range s.out.SortedTags() {
		tops = append(tops, s.out.Tags[t].Digest)
	}
	if err := s.visitAll(ctx, append(tops, pins...)); err != nil {
		return nil, err
	}
	if err := s.referrers(ctx); err != nil {
		return nil, err
	}
	s.artifactTags()
	return s.out, nil
}

// resolveTags resolves each tag, eight at a time; a tag that vanished
// meanwhile is not there.
func (s *surveyor) resolveTags(ctx context.Context, tags []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, t := range tags {
		g.Go(func() error {
			d, err := s.rd.Resolve(gctx, s.repo, t)
			switch {
			case errors.Is(err, types.ErrNotFound):
				return nil
			case err != nil:
				return fmt.Errorf("resolving %s:%s: %w", s.repo.Name(), t, err)
			}
			s.mu.Lock()
			s.out.Tags[t] = &cleanup.Tag{Name: t, Digest: d.Digest}
			s.mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// visitAll visits each digest, eight at a time.
func (s *surveyor) visitAll(ctx context.Context, digests []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, d := range digests {
		g.Go(func() error { return s.visit(gctx, d, "", 0) })
	}
	return g.Wait()
}

// visit reads manifest d (platform: as its parent index lists it) and, for
// an index, its children, as deep as a walk goes. A manifest the registry
// does not serve is not there.
func (s *surveyor) visit(ctx context.Context, d, platform string, depth int) error {
	s.mu.Lock()
	_, seen := s.out.Manifests[d]
	if !seen {
		if len(s.out.Manifests) >= maxSurveyed {
			s.mu.Unlock()
			return fmt.Errorf("%s holds more than %d manifests: not surveyed whole", s.repo.Name(), maxSurveyed)
		}
		s.out.Manifests[d] = &cleanup.Manifest{Digest: d, Platform: platform}
	}
	s.mu.Unlock()
	if seen {
		return nil
	}
	m, err := s.rd.Manifest(ctx, s.repo, d)
	switch {
	case errors.Is(err, types.ErrNotFound), errors.Is(err, types.ErrDigestMismatch):
		s.mu.Lock()
		delete(s.out.Manifests, d) // gone or damaged: the scan reports what is in use
		s.mu.Unlock()
		return nil
	case err != nil:
		return fmt.Errorf("fetching %s@%s: %w", s.repo.Name(), d, err)
	}
	s.mu.Lock()
	mf := s.out.Manifests[d]
	mf.MediaType = m.MediaType
	for _, c := range m.Manifests {
		mf.Children = append(mf.Children, c.Digest.String())
	}
	s.mu.Unlock()
	if !m.IsIndex() || depth >= walk.MaxDepth {
		return nil
	}
	for _, c := range m.Manifests {
		p := ""
		if c.Platform != nil {
			p = walk.PlatformString(c.Platform)
		}
		if err := s.visit(ctx, c.Digest.String(), p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// referrers asks the referrers API about every manifest met, until the
// registry says it does not serve it, and visits each referrer with its
// subject set. Referrers of referrers are asked in turn, a bounded number
// of rounds.
func (s *surveyor) referrers(ctx context.Context) error {
	asked := map[string]bool{}
	for round := 0; round < walk.MaxDepth && !s.noReferrers; round++ {
		var todo []string
		for _, d := range s.out.SortedManifests() {
			if !asked[d] {
				asked[d] = true
				todo = append(todo, d)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		for _, d := range todo {
			if err := s.referrersOf(ctx, d); err != nil || s.noReferrers {
				return err
			}
		}
	}
	return nil
}

// referrersOf visits the referrers the API lists for subject.
func (s *surveyor) referrersOf(ctx context.Context, subject string) error {
	descs, err := s.sc.Referrers(ctx, s.repo, subject, "")
	switch {
	case errors.Is(err, scan.ErrReferrersUnsupported):
		s.noReferrers = true
		return nil
	case err != nil:
		return fmt.Errorf("listing the referrers of %s@%s: %w", s.repo.Name(), subject, err)
	}
	for _, r := range descs {
		d := r.Digest.String()
		if err := s.visit(ctx, d, "", 0); err != nil {
			return err
		}
		if m := s.out.Manifests[d]; m != nil {
			m.Subject = subject
			if m.ArtifactType == "" {
				m.ArtifactType = r.ArtifactType
			}
		}
	}
	return nil
}

// artifactTags sets the subject of what cosign's sha256-<hex>.sig, .att
// and .sbom tags name, and of the manifests a referrers tag index
// sha256-<hex> lists, where no referrers answer set it.
func (s *surveyor) artifactTags() {
	var tags []string
	for t := range s.out.Tags {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	for _, t := range tags {
		m := artifactTag.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		subject := "sha256:" + m[1]
		target := s.out.Manifests[s.out.Tags[t].Digest]
		if target == nil {
			continue
		}
		if m[2] != "" {
			if target.Subject == "" {
				target.Subject = subject
			}
			continue
		}
		for _, c := range target.Children { // the referrers tag index lists the referrers
			if cm := s.out.Manifests[c]; cm != nil && cm.Subject == "" {
				cm.Subject = subject
			}
		}
	}
}
