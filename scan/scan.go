package scan

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/walk"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/types"
)

// Scanner walks images and remembers what it has asked: a digest fetched for
// one image is not fetched again for another. It is safe for concurrent use.
type Scanner struct {
	o       *options
	c       *client
	r       walk.Reader // what walks, Resolve and Manifest read: remote{c}, or WithReader's
	counter *counter
	walker  *walk.Walker
	path    *pathReader // the node's pull path (WithPullPath), or nil
	direct  walk.Reader // the registry itself, never through a mirror: r without WithPullPath
}

// sleep waits d, or until ctx ends; tests need not wait.
var sleep = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// New returns a Scanner configured by opts.
func New(opts ...Option) (*Scanner, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	l := buildTransport(o)
	c := newClient(o, l)
	r := cached(o, remote{c})
	if o.reader != nil {
		r = o.reader
	}
	direct := r
	var path *pathReader
	if o.reader == nil && o.pullPath != nil {
		path = newPathReader(o, l, c.sem)
		r = path
	}
	w := walk.New(r, walk.WithPlatforms(o.platforms...), walk.WithConcurrency(o.concurrency))
	return &Scanner{o: o, c: c, r: r, counter: l.counter, walker: w, path: path, direct: direct}, nil
}

// Run scans every target with a new Scanner. See Scanner.Run.
func Run(ctx context.Context, targets []types.Target, opts ...Option) (*types.Result, error) {
	s, err := New(opts...)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, targets)
}

// Check scans one reference with a new Scanner and returns what it found.
func Check(ctx context.Context, ref string, opts ...Option) (*types.Image, error) {
	r, err := Run(ctx, []types.Target{{Ref: ref, Uses: []types.Use{{Source: "args"}}}}, opts...)
	if err != nil {
		return nil, err
	}
	return r.Images[0], nil
}

// Run walks every target's image from its tag (or digest) down to every
// blob and returns one Image per distinct reference, in the order first
// given, with the uses of every target that named it. Faults are findings,
// not errors: an image a transient fault left unknown is asked again once
// after a pause (WithReask), with every fault forgotten. Run fails only when
// ctx ends before the walk does.
func (s *Scanner) Run(ctx context.Context, targets []types.Target) (*types.Result, error) {
	start := time.Now()
	res, refs := s.images(targets)
	s.forgetFaults()
	s.walk(ctx, res.Images, refs, s.progress(len(res.Images), len(res.Images)-len(refs)))
	s.reask(ctx, res, refs)
	res.InputErrors = append(res.InputErrors, s.pullPathNotices()...)
	res.Duration = time.Since(start)
	res.Requests = s.counter.counts()
	res.RateLimits = s.c.limits.report()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("scan interrupted: %w", err)
	}
	return res, nil
}

// images makes one Image per distinct reference, with the uses of every
// target naming it, and the parsed reference of each that parses.
func (s *Scanner) images(targets []types.Target) (*types.Result, map[*types.Image]name.Reference) {
	res := &types.Result{Started: time.Now()}
	byRef := map[string]*types.Image{}
	refs := map[*types.Image]name.Reference{}
	of := make([]*types.Image, len(targets)) // each target's image
	uses := map[*types.Image]int{}           // and how many uses each image has
	for i, t := range targets {
		norm, ref, err := s.Parse(t.Ref)
		key := norm
		if err != nil {
			key = "invalid:" + t.Ref
		}
		im, seen := byRef[key]
		if !seen {
			im = &types.Image{Reference: norm, Findings: []types.Finding{}}
			if err != nil {
				// An invalid reference may hold userinfo (user:pass@host/repo).
				im.Reference = redact.String(t.Ref)
				im.Findings = append(im.Findings, types.NewFinding(types.InvalidReference, "", "", "%s", redact.String(err.Error())))
				im.Verdict = types.VerdictOf(im.Findings)
			} else {
				refs[im] = ref
			}
			byRef[key] = im
			res.Images = append(res.Images, im)
		}
		of[i] = im
		uses[im] += len(t.Uses)
	}
	// Each image's uses in one slice of their exact number: a watcher
	// holds them between walks, ten thousand of them in a large cluster.
	for _, im := range res.Images {
		if n := uses[im]; n > 0 {
			im.Uses = make([]types.Use, 0, n)
		}
	}
	for i, t := range targets {
		for _, u := range t.Uses {
			if u.Written == "" {
				u.Written = t.Ref
			}
			of[i].Uses = append(of[i].Uses, u)
		}
	}
	return res, refs
}

