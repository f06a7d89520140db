package credprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/runtime/schema"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/regcheck/regcheck/imageref"
)

// Providers are the credential provider plugins of a kubelet's config, in
// its order. It is an authn.Keychain (and authn.ContextKeychain) for
// authn.NewMultiKeychain: an image no provider gives credentials for
// resolves to authn.Anonymous, so the next keychain is asked; a provider
// that fails, when none gives credentials, is an error wrapping
// types.ErrCredentials, which stops a multi keychain. Safe for concurrent
// use.
type Providers struct {
	list []*provider
	opts *options
}

var (
	_ authn.Keychain        = (*Providers)(nil)
	_ authn.ContextKeychain = (*Providers)(nil)
)

// provider is one plugin with its cache.
type provider struct {
	name        string
	bin         string
	args        []string
	env         []string // NAME=VALUE, after the process's own
	apiVersion  string
	gv          schema.GroupVersion
	matchImages []string
	defaultTTL  time.Duration
	// skip: tokenAttributes.requireServiceAccount is true. regcheck pulls
	// for no pod, and the kubelet does not run such a plugin for a pod
	// without a service account.
	skip bool

	timeout time.Duration
	now     func() time.Time
	logger  *slog.Logger
	cache   *cache
	group   singleflight.Group

	mu     sync.Mutex
	failed map[string]*PluginError // by matchImages pattern: the run's first failure
	gates  map[string]gate         // by pattern: its first run
}

// gate is a pattern's first run: the image it is for, and a channel
// closed once it has ended.
type gate struct {
	image string
	done  chan struct{}
}

func newProvider(s source, binDir string, o *options) (*provider, error) {
	bin, err := lookPlugin(binDir, s)
	if err != nil {
		return nil, err
	}
	p := &provider{
		name:        s.Name,
		bin:         bin,
		args:        s.Args,
		apiVersion:  s.APIVersion,
		gv:          pluginAPIVersions[s.APIVersion],
		matchImages: s.MatchImages,
		defaultTTL:  s.DefaultCacheDuration.Duration,
		timeout:     o.timeout,
		now:         o.now,
		logger:      o.logger,
		cache:       newCache(o.now),
		failed:      map[string]*PluginError{},
		gates:       map[string]gate{},
	}
	for _, e := range s.Env {
		p.env = append(p.env, e.Name+"="+e.Value)
	}
	if t := s.TokenAttributes; t != nil && t.RequireServiceAccount != nil && *t.RequireServiceAccount {
		p.skip = true
	}
	return p, nil
}

// Resolve implements authn.Keychain; see ResolveContext.
func (ps *Providers) Resolve(r authn.Resource) (authn.Authenticator, error) {
	return ps.ResolveContext(context.Background(), r)
}

// ResolveContext implements authn.ContextKeychain: the first credential
// Lookup gives for the resource's repository, else authn.Anonymous.
func (ps *Providers) ResolveContext(ctx context.Context, r authn.Resource) (authn.Authenticator, error) {
	creds, err := ps.Lookup(ctx, imageOf(r))
	if err != nil {
		return nil, err
	}
	if len(creds) == 0 {
		return authn.Anonymous, nil
	}
	return creds[0], nil
}

// Lookup returns, best first, every credential the providers give for
// image, a repository without tag or digest ("registry.example.com/team/app",
// "docker.io/library/nginx"), as the kubelet orders them: it pulls with
// each in turn and stops at the first that works. Each provider whose
// matchImages match the image is asked (from its cache, else by running
// it). A provider that fails is logged and skipped, as the kubelet skips
// it; only when no provider gave a credential is the failure returned,
// wrapping types.ErrCredentials. No match gives none and no error.
func (ps *Providers) Lookup(ctx context.Context, image string) ([]*Credential, error) {
	var k keyring
	var errs []error
	for _, p := range ps.list {
		pattern, ok := p.wants(image)
		if !ok {
			continue
		}
		auth, err := p.provide(ctx, image, pattern)
		if err != nil {
			p.logger.Warn("credential provider failed", "provider", p.name, "image", image, "err", err)
			errs = append(errs, err)
			continue
		}
		k.add(p.name, auth)
	}
	creds := k.lookup(image)
	if len(creds) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return creds, nil
}

// String lists the providers and what they match; never their env, which
// may hold secrets.
func (ps *Providers) String() string {
	parts := make([]string, 0, len(ps.list))
	for _, p := range ps.list {
		parts = append(parts, fmt.Sprintf("%s (%s)", p.name, strings.Join(p.matchImages, ", ")))
	}
	return "credential providers: " + strings.Join(parts, "; ")
}

