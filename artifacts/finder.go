package artifacts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Finder finds the artifacts of images in one registry client's view. It
// is safe for concurrent use.
type Finder struct {
	src         Source
	r           walk.Reader
	raw         walk.RawReader // nil when the source cannot hand over a manifest's bytes
	w           *walk.Walker
	concurrency int
}

// Option configures a Finder.
type Option func(*Finder)

// WithConcurrency bounds the subjects (an index and its children) looked
// at in parallel in one Find. The default is 4; the Scanner bounds the
// requests in flight as it does for every walk.
func WithConcurrency(n int) Option { return func(f *Finder) { f.concurrency = max(n, 1) } }

// NewFinder returns a Finder that asks the registry through s:
// s.RegistryReader() for tags, manifests and blobs (the registry itself,
// as admission controllers ask it, never a node's mirror),
// s.RepositoryTags for the tag list, and s.Referrers for the referrers
// API.
func NewFinder(s *scan.Scanner, opts ...Option) *Finder {
	f := NewSourceFinder(scanner{Reader: s.RegistryReader(), s: s}, opts...)
	f.raw, _ = s.RegistryReader().(walk.RawReader)
	return f
}

// NewSourceFinder returns a Finder that reads src: a store standing for a
// registry (gc-check's view of a registry's storage, before and after a
// garbage collection).
func NewSourceFinder(src Source, opts ...Option) *Finder {
	f := &Finder{src: src, r: src, concurrency: 4}
	f.raw, _ = src.(walk.RawReader)
	for _, o := range opts {
		o(f)
	}
	// Artifacts are walked whole: no platform limits them.
	f.w = walk.New(f.r, walk.WithConcurrency(f.concurrency))
	return f
}

// Find looks for the artifacts of the manifest with the digest subject in
// repo (repo as the Scanner's Parse gave it, so with its scheme), and for
// an index, of each child it lists, and walks each to its blobs. It
// returns an error only when subject is not a digest.
func (f *Finder) Find(ctx context.Context, repo name.Repository, subject string) (Set, error) {
	if err := digest.Digest(subject).Validate(); err != nil {
		return Set{}, fmt.Errorf("finding the artifacts of %s@%s: invalid digest: %w", repo.Name(), subject, err)
	}
	l := &look{Finder: f, repo: repo, set: Set{Image: subject, Artifacts: []Artifact{}}}
	l.listTags(ctx)
	subjects := l.subjects(ctx, subject)
	g := new(errgroup.Group)
	g.SetLimit(f.concurrency)
	for _, sub := range subjects {
		g.Go(func() error {
			l.cosignTags(ctx, sub)
			l.referrers(ctx, sub)
			return nil
		})
	}
	g.Wait()
	l.set.sort()
	return l.set, nil
}

// look is the state of one Find.
type look struct {
	*Finder
	repo name.Repository
	// listed holds the repository's tags, to tell a dangling tag (listed,
	// 404) from an absent one; nil when the list could not be had (then a
	// 404 proves only that the tag does not resolve).
	listed map[string]bool
	// noAPI is set once the registry said it serves no referrers API:
	// the other subjects go to the referrers tag at once.
	noAPI atomic.Bool

	mu  sync.Mutex
	set Set
}

// subject is one digest artifacts may be about: the image's, or an index
// child's (Platform set).
type subject struct {
	Digest, Platform string
}

// listTags reads the repository's tag list once: a cosign tag or a
// referrers tag that is listed but does not resolve dangles.
func (l *look) listTags(ctx context.Context) {
	tags, err := l.src.Tags(ctx, l.repo)
	if err != nil {
		l.fault(err, "", "", "listing the tags of %s to find its artifacts", l.repo.Name())
		return
	}
	l.listed = make(map[string]bool, len(tags))
	for _, t := range tags {
		l.listed[t] = true
	}
}

// subjects returns the image's digest and, for an index, each child's
// that is an image (buildx attestation children are not signed).
func (l *look) subjects(ctx context.Context, image string) []subject {
	out := []subject{{Digest: image}}
	m, err := l.r.Manifest(ctx, l.repo, image)
	switch {
	case errors.Is(err, types.ErrNotFound) || errors.Is(err, types.ErrDigestMismatch):
		return out // the image is gone: its artifacts may still be there
	case err != nil:
		l.fault(err, image, "", "reading %s@%s to find its children's artifacts", l.repo.Name(), image)
		return out
	}
	if !m.IsIndex() {
		return out
	}
	for _, d := range m.Manifests {
		if walk.IsAttestation(d) || len(out) > walk.MaxChildren {
			continue
		}
		out = append(out, subject{Digest: d.Digest.String(), Platform: walk.PlatformString(d.Platform)})
	}
	return out
}

// add keeps an artifact.
func (l *look) add(a Artifact) {
	l.mu.Lock()
	l.set.Artifacts = append(l.set.Artifacts, a)
	l.mu.Unlock()
}

// fault keeps a failure that hid what the registry holds, as a fault
// finding about digest (the subject; "" for the whole repository).
func (l *look) fault(err error, digest, platform, format string, args ...any) {
	c := types.FaultCode(err)
	if c == "" {
		c = types.RegistryFault
	}
	f := types.NewFinding(c, digest, platform, "%s: %v", fmt.Sprintf(format, args...), err)
	l.mu.Lock()
	l.set.Faults = append(l.set.Faults, f)
	l.mu.Unlock()
}

// resolveTag resolves a candidate tag (cosign's or the referrers tag):
// its digest, or ok false when there is nothing to walk. Every candidate
// is asked for (a HEAD): only the registry's own 404 for the tag proves
// it absent, the tag list may be stale or cut short. A tag that is
// listed but does not resolve dangles: dangling is true, and the caller
// keeps it as an artifact that is not whole.
func (l *look) resolveTag(ctx context.Context, sub subject, tag string) (d string, dangling, ok bool) {
	desc, err := l.r.Resolve(ctx, l.repo, tag)
	switch {
	case errors.Is(err, types.ErrNotFound):
		return "", l.listed[tag], false
	case err != nil:
		l.fault(err, sub.Digest, sub.Platform, "resolving %s:%s", l.repo.Name(), tag)
		return "", false, false
	}
	return desc.Digest, false, true
}

// danglingFinding says a listed tag resolves to nothing.
func (l *look) danglingFinding(sub subject, tag string) types.Finding {
	return types.NewFinding(types.ManifestMissing, "", sub.Platform,
		"tag %s:%s is listed, but the registry serves no manifest for it: the tag dangles", l.repo.Name(), tag)
}