// walk walks every image that has a parsed reference, calling walked (if
// not nil) after each.
func (s *Scanner) walk(ctx context.Context, images []*types.Image, refs map[*types.Image]name.Reference, walked func()) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2 * s.o.concurrency)
	for _, im := range images {
		ref, ok := refs[im]
		if !ok {
			continue
		}
		g.Go(func() error {
			s.walkImage(gctx, ref, im)
			if walked != nil {
				walked()
			}
			return nil
		})
	}
	g.Wait()
}

// progress reports a Run of total images, done of them already (those that
// do not parse), to WithProgress's function, and returns what to call as
// each further image is walked; nil without WithProgress.
func (s *Scanner) progress(total, done int) func() {
	f := s.o.progress
	if f == nil {
		return nil
	}
	var mu sync.Mutex
	report := func() {
		n := 0
		for _, c := range s.counter.counts() {
			n += c.Count
		}
		f(Progress{Done: done, Total: total, Requests: n})
	}
	report()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		done++
		report()
	}
}

// reask walks again, once, the images a transient fault left unknown,
// after a pause and with every fault forgotten: an intermittent fault then
// gives the true verdict, and a lasting one is still unknown.
func (s *Scanner) reask(ctx context.Context, res *types.Result, refs map[*types.Image]name.Reference) {
	var again []*types.Image
	for _, im := range res.Images {
		if im.Verdict == types.Unknown && slices.ContainsFunc(im.Findings, func(f types.Finding) bool { return f.Code.Transient() }) {
			again = append(again, im)
		}
	}
	if len(again) == 0 || s.o.reaskPause == 0 || ctx.Err() != nil {
		return
	}
	s.o.logger.Info("asking again after transient faults", "images", len(again), "pause", s.o.reaskPause)
	if sleep(ctx, s.o.reaskPause) != nil {
		return
	}
	s.forgetFaults()
	for _, im := range again {
		im.Digest, im.MediaType, im.Findings, im.Manifests, im.Blobs, im.Tree = "", "", []types.Finding{}, 0, 0, nil
	}
	s.walk(ctx, again, refs, nil)
	res.Reasked = len(again)
	for _, im := range again {
		if im.Verdict != types.Unknown {
			res.Recovered++
		}
	}
	s.o.logger.Info("asked again", "images", res.Reasked, "recovered", res.Recovered)
}

// Parse normalizes an image reference as a container runtime does
// ("nginx" is docker.io/library/nginx:latest) and returns it with its
// parsed form. A reference with both a tag and a digest is pulled, and
// walked, by its digest. Hosts named insecure get plain HTTP.
func (s *Scanner) Parse(ref string) (string, name.Reference, error) {
	return parse(ref, s.o.insecure)
}

// ParseReference is Parse for callers without a Scanner: the normalized
// reference and its parsed form, for naming and matching, not fetching.
func ParseReference(ref string) (string, name.Reference, error) {
	return parse(ref, nil)
}

func parse(s string, insecure map[string]bool) (string, name.Reference, error) {
	ref, err := imageref.Parse(s)
	if err != nil {
		return "", nil, err
	}
	opts := []name.Option{name.WeakValidation}
	if insecure[ref.Domain()] {
		opts = append(opts, name.Insecure)
	}
	var r name.Reference
	if ref.Pinned() {
		r, err = name.NewDigest(ref.Repo+"@"+ref.Digest, opts...)
	} else {
		r, err = name.NewTag(ref.Repo+":"+ref.EffectiveTag(), opts...)
	}
	if err != nil {
		return "", nil, fmt.Errorf("invalid image reference %q: %w", s, err)
	}
	return ref.Normalized(), r, nil
}

// Resolve returns the digest and media type a reference points at now: for
// a tag, one HEAD (shared with any walk of the same tag), or the Reader's
// answer (WithReader); for a digest reference, the digest itself, unchecked.
func (s *Scanner) Resolve(ctx context.Context, ref string) (digest, mediaType string, err error) {
	_, r, err := s.Parse(ref)
	if err != nil {
		return "", "", err
	}
	if d, ok := r.(name.Digest); ok {
		return d.DigestStr(), "", nil
	}
	t := r.(name.Tag)
	d, err := s.r.Resolve(ctx, t.Context(), t.TagStr())
	if err != nil {
		return "", "", fmt.Errorf("resolving %s: %w", ref, err)
	}
	return d.Digest, d.MediaType, nil
}

// forgetFaults drops the faults the Scanner's clients remember, the pull
// path's endpoints' included: each pass asks again what failed.
func (s *Scanner) forgetFaults() {
	s.c.forgetFaults()
	if s.path != nil {
		s.path.forgetFaults()
	}
}

// Requests returns the requests this Scanner has sent so far.
func (s *Scanner) Requests() []types.RequestCount {
	if s.path == nil {
		return s.counter.counts()
	}
	return sortCounts(types.SumRequests(append(s.counter.counts(), s.path.counts()...)))
}
