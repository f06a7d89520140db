package walk

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
)

// Reader is where a walk reads an image from. Each method returns nil, an
// error wrapping types.ErrNotFound when the store itself proves the thing
// absent, types.ErrDigestMismatch for bytes that hash to another digest,
// or any other error: a fault, which proves nothing about the image.
type Reader interface {
	// Resolve returns what a tag points at now.
	Resolve(ctx context.Context, repo name.Repository, tag string) (Descriptor, error)
	// Manifest returns the manifest with the digest, parsed (see Parse).
	Manifest(ctx context.Context, repo name.Repository, digest string) (Manifest, error)
	// Blob reports whether the blob is there.
	Blob(ctx context.Context, repo name.Repository, digest string) error
}

// Descriptor is what a tag points at: a digest, and the media type when
// the store says it ("" when it does not).
type Descriptor struct {
	Digest    string
	MediaType string
}
