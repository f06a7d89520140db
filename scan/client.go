package scan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// manifestAccept is every manifest type a node may pull. docker/distribution
// 2.8.3 answers 404 for an OCI index unless its type is accepted.
var manifestAccept = strings.Join([]string{
	ocispec.MediaTypeImageIndex,
	ocispec.MediaTypeImageManifest,
	string(ggcrtypes.DockerManifestList),
	string(ggcrtypes.DockerManifestSchema2),
}, ", ")

// maxManifest bounds a manifest read; the OCI spec suggests registries
// accept at least 4 MiB.
const maxManifest = 4 << 20

// maxRedirects bounds the redirects one request follows (a registry on S3
// or behind a CDN answers blob requests with one).
const maxRedirects = 5

// errTooManyRedirects ends a request that kept being redirected.
var errTooManyRedirects = fmt.Errorf("stopped after %d redirects", maxRedirects)

// client asks registries, once per question: each (registry, repository,
// digest) is fetched at most once per pass however many images share it.
// A fault is kept only until the next pass (see forgetFaults); what the
// registry said (a manifest, a 404) is kept for the Scanner's life.
type client struct {
	o     *options
	pings *pingCache
	sem   chan struct{}
	repos memo[string, *http.Client]
	tags  memo[string, walk.Descriptor]
	mfs   memo[string, walk.Manifest]
	heads memo[string, struct{}] // manifests by digest, HEADed for a cache (see remote.HasManifest)
	blobs memo[string, struct{}]
	// tagLists holds each repository's tag list (see Scanner.Tags).
	tagLists memo[string, []string]
	rt       http.RoundTripper
	limits   *rateLimits
	// at is the endpoint of a node's pull path this client asks instead
	// of each reference's registry (see pathReader); nil for the registry.
	at *endpointAt
}

func newClient(o *options, l layers) *client {
	return &client{o: o, rt: l.rt, pings: l.pings, limits: l.limits, sem: make(chan struct{}, o.concurrency)}
}

// forgetFaults drops every fault the client remembers, so that the next
// question asks the registry again: a fault is never kept for a run.
func (c *client) forgetFaults() {
	fault := func(err error) bool { return err != nil && types.FaultCode(err) != "" }
	c.repos.forget(fault)
	c.tags.forget(fault)
	c.mfs.forget(fault)
	c.heads.forget(fault)
	c.blobs.forget(fault)
	c.tagLists.forget(fault)
	c.pings.m.forget(func(err error) bool { return err != nil })
}

// httpClient returns repo's authenticated client, pinging its registry and
// exchanging credentials the first time. It follows redirects (bounded);
// the auth layer sets credentials only on requests to the registry itself,
// so a redirect to blob storage or a CDN never carries them.
func (c *client) httpClient(ctx context.Context, repo name.Repository) (*http.Client, error) {
	return c.repos.do(ctx, repo.Name(), func() (*http.Client, error) {
		ping := "https://" + repo.RegistryStr() + "/v2/"
		auth, err := c.auth(ctx, repo)
		if err != nil {
			return nil, &RegistryError{Method: http.MethodGet, URL: ping, Detail: fmt.Sprintf("resolving credentials for %s: %v", repo.RegistryStr(), err), Err: types.ErrCredentials}
		}
		var t http.RoundTripper
		err = c.limit(ctx, func(ctx context.Context) error {
			t, err = transport.NewWithContext(ctx, repo.Registry, auth, c.rt, []string{repo.Scope(transport.PullScope)})
			return err
		})
		if err != nil {
			return nil, classify(http.MethodGet, ping, err)
		}
		return &http.Client{Transport: t, CheckRedirect: checkRedirect}, nil
	})
}

func checkRedirect(_ *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return errTooManyRedirects
	}
	return nil
}

// limit runs f holding one of the scan's request slots, under the
// per-request timeout.
func (c *client) limit(ctx context.Context, f func(context.Context) error) error {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.sem }()
	ctx, cancel := context.WithTimeout(ctx, c.o.timeout)
	defer cancel()
	return f(ctx)
}

