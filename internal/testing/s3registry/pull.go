package s3registry

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Pull does what a node pulling ref on every platform would: it resolves
// the tag, fetches the index and every child manifest, and reads every
// config and layer blob to the end, following the blob redirects (with
// go-containerregistry, which verifies each blob's digest). It returns every
// failure joined, or nil when all of it pulls. It is the tests' oracle of
// what a node could no longer pull, independent of regcheck.
func (r *Registry) Pull(ctx context.Context, ref string) error {
	tag, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(r.Auth()), remote.WithTransport(r.Transport())}
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		return err
	}
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return err
		}
		return pullImage(ref, img)
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var errs []error
	for _, child := range m.Manifests {
		img, err := remote.Image(tag.Context().Digest(child.Digest.String()), opts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("child %s: %w", child.Digest, err))
			continue
		}
		errs = append(errs, pullImage(child.Digest.String(), img))
	}
	return errors.Join(errs...)
}

func pullImage(what string, img v1.Image) error {
	var errs []error
	if _, err := img.RawConfigFile(); err != nil {
		errs = append(errs, fmt.Errorf("%s: config: %w", what, err))
	}
	layers, err := img.Layers()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("%s: layers: %w", what, err))...)
	}
	for _, l := range layers {
		d, _ := l.Digest()
		rc, err := l.Compressed()
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			if cerr := rc.Close(); err == nil {
				err = cerr // the digest is checked on Close
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: layer %s: %w", what, d, err))
		}
	}
	return errors.Join(errs...)
}
