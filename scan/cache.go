package scan

import (
	"fmt"

	"github.com/regcheck/regcheck/cache"
	"github.com/regcheck/regcheck/walk"
)

// cacheConfig is where WithCache keeps manifests, and how many bytes of
// them at most; a zero value keeps none.
type cacheConfig struct {
	dir      string
	maxBytes int64
}

// WithCache keeps the manifests a scan reads in dir (created mode 0700;
// entries 0600), by digest, at most about maxBytes of them, least recently
// used out, and reads them from there in later scans and other processes
// (see package cache). Whether a repository still serves a manifest is
// still asked every pass, with a HEAD by digest, which counts against no
// registry's pull limit; only its bytes are not fetched again. Tags and
// blobs are never cached. A folder that cannot be made is logged, and the
// scan runs without it. With WithReader there is no cache. By default a
// Scanner keeps none.
func WithCache(dir string, maxBytes int64) Option {
	return func(o *options) error {
		if dir == "" || maxBytes <= 0 {
			return fmt.Errorf("manifest cache: want a folder and a positive size, got %q and %d bytes", dir, maxBytes)
		}
		o.cache = cacheConfig{dir: dir, maxBytes: maxBytes}
		return nil
	}
}

// cached returns the registry reader under the manifest cache, or as it is
// when there is none (or WithReader replaces it), or its folder cannot be
// made.
func cached(o *options, r remote) walk.Reader {
	if o.cache.dir == "" || o.reader != nil {
		return r
	}
	cr, err := cache.New(r, o.cache.dir, o.cache.maxBytes, cache.WithLogger(o.logger))
	if err != nil {
		o.logger.Warn("scanning without the manifest cache", "err", err)
		return r
	}
	return cr
}
