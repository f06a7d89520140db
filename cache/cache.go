package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	// The digest algorithms a manifest may be named by (go-digest links
	// none of them itself).
	_ "crypto/sha256"
	_ "crypto/sha512"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/singleflight"

	"github.com/regcheck/regcheck/internal/atomicfile"
	"github.com/regcheck/regcheck/walk"
)

// header starts every entry, followed by the content type and a newline,
// then the manifest's bytes. An entry written in another format fails to
// decode, and is deleted and fetched again like a corrupt one.
const header = "regcheck-manifest/v1 "

// maxEntry bounds an entry read back: the 4 MiB manifests a registry
// client reads, plus the header line. Anything longer is corrupt.
const maxEntry = 4<<20 + 1<<10

// Reader is a walk.Reader over another that keeps the manifests it reads
// in a folder, by digest, and reads them from there again. Only a
// manifest's bytes are kept: whether a repository still serves it is
// asked of the reader below every time (a HEAD, for a registry), because
// a fresh node would be told by the registry, not by this folder. Tags
// and blobs are never kept: a push or a garbage collection changes them.
// Each run also reads a share of the cached manifests it uses from below
// again, in turn (see WithReverify), so that a reader below that now
// serves other bytes under a digest is found by a warm run too.
//
// Entries are verified on every read: bytes that do not hash to their
// digest (a corrupt, truncated or foreign file) are deleted and fetched
// again, never used. The folder holds at most about the bound given to
// New: when a write takes it over, the entries least recently read or
// written (by file modification time, which a read sets) are deleted.
// Two processes may share the folder: entries are written whole, to a
// temporary file renamed over the entry, so no reader sees half of one;
// one process evicts at a time (a lock file), and an entry deleted under
// a reader that has opened it stays readable to that reader.
//
// A Reader is safe for concurrent use.
type Reader struct {
	next   walk.RawReader
	dir    string
	max    int64
	logger *slog.Logger

	fetches singleflight.Group // the fetches in flight, by repository and digest

	share   Share              // the cached manifests read again (see WithReverify)
	slotted sync.Once          // turn is taken
	turn    uint64             // this Reader's turn of re-reads (see slot)
	rereads singleflight.Group // the re-reads in flight, by repository and digest
	taken   sync.Map           // the repository@digest keys read again this run

	counted sync.Once
	used    atomic.Int64 // bytes the folder is believed to hold, once counted
	written atomic.Int64 // bytes this process wrote since it last counted
}

var _ walk.RawReader = (*Reader)(nil)

// Option configures a Reader.
type Option func(*Reader)

// WithLogger logs what the cache could not do (write an entry, evict) and
// the corrupt entries it deleted to l. By default a Reader is silent.
func WithLogger(l *slog.Logger) Option { return func(c *Reader) { c.logger = l } }

// New returns a Reader over next keeping manifests in dir, at most about
// maxBytes of them. It creates dir (mode 0700: a private registry's
// manifests land there) if it does not exist.
func New(next walk.RawReader, dir string, maxBytes int64, opts ...Option) (*Reader, error) {
	if dir == "" || maxBytes <= 0 {
		return nil, fmt.Errorf("cache: want a folder and a positive size, got %q and %d", dir, maxBytes)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Reader{next: next, dir: dir, max: maxBytes, logger: slog.New(slog.DiscardHandler), share: DefaultReverify}
	for _, o := range opts {
		o(c)
	}
	if err := c.share.Check(); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return c, nil
}

// Resolve asks the reader below: a tag is never cached.
func (c *Reader) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	return c.next.Resolve(ctx, repo, tag)
}

// Blob asks the reader below: a blob's presence is never cached.
func (c *Reader) Blob(ctx context.Context, repo name.Repository, digest string) error {
	return c.next.Blob(ctx, repo, digest)
}

// Manifest returns the manifest from the folder when it holds it and the
// reader below says the repository still serves it; otherwise it reads
// the bytes from below and keeps them. A cached manifest whose turn it is
// (see WithReverify) is read from below again instead, once a run. An
// absence or a fault from below is returned as it is, and nothing is kept
// of it.
func (c *Reader) Manifest(ctx context.Context, repo name.Repository, dg string) (walk.Manifest, error) {
	m, ok := c.load(dg)
	if !ok {
		return c.fetch(ctx, repo, dg)
	}
	if again, read, err := c.reread(ctx, repo, dg); read {
		return again, err
	}
	if err := c.next.HasManifest(ctx, repo, dg); err != nil {
		return walk.Manifest{}, err
	}
	return m, nil
}

