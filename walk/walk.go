package walk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/types"
)

// Limits of one image's walk: real multi-platform indexes list tens of
// children and nest one level; anything far past that is not walked, and
// a limit-exceeded finding says so.
const (
	MaxDepth     = 4    // indexes nested in indexes below the top one
	MaxChildren  = 1000 // children one index may list
	MaxManifests = 2000 // manifests one image's walk reads
)

// Walker walks images over a Reader. It is safe for concurrent use; what
// it reads twice is the Reader's to remember.
type Walker struct {
	r           Reader
	platforms   []v1.Platform
	concurrency int
	visit       func(digest string)
}

// Option configures a Walker.
type Option func(*Walker)

// WithPlatforms limits which index children are required to the given
// platforms. By default every child is.
func WithPlatforms(platforms ...v1.Platform) Option {
	return func(w *Walker) { w.platforms = platforms }
}

// WithConcurrency bounds the children, and the blobs of one manifest, read
// at once in one walk. The default is 8.
func WithConcurrency(n int) Option { return func(w *Walker) { w.concurrency = max(n, 1) } }

// WithVisit calls f with the digest of every manifest and blob the walk
// reaches (whether or not it is there), from any goroutine.
func WithVisit(f func(digest string)) Option { return func(w *Walker) { w.visit = f } }

// New returns a Walker reading from r.
func New(r Reader, opts ...Option) *Walker {
	w := &Walker{r: r, concurrency: 8}
	for _, o := range opts {
		o(w)
	}
	return w
}

// With returns a Walker with w's options that reads from r: for a reader
// whose state is one image's (a runtime that takes every piece from the
// source of the image's manifest).
func (w *Walker) With(r Reader) *Walker {
	c := *w
	c.r = r
	return &c
}

// Walked is what one walk found.
type Walked struct {
	// Digest and MediaType are what the reference resolved to.
	Digest    string
	MediaType string
	// Findings are in a stable order: severity, platform, digest, code.
	Findings []types.Finding
	// Manifests and Blobs count what the walk read.
	Manifests, Blobs int
	// Tree is every manifest and blob the walk reached, with the state it
	// found each in; nil when the reference did not resolve.
	Tree *types.Node
}

// walk is the state of one image's walk.
type walk struct {
	*Walker
	repo name.Repository

	mu     sync.Mutex
	out    Walked
	capped bool // the MaxManifests finding was added
}

// Walk walks ref (a tag or a digest) down to every blob a node needs.
func (w *Walker) Walk(ctx context.Context, ref name.Reference) Walked {
	s := &walk{Walker: w, repo: ref.Context()}
	digest, ok := s.resolve(ctx, ref)
	if ok {
		s.top(ctx, ref, digest)
	}
	// The walk runs in parallel: order its findings so that every walk of
	// the same state reports them alike.
	slices.SortStableFunc(s.out.Findings, func(a, b types.Finding) int {
		return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmp.Compare(a.Platform, b.Platform),
			cmp.Compare(a.Digest, b.Digest), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
	})
	if s.out.Findings == nil {
		s.out.Findings = []types.Finding{}
	}
	return s.out
}

func (s *walk) add(f types.Finding) {
	s.mu.Lock()
	s.out.Findings = append(s.out.Findings, f)
	s.mu.Unlock()
}

// found adds a finding about node n and marks n with it (the first
// finding about a node sets its state).
func (s *walk) found(n *types.Node, f types.Finding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Findings = append(s.out.Findings, f)
	if n != nil && n.State == "" {
		n.State, n.Code = stateOf(f), f.Code
	}
}

// stateOf is the state a finding gives the node it is about.
func stateOf(f types.Finding) string {
	switch {
	case f.Code.Fault() && f.Code != types.LimitExceeded:
		return "unchecked"
	case f.Code == types.DigestMismatch:
		return "mismatch"
	case f.Code == types.ChildMissing && f.Digest == "":
		return "absent"
	case f.Code == types.ManifestMissing || f.Code == types.ChildMissing || f.Code == types.BlobMissing || f.Code == types.AttestationMissing:
		return "missing"
	}
	return "skipped"
}

// set updates a node the walk is filling, under the walk's lock.
func (s *walk) set(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
}

func (s *walk) count(manifests, blobs int, digest string) {
	s.mu.Lock()
	s.out.Manifests += manifests
	s.out.Blobs += blobs
	s.mu.Unlock()
	if s.visit != nil {
		s.visit(digest)
	}
}

// budget reports whether the walk may read one more manifest, adding a
// finding the first time it may not.
func (s *walk) budget(digest, platform string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out.Manifests < MaxManifests {
		return true
	}
	if !s.capped {
		s.capped = true
		s.out.Findings = append(s.out.Findings, types.NewFinding(types.LimitExceeded, digest, platform,
			"the image has more than %d manifests: the rest were not checked", MaxManifests))
	}
	return false
}

