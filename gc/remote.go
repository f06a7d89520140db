package gc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// remoteRepo is one repository as its registry serves it.
type remoteRepo struct {
	host, path, name string
	repo             name.Repository
	// hasTags is false when the registry does not know the repository's tags
	// (404 on tags/list: no _manifests/tags in its storage).
	hasTags bool
	inUse   bool // examined because an in-use image names it, not only listed

	mu     sync.Mutex
	tags   map[string]string   // tag → digest it names now
	tagged map[string][]string // digest → tags naming it directly
	reach  map[string]bool     // manifests tags reach through indexes
	known  map[string]bool     // every manifest digest met
	served map[string]bool     // … that the repository serves
	via    map[string]string   // child digest → "index D (platform)" it was first met under
	err    error
}

// newRemoteRepo is repository path on host, named as the Scanner names it.
func newRemoteRepo(sc *scan.Scanner, host, path string, inUse bool) *remoteRepo {
	r := &remoteRepo{host: host, path: path, name: host + "/" + path, inUse: inUse, tags: map[string]string{}, tagged: map[string][]string{},
		reach: map[string]bool{}, known: map[string]bool{}, served: map[string]bool{}, via: map[string]string{}}
	if _, ref, err := sc.Parse(r.name); err != nil {
		r.err = err
	} else {
		r.repo = ref.Context()
	}
	return r
}

func (r *remoteRepo) listed() bool { return !r.inUse }

// survey lists r's tags, resolves each, and reads every manifest the tags
// and the pins reach through indexes.
func (r *remoteRepo) survey(ctx context.Context, sc *scan.Scanner, rd walk.Reader, pins []string) {
	if r.err != nil {
		return
	}
	tags, err := sc.Tags(ctx, r.name)
	switch {
	case errors.Is(err, types.ErrNotFound):
	case err != nil:
		r.err = err
		return
	default:
		r.hasTags = true
	}
	g, gctx := errgroup.WithContext(ctx)
	var errs []error
	fail := func(err error) {
		r.mu.Lock()
		errs = append(errs, err)
		r.mu.Unlock()
	}
	for _, t := range tags {
		g.Go(func() error {
			if err := r.tag(gctx, rd, t); err != nil {
				fail(err)
			}
			return nil
		})
	}
	g.Wait()
	for _, d := range pins {
		if err := r.visit(ctx, rd, d, false, 0); err != nil {
			errs = append(errs, err)
		}
	}
	r.err = errors.Join(errs...)
}

// tag resolves tag t and visits what it names. A tag naming a manifest
// that is gone is damage, not the run's.
func (r *remoteRepo) tag(ctx context.Context, rd walk.Reader, t string) error {
	d, err := rd.Resolve(ctx, r.repo, t)
	switch {
	case errors.Is(err, types.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("resolving %s:%s: %w", r.name, t, err)
	}
	r.mu.Lock()
	r.tags[t] = d.Digest
	r.tagged[d.Digest] = append(r.tagged[d.Digest], t)
	r.mu.Unlock()
	return r.visit(ctx, rd, d.Digest, true, 0)
}

// visit reads manifest d and, for an index, its children, as deep as a
// walk goes (walk.MaxDepth); fromTag says a tag reaches it.
func (r *remoteRepo) visit(ctx context.Context, rd walk.Reader, d string, fromTag bool, depth int) error {
	r.mu.Lock()
	again := r.known[d] && (!fromTag || r.reach[d])
	r.known[d] = true
	if fromTag {
		r.reach[d] = true
	}
	r.mu.Unlock()
	if again {
		return nil
	}
	m, err := rd.Manifest(ctx, r.repo, d)
	switch {
	case errors.Is(err, types.ErrNotFound), errors.Is(err, types.ErrDigestMismatch):
		return nil // already gone or damaged: the scan reports what is in use
	case err != nil:
		return fmt.Errorf("fetching %s@%s: %w", r.name, d, err)
	}
	r.mu.Lock()
	r.served[d] = true
	for _, c := range m.Manifests {
		if _, ok := r.via[c.Digest.String()]; !ok && m.IsIndex() {
			r.via[c.Digest.String()] = "index " + d + " (" + platformOf(c) + ")"
		}
	}
	r.mu.Unlock()
	if !m.IsIndex() || depth >= walk.MaxDepth {
		return nil // a walk does not go below an index that deep either
	}
	for _, c := range m.Manifests {
		if err := r.visit(ctx, rd, c.Digest.String(), fromTag, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// why says why the run deletes manifest d of r.
func (r *remoteRepo) why(d string, model gcresult.Model) string {
	if via, ok := r.via[d]; ok {
		if model == gcresult.Distribution28 {
			return "no tag names it directly; it is a child of " + via + ", and 2.x deletes the children of tagged indexes"
		}
		return "no tag reaches it: it is a child of " + via + ", which no tag reaches either"
	}
	return "no tag points at this pinned digest (its tag moved, or it was pushed by digest)"
}

// platformOf names an index child's platform for a report line.
func platformOf(d ocispec.Descriptor) string {
	if d.Platform == nil {
		return "unknown platform"
	}
	return walk.PlatformString(d.Platform)
}
