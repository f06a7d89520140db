package scan

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// WithPullPath walks each image as a node whose container runtime reads cfg
// pulls it (a k3s registries.yaml, a containerd hosts directory, a CRI-O
// registries.conf; see package pullpath): every piece is asked of the
// endpoints the runtime asks, in its order, with their rewrites and ?ns=,
// moving on where the runtime moves on. A piece is absent only when no
// endpoint serves it, none faulted (a faulting mirror may hold it), and
// the registry itself (or, where the node never asks it, every endpoint
// that answered) says it is not there. The manifest cache is not used on
// a pull path.
func WithPullPath(cfg *pullpath.Config) Option {
	return func(o *options) error {
		if cfg == nil {
			return errors.New("scan.WithPullPath: nil configuration")
		}
		o.pullPath = cfg
		return nil
	}
}

// epAnswer is what one endpoint said of one piece: nil when it served it.
type epAnswer struct {
	ep  pullpath.Endpoint
	err error
}

// pathReader is the registry as a node reaches it through its pull path.
type pathReader struct {
	cfg *pullpath.Config
	fb  pullpath.Fallback
	o   *options
	l   layers
	sem chan struct{}

	mu       sync.Mutex
	clients  map[string]*client // by endpoint (URL, repository, ns)
	counters []*counter         // of the endpoints with a transport of their own
	log      *answerLog
}

var _ walk.Reader = (*pathReader)(nil)

func newPathReader(o *options, l layers, sem chan struct{}) *pathReader {
	return &pathReader{cfg: o.pullPath, fb: o.pullPath.Fallback(), o: o, l: l, sem: sem,
		clients: map[string]*client{}, log: newAnswerLog()}
}

// forImage is the reader one image's walk asks. A runtime that takes
// every piece from the source that served the image's manifest
// (containers/image: Fallback.Sticky) gets a view that remembers that
// source for this image alone; others share p.
func (p *pathReader) forImage() (walk.Reader, *answerLog) {
	if !p.fb.Sticky {
		return p, p.log
	}
	r := &stickyReader{p: p, log: newAnswerLog()}
	return r, r.log
}

// Resolve asks the endpoints that resolve tags, in order.
func (p *pathReader) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	ref := repo.Tag(tag)
	return askPath(ctx, p, ref, pullpath.StepResolve, nil, func(c *client) (walk.Descriptor, error) { return c.resolve(ctx, ref) })
}

// Manifest asks the endpoints that serve content for a manifest by digest.
func (p *pathReader) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	return askPath(ctx, p, repo.Digest(digest), pullpath.StepFetch, nil, func(c *client) (walk.Manifest, error) { return c.manifest(ctx, repo, digest) })
}

// Blob asks the endpoints that serve content for a blob.
func (p *pathReader) Blob(ctx context.Context, repo name.Repository, digest string) error {
	_, err := askPath(ctx, p, repo.Digest(digest), pullpath.StepFetch, nil, func(c *client) (struct{}, error) { return struct{}{}, c.blob(ctx, repo, digest) })
	return err
}

// stickyReader is one image's walk on a sticky runtime: the first
// manifest asked (by tag or digest) picks the source, as containers/image's
// newImageSource does, trying each in turn; every later piece comes from
// that source alone.
type stickyReader struct {
	p      *pathReader
	log    *answerLog // this image's answers: another image of the repository may have had another source
	mu     sync.Mutex
	source *pullpath.Endpoint
}

// Resolve picks the source.
func (r *stickyReader) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	ref := repo.Tag(tag)
	return askPath(ctx, r.p, ref, pullpath.StepResolve, r, func(c *client) (walk.Descriptor, error) { return c.resolve(ctx, ref) })
}

// Manifest asks the source, or picks it when none is picked yet (an image
// pinned by digest).
func (r *stickyReader) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	step := pullpath.StepFetch
	if r.picked() == nil {
		step = pullpath.StepResolve
	}
	return askPath(ctx, r.p, repo.Digest(digest), step, r, func(c *client) (walk.Manifest, error) { return c.manifest(ctx, repo, digest) })
}

// Blob asks the source.
func (r *stickyReader) Blob(ctx context.Context, repo name.Repository, digest string) error {
	_, err := askPath(ctx, r.p, repo.Digest(digest), pullpath.StepFetch, r, func(c *client) (struct{}, error) { return struct{}{}, c.blob(ctx, repo, digest) })
	return err
}