// wants reports whether the provider is asked for image, and the first
// of its matchImages that matches it.
func (p *provider) wants(image string) (string, bool) {
	for _, m := range p.matchImages {
		if matches(m, image) {
			if p.skip {
				p.logger.Debug("credential provider needs a service account token, skipped", "provider", p.name, "image", image)
				return "", false
			}
			return m, true
		}
	}
	return "", false
}

// failure is the run's first failure of the plugin for an image pattern
// matches, as a failure for image; nil when it has not failed.
func (p *provider) failure(pattern, image string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, ok := p.failed[pattern]
	if !ok {
		return nil
	}
	return &PluginError{Provider: p.name, Image: image, StderrBytes: first.StderrBytes,
		Err: fmt.Errorf("not run again for %q in this run: it failed for %s: %w", pattern, first.Image, first.Err)}
}

// gate returns the channel closed once pattern's first run has ended,
// and whether a lookup of image waits for it: it does when that run is
// for another image. With no run for pattern yet, the caller's is the
// first.
func (p *provider) gate(pattern, image string) (<-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g, ok := p.gates[pattern]; ok {
		return g.done, g.image != image
	}
	g := gate{image: image, done: make(chan struct{})}
	p.gates[pattern] = g
	return g.done, false
}

// open closes pattern's gate, once: its first run has ended.
func (p *provider) open(pattern string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.gates[pattern]
	if !ok {
		return
	}
	select {
	case <-g.done:
	default:
		close(g.done)
	}
}

// fail keeps the plugin's first failure for pattern.
func (p *provider) fail(pattern string, err error) {
	var pe *PluginError
	if !errors.As(err, &pe) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.failed[pattern]; !ok {
		p.failed[pattern] = pe
	}
}

// provide returns the provider's auth map for image, cached or from one
// run of the plugin shared by concurrent callers. The run is not cut
// short by one caller's cancellation (another may wait for it); the
// timeout bounds it. Once the plugin failed for an image that pattern
// (the matchImages entry image matched) matches, it is not run again for
// that pattern in this run: each image gets the first failure, rather
// than each waiting out its own timeout (a negative cache).
func (p *provider) provide(ctx context.Context, image, pattern string) (map[string]credentialproviderv1.AuthConfig, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("credential provider %q for %s: %w", p.name, image, err)
	}
	if auth, ok := p.cache.get(image); ok {
		return auth, nil
	}
	if err := p.failure(pattern, image); err != nil {
		return nil, err
	}
	if done, wait := p.gate(pattern, image); wait {
		// Wait for the pattern's first run (for another image; the same
		// image's joins it below): if it fails, so does this one, without
		// a run of its own.
		select {
		case <-done:
		case <-ctx.Done():
			return nil, fmt.Errorf("credential provider %q for %s: %w", p.name, image, ctx.Err())
		}
		if err := p.failure(pattern, image); err != nil {
			return nil, err
		}
		if auth, ok := p.cache.get(image); ok {
			return auth, nil
		}
	}
	ch := p.group.DoChan(image, func() (any, error) {
		auth, err := p.fetch(context.WithoutCancel(ctx), image)
		if err != nil {
			p.fail(pattern, err)
		}
		p.open(pattern)
		return auth, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(map[string]credentialproviderv1.AuthConfig), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("credential provider %q for %s: %w", p.name, image, ctx.Err())
	}
}

// fetch runs the plugin and caches its response as the response says.
func (p *provider) fetch(ctx context.Context, image string) (map[string]credentialproviderv1.AuthConfig, error) {
	start := p.now()
	resp, err := p.exec(ctx, image)
	if err != nil {
		return nil, err
	}
	key, ok := cacheKey(resp.CacheKeyType, image)
	if !ok {
		return nil, &PluginError{Provider: p.name, Image: image,
			Err: fmt.Errorf("response cacheKeyType %q, want Image, Registry or Global", resp.CacheKeyType)}
	}
	auth := resp.Auth
	if auth == nil {
		auth = map[string]credentialproviderv1.AuthConfig{}
	}
	expires, cached := expiry(p.now(), resp, p.defaultTTL)
	if cached {
		p.cache.put(key, auth, expires)
	}
	p.logger.Debug("credential provider ran", "provider", p.name, "image", image,
		"cacheKeyType", string(resp.CacheKeyType), "cached", cached, "keys", len(auth), "elapsed", p.now().Sub(start))
	return auth, nil
}

// imageOf is the image string the kubelet passes to plugins and matches
// against, spelled by imageref (KubeletKey): the repository, without tag
// or digest, with Docker Hub as docker.io; a bare registry is its host.
func imageOf(r authn.Resource) string {
	switch n := r.(type) {
	case name.Reference:
		return imageref.FromName(n).KubeletKey()
	case name.Repository:
		return imageref.FromRepository(n).KubeletKey()
	case name.Registry:
		return imageref.Registry(n.RegistryStr())
	}
	return r.String()
}