// do sends one request for a manifest, blob or tag list to repo's registry
// and returns the answer, its request (after any redirect) and up to limit
// bytes of its body. A status other than 200 is an error. A manifest GET
// is a pull: it is sent only within the registry's pull budget (see
// rateLimits), else it fails with ErrPullBudget.
func (c *client) do(ctx context.Context, repo name.Repository, method, kind, ref string, limit int64) (*http.Response, []byte, error) {
	repo, u := c.where(repo, kind, ref)
	hc, err := c.httpClient(ctx, repo)
	if err != nil {
		return nil, nil, err
	}
	var resp *http.Response
	var body []byte
	err = c.limit(ctx, func(ctx context.Context) error {
		if method == http.MethodGet && kind == "manifests" {
			var t *pullTicket
			var why string
			if ctx, t, why = c.limits.reserve(ctx, repo.RegistryStr()); why != "" {
				return &RegistryError{Method: method, URL: redactURL(u), Detail: why, Err: types.ErrPullBudget}
			}
			defer c.limits.release(t)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return err
		}
		if kind == "manifests" {
			req.Header.Set("Accept", manifestAccept)
		}
		resp, err = hc.Do(req)
		if err != nil {
			return classify(method, u, err)
		}
		defer resp.Body.Close()
		c.noteFront(repo.RegistryStr(), resp)
		if resp.StatusCode != http.StatusOK {
			return responseError(method, repo.RegistryStr(), resp)
		}
		if method == http.MethodGet {
			body, err = readBody(method, resp, limit)
		}
		return err
	})
	if err != nil {
		c.o.logger.Debug("registry request failed", "method", method, "url", redactURL(u), "err", err)
		return resp, nil, err
	}
	return resp, body, nil
}

// readBody reads up to limit bytes of a 200 answer: a body cut short is a
// bad response, a longer one over the limit.
func readBody(method string, resp *http.Response, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	u := finalURL(resp, "")
	switch {
	case err != nil:
		return nil, &RegistryError{Method: method, URL: u, Status: resp.StatusCode, Detail: "body cut short: " + err.Error(), Err: types.ErrBadResponse}
	case int64(len(body)) > limit:
		return nil, &RegistryError{Method: method, URL: u, Status: resp.StatusCode, Detail: fmt.Sprintf("body larger than %d bytes", limit), Err: types.ErrLimit}
	}
	return body, nil
}

// resolve returns the descriptor a tag points at, with HEAD, falling back to
// GET only where HEAD is not supported or says no digest.
func (c *client) resolve(ctx context.Context, ref name.Tag) (walk.Descriptor, error) {
	return c.tags.do(ctx, ref.Name(), func() (walk.Descriptor, error) {
		resp, _, err := c.do(ctx, ref.Context(), http.MethodHead, "manifests", ref.TagStr(), 0)
		if err == nil {
			d := walk.Descriptor{Digest: resp.Header.Get("Docker-Content-Digest"), MediaType: mediaType(resp.Header.Get("Content-Type"))}
			if digest.Digest(d.Digest).Validate() == nil {
				return d, nil
			}
		} else if !headUnsupported(err) {
			return walk.Descriptor{}, err
		}
		return c.getTag(ctx, ref)
	})
}

// getTag GETs what a tag points at and hashes it. A body that is not a
// manifest is asked for once more, then it is a bad response.
func (c *client) getTag(ctx context.Context, ref name.Tag) (walk.Descriptor, error) {
	var last error
	for range 2 {
		resp, body, err := c.do(ctx, ref.Context(), http.MethodGet, "manifests", ref.TagStr(), maxManifest)
		if err != nil && !errors.Is(err, types.ErrBadResponse) {
			return walk.Descriptor{}, err
		}
		if err == nil {
			p, perr := walk.Parse(body, mediaType(resp.Header.Get("Content-Type")))
			if perr == nil {
				sum := sha256.Sum256(body)
				d := walk.Descriptor{Digest: "sha256:" + hex.EncodeToString(sum[:]), MediaType: p.MediaType}
				c.mfs.put(ref.Context().Name()+"@"+d.Digest, p)
				return d, nil
			}
			err = &RegistryError{Method: http.MethodGet, URL: finalURL(resp, ref.Name()), Status: resp.StatusCode, Detail: perr.Error(), Err: types.ErrBadResponse}
		}
		last = err
		c.o.logger.Debug("asking again after a bad response", "ref", ref.Name(), "err", err)
	}
	return walk.Descriptor{}, last
}

