package scan

import (
	"context"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/walk"
)

var _ walk.RawReader = remote{}

// RawManifest GETs a manifest's bytes, with the checks and the second ask
// of Manifest, for a cache to keep. It is not remembered in memory (the
// cache has the bytes); that it was served is (see HasManifest).
func (r remote) RawManifest(ctx context.Context, repo name.Repository, digest string) ([]byte, string, error) {
	f, err := r.c.fetchManifest(ctx, repo, digest)
	if err != nil {
		return nil, "", err
	}
	r.c.heads.put(repo.Name()+"@"+digest, struct{}{})
	return f.body, f.ct, nil
}

// HasManifest HEADs a manifest by digest, once per pass like every
// question: a cached manifest's presence is still the registry's to say,
// and a HEAD counts against no pull limit. A registry that does not
// support HEAD, and a host whose HEAD proves nothing (see
// WithBlobGetRegistries), is asked with GET (see client.manifest): a warm
// cache keeps no HEAD-only proof from such a host.
func (r remote) HasManifest(ctx context.Context, repo name.Repository, digest string) error {
	_, err := r.c.heads.do(ctx, repo.Name()+"@"+digest, func() (struct{}, error) {
		at, _ := r.c.where(repo, "manifests", digest)
		if r.c.o.getHosts.has(at.RegistryStr()) {
			_, err := r.c.manifest(ctx, repo, digest)
			return struct{}{}, err
		}
		_, _, err := r.c.do(ctx, repo, http.MethodHead, "manifests", digest, 0)
		if headUnsupported(err) || err == nil && r.c.o.getHosts.has(at.RegistryStr()) {
			_, err = r.c.manifest(ctx, repo, digest)
		}
		return struct{}{}, err
	})
	return err
}
