package walk

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
)

// RawReader is a Reader that can also hand over a manifest's bytes as
// stored, and say whether a manifest is there without reading it: what a
// cache layered over a Reader needs. The walker itself never asks for it.
type RawReader interface {
	Reader
	// RawManifest returns the bytes of the manifest with the digest,
	// checked to hash to it and to parse (see Parse), and the store's
	// content type for them ("" when it says none).
	RawManifest(ctx context.Context, repo name.Repository, digest string) (body []byte, contentType string, err error)
	// HasManifest reports whether the repository still serves the manifest
	// with the digest, as Blob does for a blob: nil, an error wrapping
	// types.ErrNotFound, or a fault.
	HasManifest(ctx context.Context, repo name.Repository, digest string) error
}