// finalURL is the redacted URL a response answered (after redirects), or
// what for a caller's transport that does not say.
func finalURL(resp *http.Response, what string) string {
	if resp.Request == nil || resp.Request.URL == nil {
		return what
	}
	return redactURL(resp.Request.URL.String())
}

func headUnsupported(err error) bool {
	re, ok := err.(*RegistryError)
	return ok && (re.Status == http.StatusMethodNotAllowed || re.Status == http.StatusNotImplemented)
}

// manifest GETs a manifest by digest, checks that its bytes hash to it and
// parse as a manifest, and keeps what the walk needs of it. A body that is
// cut short, is not a manifest, or hashes to another digest is asked for
// once more: only bytes that parse and again hash to another digest are a
// digest mismatch; a body that never parses is a bad response.
func (c *client) manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	return c.mfs.do(ctx, repo.Name()+"@"+digest, func() (walk.Manifest, error) {
		f, err := c.fetchManifest(ctx, repo, digest)
		return f.m, err
	})
}

// fetchManifest GETs a manifest by digest, asking once more as manifest says.
func (c *client) fetchManifest(ctx context.Context, repo name.Repository, digest string) (fetched, error) {
	f, err := c.getManifest(ctx, repo, digest)
	if errors.Is(err, types.ErrBadResponse) || errors.Is(err, types.ErrDigestMismatch) {
		c.o.logger.Debug("asking again after a bad response", "repository", repo.Name(), "digest", digest, "err", err)
		f, err = c.getManifest(ctx, repo, digest)
	}
	return f, err
}

// fetched is a manifest as the registry served it: parsed, and its bytes
// with their content type.
type fetched struct {
	m    walk.Manifest
	body []byte
	ct   string
}

// getManifest asks for a manifest by digest once.
func (c *client) getManifest(ctx context.Context, repo name.Repository, want string) (fetched, error) {
	resp, body, err := c.do(ctx, repo, http.MethodGet, "manifests", want, maxManifest)
	if err != nil {
		return fetched{}, err
	}
	fail := func(detail string, sentinel error) (fetched, error) {
		return fetched{}, &RegistryError{Method: http.MethodGet, URL: finalURL(resp, repo.Name()+"@"+want), Status: resp.StatusCode, Detail: detail, Err: sentinel}
	}
	got, err := digestOf(want, body)
	if err != nil {
		return fail(err.Error(), types.ErrRegistry)
	}
	ct := mediaType(resp.Header.Get("Content-Type"))
	p, perr := walk.Parse(body, ct)
	switch {
	case perr != nil && got != want:
		return fail(fmt.Sprintf("%v; the body hashes to %s", perr, got), types.ErrBadResponse)
	case perr != nil:
		return fail(perr.Error(), types.ErrBadResponse)
	case got != want:
		return fail("body hashes to "+got, types.ErrDigestMismatch)
	}
	return fetched{p, body, ct}, nil
}

// maxFirstByte bounds what is read of a ranged blob GET's answer: a
// registry that ignores Range answers 200 with the whole blob, which is
// not read to its end (the connection is dropped instead).
const maxFirstByte = 4 << 10