// fault adds the fault finding err is, about node n (nil: the tag); an
// error that is not a fault (an absence the caller did not expect) is
// reported as a registry error.
func (s *walk) fault(n *types.Node, err error, digest, platform string) {
	c := types.FaultCode(err)
	if c == "" {
		c = types.RegistryFault
	}
	s.found(n, types.NewFinding(c, digest, platform, "%v", err))
}

// resolve returns the digest ref names, reading a tag.
func (s *walk) resolve(ctx context.Context, ref name.Reference) (string, bool) {
	switch r := ref.(type) {
	case name.Digest:
		s.out.Digest = r.DigestStr()
		return r.DigestStr(), true
	case name.Tag:
		d, err := s.r.Resolve(ctx, s.repo, r.TagStr())
		switch {
		case errors.Is(err, types.ErrNotFound):
			s.add(types.NewFinding(types.TagMissing, "", "", "tag %q does not exist in %s", r.TagStr(), s.repo.Name()))
			return "", false
		case err != nil:
			s.fault(nil, err, "", "")
			return "", false
		}
		s.out.Digest, s.out.MediaType = d.Digest, d.MediaType
		return d.Digest, true
	}
	return "", false
}

// top reads the manifest a reference resolved to and walks it.
func (s *walk) top(ctx context.Context, ref name.Reference, digest string) {
	root := &types.Node{Kind: kindOf(s.out.MediaType), Digest: digest, MediaType: s.out.MediaType}
	s.out.Tree = root
	m, err := s.r.Manifest(ctx, s.repo, digest)
	s.count(1, 0, digest)
	switch {
	case errors.Is(err, types.ErrNotFound):
		if _, isTag := ref.(name.Tag); isTag {
			s.found(root, types.NewFinding(types.ManifestMissing, digest, "", "the tag points at manifest %s, which the registry no longer serves", digest))
		} else {
			s.found(root, types.NewFinding(types.ManifestMissing, digest, "", "manifest %s does not exist in %s", digest, s.repo.Name()))
		}
		return
	case errors.Is(err, types.ErrDigestMismatch):
		s.found(root, types.NewFinding(types.DigestMismatch, digest, "", "%v", err))
		return
	case err != nil:
		s.fault(root, err, digest, "")
		return
	}
	if !IsIndex(s.out.MediaType) && !IsImage(s.out.MediaType) {
		s.out.MediaType = m.MediaType
	}
	root.Kind, root.MediaType = kindOf(m.MediaType), m.MediaType
	s.manifest(ctx, root, m, digest, "", false, 0)
}

// kindOf names a manifest node by its media type.
func kindOf(mediaType string) string {
	if IsIndex(mediaType) {
		return "index"
	}
	return "manifest"
}

// manifest walks a read manifest: an index's children or an image's
// blobs. platform names the index child being walked ("" at the top);
// attestation is true under an attestation child, whose losses are warnings.
func (s *walk) manifest(ctx context.Context, n *types.Node, m Manifest, digest, platform string, attestation bool, depth int) {
	switch {
	case m.IsIndex():
		if depth >= MaxDepth {
			s.found(n, types.NewFinding(types.UnsupportedMedia, digest, platform, "indexes nested deeper than %d are not walked", MaxDepth))
			return
		}
		s.index(ctx, n, m, digest, platform, depth)
	case m.IsImage():
		s.blobs(ctx, n, m, digest, platform, attestation)
	default:
		s.found(n, types.NewFinding(types.UnsupportedMedia, digest, platform, "manifest %s has media type %q, which regcheck does not walk", digest, m.MediaType))
	}
}

// index walks the children of an index that the platforms need.
func (s *walk) index(ctx context.Context, n *types.Node, m Manifest, digest, platform string, depth int) {
	if len(m.Manifests) > MaxChildren {
		s.found(n, types.NewFinding(types.LimitExceeded, digest, platform, "the index lists %d manifests, more than the %d regcheck walks: its children were not checked", len(m.Manifests), MaxChildren))
		return
	}
	required := map[string]bool{} // digests of the image children the platforms need
	for _, d := range m.Manifests {
		if !IsAttestation(d) && s.wanted(d) {
			required[d.Digest.String()] = true
		}
	}
	s.absentPlatforms(n, m)
	// The nodes are made in the index's order before the children are
	// read in parallel, so every walk of one state draws the same tree.
	type job struct {
		d    ocispec.Descriptor
		att  bool
		node *types.Node
	}
	var jobs []job
	for _, d := range m.Manifests {
		att := IsAttestation(d)
		if att && len(s.platforms) > 0 && !required[AttestsTo(d)] {
			continue // attests to a platform nobody asked for
		}
		if !att && !required[d.Digest.String()] {
			continue
		}
		c := &types.Node{Kind: "manifest", Label: PlatformString(d.Platform), Digest: d.Digest.String(), MediaType: d.MediaType}
		if att {
			c.Kind, c.Subject = "attestation", AttestsTo(d)
		}
		jobs = append(jobs, job{d, att, c})
	}
	s.set(func() {
		for _, j := range jobs {
			n.Children = append(n.Children, j.node)
		}
	})
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, j := range jobs {
		g.Go(func() error {
			s.child(ctx, j.node, j.d, j.att, depth)
			return nil
		})
	}
	g.Wait()
}

