package scan

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// manifestAccept is every manifest type a node may pull. docker/distribution
// 2.8.3 answers 404 for an OCI index unless its type is accepted.
var manifestAccept = strings.Join([]string{
	ocispec.MediaTypeImageIndex,
	ocispec.MediaTypeImageManifest,
	string(types.DockerManifestList),
	string(types.DockerManifestSchema2),
}, ", ")

// maxManifest bounds a manifest read; the OCI spec suggests registries
// accept at least 4 MiB.
const maxManifest = 4 << 20

// client asks registries, once per question: each (registry, repository,
// digest) is fetched at most once per scan however many images share it.
type client struct {
	o     *options
	rt    http.RoundTripper
	sem   chan struct{}
	repos memo[string, http.RoundTripper]
	tags  memo[string, descriptor]
	mfs   memo[string, manifestBytes]
	blobs memo[string, struct{}]
	// tagLists holds each repository's tag list (see Scanner.Tags).
	tagLists memo[string, []string]
}

type descriptor struct {
	Digest    string
	MediaType string
}

type manifestBytes struct {
	Body      []byte
	MediaType string
}

func newClient(o *options, rt http.RoundTripper) *client {
	return &client{o: o, rt: rt, sem: make(chan struct{}, o.concurrency)}
}

// transport returns repo's authenticated transport, pinging its registry
// and exchanging credentials the first time.
func (c *client) transport(ctx context.Context, repo name.Repository) (http.RoundTripper, error) {
	return c.repos.do(ctx, repo.Name(), func() (http.RoundTripper, error) {
		auth, err := authn.Resolve(ctx, c.o.keychain, repo.Registry)
		if err != nil {
			return nil, fmt.Errorf("resolving credentials for %s: %w", repo.RegistryStr(), err)
		}
		var t http.RoundTripper
		err = c.limit(ctx, func(ctx context.Context) error {
			t, err = transport.NewWithContext(ctx, repo.Registry, auth, c.rt, []string{repo.Scope(transport.PullScope)})
			return err
		})
		if err != nil {
			return nil, classify(http.MethodGet, "https://"+repo.RegistryStr()+"/v2/", err)
		}
		return t, nil
	})
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

// do sends one request to repo's registry and returns the status, headers
// and up to limit bytes of body; a status other than 200 is an error.
func (c *client) do(ctx context.Context, repo name.Repository, method, kind, ref string, limit int64) (*http.Response, []byte, error) {
	u := fmt.Sprintf("%s://%s/v2/%s/%s/%s", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr(), kind, ref)
	t, err := c.transport(ctx, repo)
	if err != nil {
		return nil, nil, err
	}
	var resp *http.Response
	var body []byte
	err = c.limit(ctx, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return err
		}
		if kind == "manifests" {
			req.Header.Set("Accept", manifestAccept)
		}
		resp, err = t.RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := transport.CheckError(resp, http.StatusOK); err != nil {
			return err
		}
		if method == http.MethodGet {
			body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
			if err != nil {
				return err
			}
			if int64(len(body)) > limit {
				return fmt.Errorf("manifest larger than %d bytes", limit)
			}
		}
		return nil
	})
	if err != nil {
		c.o.logger.Debug("registry request failed", "method", method, "url", redactURL(u), "err", err)
		return resp, nil, classify(method, u, err)
	}
	return resp, body, nil
}

// resolve returns the descriptor a tag points at, with HEAD, falling back to
// GET only where HEAD is not supported.
func (c *client) resolve(ctx context.Context, ref name.Tag) (descriptor, error) {
	return c.tags.do(ctx, ref.Name(), func() (descriptor, error) {
		resp, _, err := c.do(ctx, ref.Context(), http.MethodHead, "manifests", ref.TagStr(), 0)
		if err == nil {
			d := descriptor{Digest: resp.Header.Get("Docker-Content-Digest"), MediaType: mediaType(resp.Header.Get("Content-Type"))}
			if strings.HasPrefix(d.Digest, "sha256:") {
				return d, nil
			}
		} else if !headUnsupported(err) {
			return descriptor{}, err
		}
		// No HEAD, or a HEAD without the digest: GET and hash the bytes.
		resp, body, err := c.do(ctx, ref.Context(), http.MethodGet, "manifests", ref.TagStr(), maxManifest)
		if err != nil {
			return descriptor{}, err
		}
		sum := sha256.Sum256(body)
		d := descriptor{Digest: "sha256:" + hex.EncodeToString(sum[:]), MediaType: mediaType(resp.Header.Get("Content-Type"))}
		c.mfs.put(ref.Context().Name()+"@"+d.Digest, manifestBytes{Body: body, MediaType: d.MediaType})
		return d, nil
	})
}

func headUnsupported(err error) bool {
	re, ok := err.(*RegistryError)
	return ok && (re.Status == http.StatusMethodNotAllowed || re.Status == http.StatusNotImplemented)
}

// manifest GETs a manifest by digest and checks that its bytes hash to it.
func (c *client) manifest(ctx context.Context, repo name.Repository, digest string) (manifestBytes, error) {
	return c.mfs.do(ctx, repo.Name()+"@"+digest, func() (manifestBytes, error) {
		resp, body, err := c.do(ctx, repo, http.MethodGet, "manifests", digest, maxManifest)
		if err != nil {
			return manifestBytes{}, err
		}
		// A caller's transport need not set resp.Request.
		u := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr(), digest)
		if resp.Request != nil && resp.Request.URL != nil {
			u = resp.Request.URL.String()
		}
		got, err := digestOf(digest, body)
		if err != nil {
			return manifestBytes{}, &RegistryError{Method: http.MethodGet, URL: redactURL(u), Status: resp.StatusCode, Detail: err.Error(), Err: ErrRegistry}
		}
		if got != digest {
			return manifestBytes{}, &RegistryError{Method: http.MethodGet, URL: redactURL(u), Status: resp.StatusCode,
				Detail: fmt.Sprintf("body hashes to %s", got), Err: ErrDigestMismatch}
		}
		return manifestBytes{Body: body, MediaType: mediaType(resp.Header.Get("Content-Type"))}, nil
	})
}

// blob HEADs a blob by digest.
func (c *client) blob(ctx context.Context, repo name.Repository, digest string) error {
	_, err := c.blobs.do(ctx, repo.Name()+"@"+digest, func() (struct{}, error) {
		_, _, err := c.do(ctx, repo, http.MethodHead, "blobs", digest, 0)
		return struct{}{}, err
	})
	return err
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
