package scan

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/errgroup"
)

// Scanner walks images and remembers what it has asked: a digest fetched for
// one image is not fetched again for another. It is safe for concurrent use.
type Scanner struct {
	o       *options
	c       *client
	counter *counter
}

// New returns a Scanner configured by opts.
func New(opts ...Option) (*Scanner, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	rt, cnt := buildTransport(o)
	return &Scanner{o: o, c: newClient(o, rt), counter: cnt}, nil
}

// Run scans every target with a new Scanner. See Scanner.Run.
func Run(ctx context.Context, targets []Target, opts ...Option) (*Result, error) {
	s, err := New(opts...)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, targets)
}

// Check scans one reference with a new Scanner and returns what it found.
func Check(ctx context.Context, ref string, opts ...Option) (*Image, error) {
	r, err := Run(ctx, []Target{{Ref: ref, Uses: []Use{{Source: "args"}}}}, opts...)
	if err != nil {
		return nil, err
	}
	return r.Images[0], nil
}

// Run walks every target's image from its tag (or digest) down to every
// blob and returns one Image per distinct reference, in the order first
// given, with the uses of every target that named it. Faults are findings,
// not errors: Run fails only when ctx ends before the walk does.
func (s *Scanner) Run(ctx context.Context, targets []Target) (*Result, error) {
	start := time.Now()
	res := &Result{Started: start}
	byRef := map[string]*Image{}
	refs := map[*Image]name.Reference{}
	for _, t := range targets {
		norm, ref, err := s.Parse(t.Ref)
		key := norm
		if err != nil {
			key = "invalid:" + t.Ref
		}
		im, seen := byRef[key]
		if !seen {
			im = &Image{Reference: norm, Findings: []Finding{}}
			if err != nil {
				im.Reference = t.Ref
				im.Findings = append(im.Findings, newFinding(InvalidReference, "", "", "%v", err))
				im.Verdict = verdict(im.Findings)
			} else {
				refs[im] = ref
			}
			byRef[key] = im
			res.Images = append(res.Images, im)
		}
		im.Uses = append(im.Uses, t.Uses...)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2 * s.o.concurrency)
	for _, im := range res.Images {
		ref, ok := refs[im]
		if !ok {
			continue
		}
		g.Go(func() error {
			s.c.walkImage(gctx, ref, im)
			return nil
		})
	}
	g.Wait()
	res.Duration = time.Since(start)
	res.Requests = s.counter.counts()
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("scan interrupted: %w", err)
	}
	return res, nil
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

func parse(ref string, insecure map[string]bool) (string, name.Reference, error) {
	named, err := reference.ParseNormalizedNamed(strings.TrimSpace(ref))
	if err != nil {
		return "", nil, fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	named = reference.TagNameOnly(named)
	norm := named.String()
	opts := []name.Option{name.WeakValidation}
	if insecure[reference.Domain(named)] {
		opts = append(opts, name.Insecure)
	}
	repo := reference.Domain(named) + "/" + reference.Path(named)
	var r name.Reference
	if d, ok := named.(reference.Digested); ok {
		r, err = name.NewDigest(repo+"@"+d.Digest().String(), opts...)
	} else {
		r, err = name.NewTag(repo+":"+named.(reference.Tagged).Tag(), opts...)
	}
	if err != nil {
		return "", nil, fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	return norm, r, nil
}

// Resolve returns the digest and media type a reference points at now: for
// a tag, one HEAD (shared with any walk of the same tag); for a digest
// reference, the digest itself, unchecked.
func (s *Scanner) Resolve(ctx context.Context, ref string) (digest, mediaType string, err error) {
	_, r, err := s.Parse(ref)
	if err != nil {
		return "", "", err
	}
	if d, ok := r.(name.Digest); ok {
		return d.DigestStr(), "", nil
	}
	d, err := s.c.resolve(ctx, r.(name.Tag))
	if err != nil {
		return "", "", fmt.Errorf("resolving %s: %w", ref, err)
	}
	return d.Digest, d.MediaType, nil
}

// Requests returns the requests this Scanner has sent so far.
func (s *Scanner) Requests() []RequestCount { return s.counter.counts() }