// absentPlatforms adds a finding for each required platform the index has
// no child for: such a node cannot pull the image.
func (s *walk) absentPlatforms(n *types.Node, m Manifest) {
	for _, want := range s.platforms {
		found := slices.ContainsFunc(m.Manifests, func(d ocispec.Descriptor) bool {
			return !IsAttestation(d) && (d.Platform == nil || matches(d.Platform, want))
		})
		if !found {
			c := &types.Node{Kind: "manifest", Label: want.String()}
			s.set(func() { n.Children = append(n.Children, c) })
			s.found(c, types.NewFinding(types.ChildMissing, "", want.String(), "the index has no manifest for %s: a %s node cannot pull it", want.String(), want.String()))
		}
	}
}

// child reads one index child into its node n and walks it.
func (s *walk) child(ctx context.Context, n *types.Node, d ocispec.Descriptor, attestation bool, depth int) {
	digest, plat := d.Digest.String(), PlatformString(d.Platform)
	if !s.budget(digest, plat) {
		s.set(func() { n.State, n.Code = "skipped", types.LimitExceeded })
		return
	}
	m, err := s.r.Manifest(ctx, s.repo, digest)
	s.count(1, 0, digest)
	switch {
	case errors.Is(err, types.ErrNotFound):
		if attestation {
			s.found(n, types.NewFinding(types.AttestationMissing, digest, plat, "attestation manifest %s (for %s) is gone", digest, AttestsTo(d)))
		} else {
			s.found(n, types.NewFinding(types.ChildMissing, digest, plat, "the index lists a %s manifest %s that the registry no longer serves", plat, digest))
		}
		return
	case errors.Is(err, types.ErrDigestMismatch):
		s.found(n, types.NewFinding(types.DigestMismatch, digest, plat, "%v", err))
		return
	case err != nil:
		s.fault(n, err, digest, plat)
		return
	}
	s.set(func() {
		n.MediaType = m.MediaType
		if m.IsIndex() {
			n.Kind = "index"
		}
	})
	s.manifest(ctx, n, m, digest, plat, attestation, depth+1)
}

// blobs checks an image manifest's config and layers.
func (s *walk) blobs(ctx context.Context, n *types.Node, m Manifest, digest, platform string, attestation bool) {
	type blob struct {
		d    ocispec.Descriptor
		what string
		node *types.Node
	}
	all := []blob{{m.Config, "config", &types.Node{Kind: "config", Digest: m.Config.Digest.String(), MediaType: m.Config.MediaType}}}
	for i, l := range m.Layers {
		what := fmt.Sprintf("layer %d", i+1)
		all = append(all, blob{l, what, &types.Node{Kind: "layer", Label: what, Digest: l.Digest.String(), MediaType: l.MediaType}})
	}
	s.set(func() {
		for _, b := range all {
			n.Children = append(n.Children, b.node)
		}
	})
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency)
	for _, b := range all {
		if IsForeignLayer(b.d.MediaType) {
			s.found(b.node, types.NewFinding(types.ForeignLayer, b.d.Digest.String(), platform, "%s %s is non-distributable (%s): not checked", b.what, b.d.Digest, b.d.MediaType))
			continue
		}
		g.Go(func() error {
			err := s.r.Blob(ctx, s.repo, b.d.Digest.String())
			s.count(0, 1, b.d.Digest.String())
			switch {
			case errors.Is(err, types.ErrNotFound):
				where := "the image"
				if platform != "" {
					where = fmt.Sprintf("the %s manifest %s", platform, digest)
				}
				code := types.BlobMissing
				if attestation {
					code = types.AttestationMissing
				}
				s.found(b.node, types.NewFinding(code, b.d.Digest.String(), platform, "%s blob %s of %s is gone", b.what, b.d.Digest, where))
			case err != nil:
				s.fault(b.node, err, b.d.Digest.String(), platform)
			}
			return nil
		})
	}
	g.Wait()
}

// wanted reports whether an index child's platform is one the walk requires.
func (s *walk) wanted(d ocispec.Descriptor) bool {
	if len(s.platforms) == 0 || d.Platform == nil {
		return true // a child with no platform cannot be ruled out
	}
	return slices.ContainsFunc(s.platforms, func(want v1.Platform) bool { return matches(d.Platform, want) })
}

// matches reports whether a child's platform serves a wanted one; a wanted
// platform without a variant accepts any.
func matches(p *ocispec.Platform, want v1.Platform) bool {
	return p.OS == want.OS && p.Architecture == want.Architecture && (want.Variant == "" || p.Variant == want.Variant)
}
