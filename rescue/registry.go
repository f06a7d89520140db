package rescue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/regcheck/regcheck/types"
)

// Registry is another registry that may still hold the digests: a mirror,
// a pull-through cache, CI's registry. It serves an image's repository
// under the same path, on its own host, below an optional prefix.
type Registry struct {
	host   name.Registry
	prefix string
	o      *options
}

var _ Source = (*Registry)(nil)

// NewRegistry reads HOST[/PREFIX]: repository r of the image being rescued
// is looked for at HOST/PREFIX/r. Loopback hosts, and hosts given in
// insecure, are asked over plain HTTP when HTTPS fails.
func NewRegistry(spec string, insecure []string, opts ...Option) (*Registry, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	host, prefix, _ := strings.Cut(strings.TrimSuffix(spec, "/"), "/")
	var nopts []name.Option
	for _, h := range insecure {
		if h == host {
			nopts = append(nopts, name.Insecure)
		}
	}
	reg, err := name.NewRegistry(host, append(nopts, name.StrictValidation)...)
	if err != nil || host == "" {
		return nil, fmt.Errorf("registry source %q: want HOST[:PORT][/PREFIX]", spec)
	}
	if prefix != "" {
		if _, err := name.NewRepository(host+"/"+prefix+"/x", name.StrictValidation); err != nil {
			return nil, fmt.Errorf("registry source %q: prefix %q is not a repository path", spec, prefix)
		}
	}
	return &Registry{host: reg, prefix: prefix, o: o}, nil
}

func (r *Registry) String() string {
	if r.prefix == "" {
		return "registry " + r.host.RegistryStr()
	}
	return "registry " + r.host.RegistryStr() + "/" + r.prefix
}

// repo is where the source keeps the image's repository.
func (r *Registry) repo(of name.Repository) name.Repository {
	path := of.RepositoryStr()
	if r.prefix != "" {
		path = r.prefix + "/" + path
	}
	return r.host.Repo(path)
}

// Open fetches a manifest (GET …/manifests/D) or a blob (GET …/blobs/D).
func (r *Registry) Open(ctx context.Context, w Want) (io.ReadCloser, error) {
	ref := r.repo(w.Repo).Digest(w.Digest)
	opts := append(r.o.remote(), remote.WithContext(ctx))
	if w.Manifest {
		d, err := remote.Get(ref, opts...)
		if err != nil {
			return nil, r.absent(ref, err)
		}
		return io.NopCloser(bytes.NewReader(d.Manifest)), nil
	}
	l, err := remote.Layer(ref, opts...)
	if err != nil {
		return nil, r.absent(ref, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, r.absent(ref, err)
	}
	return rc, nil
}

// absent wraps types.ErrNotFound around the registry's own 404 (manifest
// or blob unknown, or a repository it does not have); anything else is a
// fault.
func (r *Registry) absent(ref name.Digest, err error) error {
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s does not hold %s: %w", r, ref, types.ErrNotFound)
	}
	return fmt.Errorf("%s: reading %s: %w", r, ref, err)
}
