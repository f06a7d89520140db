package scan

import (
	"fmt"

	"github.com/regcheck/regcheck/cache"
	"github.com/regcheck/regcheck/walk"
)

// cacheConfig is where WithCache keeps manifests, and how many bytes of
// them at most; a zero value keeps none. reverify is WithCacheReverify's
// share, nil for the cache's default.
type cacheConfig struct {
	dir      string
	maxBytes int64
	reverify *cache.Share
}

// WithCache keeps the manifests a scan reads in dir (created mode 0700;
// entries 0600), by digest, at most about maxBytes of them, least recently
// used out, and reads them from there in later scans and other processes
// (see package cache). Whether a repository still serves a manifest is
// still asked every pass, with a HEAD by digest, which counts against no
// registry's pull limit; only its bytes are not fetched again, but for a
// share of them in turn (see WithCacheReverify). Tags and
// blobs are never cached. A folder that cannot be made is logged, and the
// scan runs without it. With WithReader there is no cache. By default a
// Scanner keeps none.
func WithCache(dir string, maxBytes int64) Option {
	return func(o *options) error {
		if dir == "" || maxBytes <= 0 {
			return fmt.Errorf("manifest cache: want a folder and a positive size, got %q and %d bytes", dir, maxBytes)
		}
		o.cache.dir, o.cache.maxBytes = dir, maxBytes
		return nil
	}
}

// WithCacheReverify has each Scanner (each CLI run) read share of the
// cached manifests it uses from the registry again, each in its turn,
// with a GET whose bytes are checked against the digest as on a first
// read; the others are only HEADed. A registry, or a proxy before it, that
// now serves other bytes under a cached digest is then a digest mismatch
// on a warm run too, and the entry is deleted; a fault is a fault, and the
// entry stays. The turn is counted in the cache folder, so a manifest that
// every run uses is read again at least once in any share.Runs() runs (31
// for 1/30). The zero Share reads none again. The default is
// cache.DefaultReverify, 1/30. Without WithCache it does nothing.
func WithCacheReverify(share cache.Share) Option {
	return func(o *options) error {
		if err := share.Check(); err != nil {
			return fmt.Errorf("manifest cache: %w", err)
		}
		o.cache.reverify = &share
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
	copts := []cache.Option{cache.WithLogger(o.logger)}
	if o.cache.reverify != nil {
		copts = append(copts, cache.WithReverify(*o.cache.reverify))
	}
	cr, err := cache.New(r, o.cache.dir, o.cache.maxBytes, copts...)
	if err != nil {
		o.logger.Warn("scanning without the manifest cache", "err", err)
		return r
	}
	return cr
}