func (r *stickyReader) picked() *pullpath.Endpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.source
}

func (r *stickyReader) pick(ep pullpath.Endpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.source == nil {
		r.source = &ep
	}
}

// askPath asks ref's endpoints in the runtime's order until one serves
// it, as the runtime's fallback table says, and logs every answer. With
// sticky (a sticky runtime's image walk), a piece after the first is asked
// of the source the first came from, alone.
func askPath[T any](ctx context.Context, p *pathReader, ref name.Reference, step pullpath.Step, sticky *stickyReader, ask func(*client) (T, error)) (T, error) {
	var zero T
	eps, err := p.endpoints(ref, step, sticky)
	if err != nil {
		return zero, &RegistryError{Method: http.MethodGet, URL: ref.Name(), Detail: "the node's pull path: " + err.Error(), Err: types.ErrRegistry}
	}
	var answers []epAnswer
	log := p.log
	if sticky != nil {
		log = sticky.log
	}
	defer func() { log.record(ref, answers) }()
	for _, ep := range eps {
		if ep.Blocked {
			answers = append(answers, epAnswer{ep, errBlocked})
			continue
		}
		c, err := p.client(ep)
		if err == nil {
			ep = c.at.ep // as asked: plain HTTP where the endpoint answered so
			var v T
			if v, err = ask(c); err == nil {
				answers = append(answers, epAnswer{ep, nil})
				if sticky != nil {
					sticky.pick(ep)
				}
				return v, nil
			}
		}
		answers = append(answers, epAnswer{ep, err})
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		if a, ok := p.fb.Next(step, outcome(err)); ok && a == pullpath.ActionFail {
			break
		}
	}
	return zero, pathError(ref, answers)
}

// endpoints are the endpoints the runtime asks for ref at step: for a tag,
// those that resolve; for content, those that pull, or on a sticky
// runtime the image's source alone once it is picked.
func (p *pathReader) endpoints(ref name.Reference, step pullpath.Step, sticky *stickyReader) ([]pullpath.Endpoint, error) {
	if sticky != nil && step == pullpath.StepFetch {
		if src := sticky.picked(); src != nil {
			return []pullpath.Endpoint{*src}, nil
		}
	}
	eps, err := p.cfg.Endpoints(ref)
	if err != nil {
		return nil, err
	}
	var out []pullpath.Endpoint
	for _, ep := range eps {
		if step == pullpath.StepResolve && !ep.Resolve || step == pullpath.StepFetch && !ep.Pull {
			continue
		}
		out = append(out, ep)
	}
	return out, nil
}

// errBlocked is an endpoint the runtime refuses without a request.
var errBlocked = errors.New("blocked by the configuration: the runtime makes no request to it")

// client returns the client of one endpoint, made the first time.
// It is made outside the lock (making one may dial the endpoint, see
// newEndpointAt): two callers may both make one, and the first kept wins.
func (p *pathReader) client(ep pullpath.Endpoint) (*client, error) {
	k := endpointKey(ep)
	p.mu.Lock()
	c := p.clients[k]
	p.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, n, err := endpointClient(p.o, p.l, p.sem, ep)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if kept := p.clients[k]; kept != nil {
		return kept, nil
	}
	p.clients[k] = c
	if n != nil {
		p.counters = append(p.counters, n)
	}
	return c, nil
}

func endpointKey(ep pullpath.Endpoint) string {
	return ep.URL.String() + " " + ep.Repository + " " + ep.Namespace
}

// outcome sorts an endpoint's error as the runtimes' fallback tables do.
func outcome(err error) pullpath.Outcome {
	var re *RegistryError
	switch {
	case errors.Is(err, errBlocked):
		return pullpath.OutcomeBlocked
	case errors.As(err, &re) && re.Status != 0:
		return pullpath.ClassifyStatus(re.Status)
	case errors.Is(err, types.ErrNotFound):
		return pullpath.OutcomeNotFound
	}
	return pullpath.OutcomeTransport
}

// PathError is a piece no endpoint of the node's pull path served, with
// what each endpoint said. It unwraps to the answer that decides: the
// registry's own 404 (absence), or the first endpoint's fault.
type PathError struct {
	Ref     string
	Answers []string
	err     error
}