// RawManifest reads a manifest's bytes from below, as they are stored,
// and keeps them. It is what a reader of a manifest's annotations asks
// (the artifacts finder telling a sigstore bundle's kind from its
// manifest, which walk.Manifest does not carry): without it, a cache in
// the way hid them, and cosign's attestation bundles listed in a
// referrers tag's index (which carries no annotations) were taken for
// signatures whenever the cache was on.
func (c *Reader) RawManifest(ctx context.Context, repo name.Repository, dg string) ([]byte, string, error) {
	f, err := c.fetchFrom(ctx, repo, dg)
	return f.body, f.ct, err
}

// HasManifest asks the reader below, as Manifest does of a cached entry.
func (c *Reader) HasManifest(ctx context.Context, repo name.Repository, dg string) error {
	return c.next.HasManifest(ctx, repo, dg)
}

// fetched is what RawManifest returned.
type fetched struct {
	body []byte
	ct   string
}

// fetch reads a manifest's bytes from below and keeps them, once for all
// the callers asking for the digest at the same time, in any repository.
// A caller for another repository than the one fetched from takes the
// bytes (they are the digest's) but asks whether its own repository serves
// them; when that fetch failed, it fetches for itself: another
// repository's answer, or another caller's cancellation, says nothing of
// its own.
func (c *Reader) fetch(ctx context.Context, repo name.Repository, dg string) (walk.Manifest, error) {
	own := false
	ch := c.fetches.DoChan(dg, func() (any, error) {
		own = true
		return c.fetchFrom(ctx, repo, dg)
	})
	var r singleflight.Result
	select {
	case <-ctx.Done():
		return walk.Manifest{}, ctx.Err()
	case r = <-ch:
	}
	switch {
	case own:
	case r.Err == nil:
		if err := c.next.HasManifest(ctx, repo, dg); err != nil {
			return walk.Manifest{}, err
		}
	default:
		r.Val, r.Err = c.fetchFrom(ctx, repo, dg)
	}
	if r.Err != nil {
		return walk.Manifest{}, r.Err
	}
	f := r.Val.(fetched)
	return walk.Parse(f.body, f.ct)
}

// fetchFrom reads a manifest's bytes from below, for repo, and keeps them.
func (c *Reader) fetchFrom(ctx context.Context, repo name.Repository, dg string) (fetched, error) {
	body, ct, err := c.next.RawManifest(ctx, repo, dg)
	if err == nil {
		c.store(dg, body, ct)
	}
	return fetched{body, ct}, err
}

// path is where the entry for a digest lives: <dir>/<algorithm>/<hex>.
// A string that is not a valid digest has no entry.
func (c *Reader) path(s string) (string, digest.Digest, bool) {
	d, err := digest.Parse(s)
	if err != nil {
		return "", "", false
	}
	return filepath.Join(c.dir, d.Algorithm().String(), d.Encoded()), d, true
}

// load reads, verifies and parses the entry for a digest, and marks it
// used. A missing entry is a miss; one that fails verification is deleted
// and is a miss.
func (c *Reader) load(s string) (walk.Manifest, bool) {
	p, d, ok := c.path(s)
	if !ok {
		return walk.Manifest{}, false
	}
	f, err := os.Open(p)
	if err != nil {
		return walk.Manifest{}, false
	}
	data, rerr := io.ReadAll(io.LimitReader(f, maxEntry+1))
	fi, serr := f.Stat()
	f.Close()
	if rerr != nil || serr != nil {
		return walk.Manifest{}, false
	}
	ct, body, ok := decode(data)
	var m walk.Manifest
	if ok && len(data) <= maxEntry && d.Algorithm().FromBytes(body) == d {
		m, err = walk.Parse(body, ct)
		ok = err == nil
	} else {
		ok = false
	}
	if !ok {
		c.discard(p, fi)
		return walk.Manifest{}, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // evicted last; gone already is fine
	return m, true
}

// discard deletes a corrupt entry, unless a writer has replaced it since
// it was read.
func (c *Reader) discard(p string, read fs.FileInfo) {
	if cur, err := os.Stat(p); err != nil || !os.SameFile(cur, read) {
		return
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Warn("manifest cache: could not delete a corrupt entry", "path", p, "err", err)
		return
	}
	c.logger.Warn("manifest cache: deleted a corrupt entry; the manifest is fetched again", "path", p)
}

// store keeps a manifest's bytes, verified, then evicts if the folder
// went over its bound. What cannot be written is logged, not returned: a
// cache that cannot write only reads more from below.
func (c *Reader) store(s string, body []byte, ct string) {
	p, d, ok := c.path(s)
	if !ok || d.Algorithm().FromBytes(body) != d {
		return
	}
	data := encode(ct, body)
	if int64(len(data)) > c.max || len(data) > maxEntry {
		return
	}
	err := os.MkdirAll(filepath.Dir(p), 0o700)
	if err == nil {
		err = atomicfile.Write(p, data, 0o600)
	}
	if err != nil {
		c.logger.Warn("manifest cache: could not keep a manifest", "digest", s, "err", err)
		return
	}
	c.account(int64(len(data)))
}