// firstByte GETs the first byte of a blob (Range: bytes=0-0), as a pull's
// GET is answered: there (200, 206), absent as the registry says (404) or
// as the storage it redirects to itself says (404 with NoSuchKey or
// BlobNotFound), or a fault.
func (c *client) firstByte(ctx context.Context, repo name.Repository, digest string) error {
	repo, u := c.where(repo, "blobs", digest)
	hc, err := c.httpClient(ctx, repo)
	if err != nil {
		return err
	}
	return c.limit(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Range", "bytes=0-0")
		resp, err := hc.Do(req)
		if err != nil {
			return classify(http.MethodGet, u, err)
		}
		defer resp.Body.Close()
		c.noteFront(repo.RegistryStr(), resp)
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent {
			io.CopyN(io.Discard, resp.Body, maxFirstByte)
			return nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		re := responseError(http.MethodGet, repo.RegistryStr(), resp)
		if re.storage == "" {
			return re
		}
		if m := noSuchObject.FindSubmatch(body); m != nil {
			re.Err = types.ErrNotFound
			re.Detail = fmt.Sprintf("the registry redirected to its storage at %s, which has no such object (%s)", re.storage, m[1])
		}
		return re
	})
}

// digestOf hashes body with the algorithm of the digest it was asked by
// (sha256, sha384 or sha512, as the OCI spec registers them). Another
// algorithm is an error: it proves nothing about the image either way.
func digestOf(want string, body []byte) (string, error) {
	alg, _, _ := strings.Cut(want, ":")
	var h hash.Hash
	switch alg {
	case "sha256":
		h = sha256.New()
	case "sha384":
		h = sha512.New384()
	case "sha512":
		h = sha512.New()
	default:
		return "", fmt.Errorf("unsupported digest algorithm %q", alg)
	}
	h.Write(body)
	return alg + ":" + hex.EncodeToString(h.Sum(nil)), nil
}

func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.TrimSpace(ct)
}

// memo runs each key's function once and hands every caller its result.
// A result that the caller's context cut short is not kept: it says nothing
// about the registry, and a Scanner outlives the contexts it is given.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*call[V]
}

type call[V any] struct {
	done      chan struct{}
	v         V
	err       error
	abandoned bool // f failed after its caller's ctx ended; not kept
}

// do returns k's result, running f (which works under ctx) if no caller has
// yet. A caller whose ctx ends while it waits for another's f returns at once.
func (m *memo[K, V]) do(ctx context.Context, k K, f func() (V, error)) (V, error) {
	for {
		m.mu.Lock()
		if m.m == nil {
			m.m = map[K]*call[V]{}
		}
		if c, ok := m.m[k]; ok {
			m.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				var zero V
				return zero, ctx.Err()
			}
			if c.abandoned && ctx.Err() == nil {
				continue // the caller that ran f gave up; ask again
			}
			return c.v, c.err
		}
		c := &call[V]{done: make(chan struct{})}
		m.m[k] = c
		m.mu.Unlock()
		c.v, c.err = f()
		if c.err != nil && ctx.Err() != nil {
			c.abandoned = true
			m.mu.Lock()
			if m.m[k] == c {
				delete(m.m, k)
			}
			m.mu.Unlock()
		}
		close(c.done)
		return c.v, c.err
	}
}

// forget drops the finished results whose error drop matches, so that
// the next caller runs f again. Calls still running are kept.
func (m *memo[K, V]) forget(drop func(error) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, c := range m.m {
		select {
		case <-c.done:
			if drop(c.err) {
				delete(m.m, k)
			}
		default:
		}
	}
}

// peek returns k's result if a call for it has finished, without running
// or waiting for one.
func (m *memo[K, V]) peek(k K) (V, bool, error) {
	m.mu.Lock()
	c, ok := m.m[k]
	m.mu.Unlock()
	if ok {
		select {
		case <-c.done:
			return c.v, true, c.err
		default:
		}
	}
	var zero V
	return zero, false, nil
}

// put stores a result that another call produced on its way.
func (m *memo[K, V]) put(k K, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[K]*call[V]{}
	}
	if _, ok := m.m[k]; !ok {
		c := &call[V]{done: make(chan struct{}), v: v}
		close(c.done)
		m.m[k] = c
	}
}
