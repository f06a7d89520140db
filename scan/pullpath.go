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
// endpoint serves it and the registry itself (or, where the node never
// asks it, every endpoint that answered) says it is not there. The
// manifest cache is not used on a pull path.
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
	sticky   map[string]string  // containers/image: the endpoint that resolved each repository
	log      map[string][]epAnswer
}

var _ walk.Reader = (*pathReader)(nil)

func newPathReader(o *options, l layers, sem chan struct{}) *pathReader {
	return &pathReader{cfg: o.pullPath, fb: o.pullPath.Fallback(), o: o, l: l, sem: sem,
		clients: map[string]*client{}, sticky: map[string]string{}, log: map[string][]epAnswer{}}
}

// Resolve asks the endpoints that resolve tags, in order.
func (p *pathReader) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	ref := repo.Tag(tag)
	return askPath(ctx, p, ref, pullpath.StepResolve, func(c *client) (walk.Descriptor, error) { return c.resolve(ctx, ref) })
}

// Manifest asks the endpoints that serve content for a manifest by digest.
func (p *pathReader) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	return askPath(ctx, p, repo.Digest(digest), pullpath.StepFetch, func(c *client) (walk.Manifest, error) { return c.manifest(ctx, repo, digest) })
}

// Blob asks the endpoints that serve content for a blob.
func (p *pathReader) Blob(ctx context.Context, repo name.Repository, digest string) error {
	_, err := askPath(ctx, p, repo.Digest(digest), pullpath.StepFetch, func(c *client) (struct{}, error) { return struct{}{}, c.blob(ctx, repo, digest) })
	return err
}

// askPath asks ref's endpoints in the runtime's order until one serves
// it, as the runtime's fallback table says, and logs every answer.
func askPath[T any](ctx context.Context, p *pathReader, ref name.Reference, step pullpath.Step, ask func(*client) (T, error)) (T, error) {
	var zero T
	eps, err := p.cfg.Endpoints(ref)
	if err != nil {
		return zero, &RegistryError{Method: http.MethodGet, URL: ref.Name(), Detail: "the node's pull path: " + err.Error(), Err: types.ErrRegistry}
	}
	var answers []epAnswer
	defer func() { p.record(ref, answers) }()
	for _, ep := range p.asked(ref, step, eps) {
		if ep.Blocked {
			answers = append(answers, epAnswer{ep, errBlocked})
			continue
		}
		c, err := p.client(ep)
		if err == nil {
			var v T
			if v, err = ask(c); err == nil {
				answers = append(answers, epAnswer{ep, nil})
				p.served(ref, step, ep)
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

// errBlocked is an endpoint the runtime refuses without a request.
var errBlocked = errors.New("blocked by the configuration: the runtime makes no request to it")

// asked filters eps to those the runtime asks at step: for a tag, those
// that resolve; for content, those that pull, or with a sticky runtime
// (containers/image) the one that resolved the repository.
func (p *pathReader) asked(ref name.Reference, step pullpath.Step, eps []pullpath.Endpoint) []pullpath.Endpoint {
	var out []pullpath.Endpoint
	p.mu.Lock()
	stuck := p.sticky[ref.Context().Name()]
	p.mu.Unlock()
	for _, ep := range eps {
		switch {
		case step == pullpath.StepResolve && !ep.Resolve, step == pullpath.StepFetch && !ep.Pull:
			continue
		case step == pullpath.StepFetch && p.fb.Sticky && stuck != "" && endpointKey(ep) != stuck:
			continue
		}
		out = append(out, ep)
	}
	return out
}

// served remembers, for a sticky runtime, the endpoint that resolved.
func (p *pathReader) served(ref name.Reference, step pullpath.Step, ep pullpath.Endpoint) {
	if !p.fb.Sticky {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.sticky[ref.Context().Name()]; !ok || step == pullpath.StepResolve {
		p.sticky[ref.Context().Name()] = endpointKey(ep)
	}
}

// client returns the client of one endpoint, made the first time.
func (p *pathReader) client(ep pullpath.Endpoint) (*client, error) {
	k := endpointKey(ep)
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.clients[k]; c != nil {
		return c, nil
	}
	c, n, err := endpointClient(p.o, p.l, p.sem, ep)
	if err != nil {
		return nil, err
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

// pathError judges answers, none of which served. Absence needs the
// registry's own 404 where the node asks the registry, and, where it
// does not (its fallback disabled), a 404 from an endpoint and a fault
// from none: a mirror that could not be asked may hold the piece.
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
		e.err = fmt.Errorf("no endpoint of the node's configuration is asked for it: %w", types.ErrNotFound)
	case upstream != nil && errors.Is(upstream, types.ErrNotFound):
		e.err = upstream
	case upstream == nil && fault == nil && notFound != nil:
		e.err = notFound
	case fault != nil:
		e.err = fault
	default: // every endpoint blocked: the runtime refuses the pull
		e.err = fmt.Errorf("every endpoint the node would ask is blocked: %w", types.ErrNotFound)
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

// record keeps what the endpoints said of one piece, for the findings.
func (p *pathReader) record(ref name.Reference, answers []epAnswer) {
	if len(answers) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.log[ref.Name()]; !ok {
		p.log[ref.Name()] = answers
	}
}

// answers returns what the endpoints said of the piece named key
// (repository:tag or repository@digest).
func (p *pathReader) answers(key string) []epAnswer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log[key]
}

// forgetFaults drops the faults every endpoint's client remembers, and
// the answers logged: the next pass asks again.
func (p *pathReader) forgetFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		c.forgetFaults()
	}
	p.log = map[string][]epAnswer{}
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
