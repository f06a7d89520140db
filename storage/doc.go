// Package storage reads a distribution registry's filesystem storage (the
// docker/registry/v2 tree) without writing to it, and serves it as a
// walk.Reader: what a registry of either release line would serve from it,
// now or once a garbage collection's deletions are removed (Without).
package storage