func (e *PathError) Error() string {
	return fmt.Sprintf("no endpoint the node asks serves %s: %s", e.Ref, strings.Join(e.Answers, "; "))
}

// Unwrap returns the deciding answer.
func (e *PathError) Unwrap() error { return e.err }

// pathError judges answers, none of which served. A fault from any
// endpoint (5xx, an auth failure, TLS, a timeout, no connection) decides,
// whatever the others said: the endpoint may hold the piece (a
// pull-through cache, Spegel), and the node pulls it from there once it
// answers. Absence needs no fault, and the registry's own 404 where the
// node asks the registry, or, where it does not (its fallback disabled),
// an endpoint's 404.
func pathError(ref name.Reference, answers []epAnswer) error {
	e := &PathError{Ref: ref.String()}
	var notFound, fault, upstream error
	for _, a := range answers {
		e.Answers = append(e.Answers, describe(a.ep)+": "+a.err.Error())
		switch {
		case errors.Is(a.err, types.ErrNotFound) || errors.Is(a.err, errBlocked):
			if notFound == nil && !errors.Is(a.err, errBlocked) {
				notFound = a.err
			}
		case fault == nil:
			fault = a.err
		}
		if !a.ep.Mirror {
			upstream = a.err
		}
	}
	switch {
	case len(answers) == 0:
		e.err = fmt.Errorf("the node's configuration names no endpoint to ask for it: %w", types.ErrRegistry)
	case fault != nil:
		e.err = fault
	case upstream != nil && errors.Is(upstream, types.ErrNotFound):
		e.err = upstream
	case upstream == nil && notFound != nil:
		e.err = notFound
	default: // the endpoints asked said 404 or were blocked, the registry among the blocked
		e.err = fmt.Errorf("the node's configuration blocks the registry itself: only it can say the piece is gone: %w", types.ErrRegistry)
	}
	return e
}

// describe names an endpoint as a finding does: its URL, the repository
// asked there, and the ns it is sent.
func describe(ep pullpath.Endpoint) string {
	what := "registry"
	if ep.Mirror {
		what = "mirror"
	}
	s := fmt.Sprintf("%s %s (repository %s", what, ep.URL.Redacted(), ep.Repository)
	if ep.Namespace != "" {
		s += ", ns=" + ep.Namespace
	}
	return s + ")"
}

// answerLog keeps what the endpoints said of each piece, for the findings.
type answerLog struct {
	mu sync.Mutex
	m  map[string][]epAnswer
}

func newAnswerLog() *answerLog { return &answerLog{m: map[string][]epAnswer{}} }

// record keeps the first answers given for one piece.
func (l *answerLog) record(ref name.Reference, answers []epAnswer) {
	if len(answers) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[ref.Name()]; !ok {
		l.m[ref.Name()] = answers
	}
}

// answers returns what the endpoints said of the piece named key
// (repository:tag or repository@digest).
func (l *answerLog) answers(key string) []epAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key]
}

// forgetFaults drops the faults every endpoint's client remembers, and
// the answers logged: the next pass asks again.
func (p *pathReader) forgetFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		c.forgetFaults()
	}
	p.log = newAnswerLog()
}

// counts are the requests of the endpoints with their own transport.
func (p *pathReader) counts() []types.RequestCount {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []types.RequestCount
	for _, c := range p.counters {
		out = append(out, c.counts()...)
	}
	return out
}

// pullPathNotices are the pull path configuration's notices (the parts of
// it not checked, such as mirrors past pullpath.MaxMirrors) as input
// notices of the run.
func (s *Scanner) pullPathNotices() []types.InputError {
	if s.o.pullPath == nil {
		return nil
	}
	var out []types.InputError
	for _, n := range s.o.pullPath.Notices() {
		out = append(out, types.InputError{Source: n.Path, Line: n.Line, Message: n.Message, Notice: true})
	}
	return out
}

// WithPullPathFile is WithPullPath of the configuration at path (see
// pullpath.Load); a file the runtime would reject is an error naming its
// line.
func WithPullPathFile(path string) Option {
	return func(o *options) error {
		cfg, err := pullpath.Load(path)
		if err != nil {
			return fmt.Errorf("--registries-config: %w", err)
		}
		o.pullPath = cfg
		return nil
	}
}
