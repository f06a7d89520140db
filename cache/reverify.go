package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/singleflight"

	"github.com/regcheck/regcheck/internal/atomicfile"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// runsFile holds the number of runs that have taken a turn (see slot), in
// decimal; runsLock is held while it is read and replaced.
const (
	runsFile = ".runs"
	runsLock = ".runs.lock"
)

// WithReverify has each run (a Reader's life: a process's, as a rule)
// read share of the cached manifests it uses from the reader below again,
// each in its turn (see Share), instead of asking only whether it is
// still served. Bytes the reader below no longer serves under the digest
// (a proxy's, a corrupt store's) are then its error, as on a first read
// (types.ErrDigestMismatch), and the entry is deleted. The turn is counted
// in the folder, so that a manifest every run uses is read again at least
// once in any share.Runs() runs. The zero Share turns this off. By
// default a Reader reads DefaultReverify again.
func WithReverify(share Share) Option { return func(c *Reader) { c.share = share } }

// errTaken is what a re-read flight returns to a caller when another
// caller of the run re-read the manifest already.
var errTaken = errors.New("re-read already")

// reread reads a cached manifest again from below when it is due this run
// and no caller of the run has, and reports whether it did: the manifest
// the reader below serves now, or its error. A digest mismatch deletes the
// entry; an absence or a fault leaves it, and a fault lets a later ask of
// the run (a re-ask after a pause) read it again. A re-read the pull
// budget withholds (types.ErrPullBudget) was not made: the manifest's
// presence is asked, as when it is not due. Callers asking at the same
// time share one read; one that did not make it and got anything but the
// manifest or a mismatch asks, too, whether the manifest is there.
func (c *Reader) reread(ctx context.Context, repo name.Repository, dg string) (walk.Manifest, bool, error) {
	if !c.share.due(dg, c.slot()) {
		return walk.Manifest{}, false, nil
	}
	key := repo.Name() + "@" + dg
	own := false
	ch := c.rereads.DoChan(key, func() (any, error) {
		if _, taken := c.taken.LoadOrStore(key, struct{}{}); taken {
			return nil, errTaken
		}
		own = true
		body, ct, err := c.next.RawManifest(ctx, repo, dg)
		switch {
		case errors.Is(err, types.ErrDigestMismatch):
			c.drop(dg, err)
		case errors.Is(err, types.ErrPullBudget):
			c.logger.Debug("manifest cache: the pull budget withheld a re-read; asking whether it is there", "repository", repo.Name(), "digest", dg)
		case err != nil && !errors.Is(err, types.ErrNotFound):
			c.taken.Delete(key)
		case err == nil:
			c.logger.Debug("manifest cache: read a cached manifest again", "repository", repo.Name(), "digest", dg)
		}
		return fetched{body, ct}, err
	})
	var r singleflight.Result
	select {
	case <-ctx.Done():
		return walk.Manifest{}, true, ctx.Err()
	case r = <-ch:
	}
	if errors.Is(r.Err, types.ErrPullBudget) || (!own && r.Err != nil && !errors.Is(r.Err, types.ErrDigestMismatch)) {
		return walk.Manifest{}, false, nil
	}
	if r.Err != nil {
		return walk.Manifest{}, true, r.Err
	}
	f := r.Val.(fetched)
	m, err := walk.Parse(f.body, f.ct)
	return m, true, err
}

// drop deletes the entry of a digest whose bytes the reader below no
// longer serves: the next run reads it from below, as a first run would.
func (c *Reader) drop(dg string, why error) {
	p, _, ok := c.path(dg)
	if !ok {
		return
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		c.logger.Warn("manifest cache: could not delete an entry the registry no longer serves", "path", p, "err", err)
		return
	}
	c.logger.Warn("manifest cache: the registry serves other bytes for a cached digest; entry deleted", "digest", dg, "err", why)
}

// slot is this Reader's turn: the number of Readers over the folder that
// took one before it, read from and counted in runsFile, under runsLock,
// the first time a due manifest is asked. Where the count cannot be kept
// (a read-only folder), the clock stands in: the turn still moves, if not
// in order.
func (c *Reader) slot() uint64 {
	if c.share.Num <= 0 || c.share.Num >= c.share.Den {
		return 0 // none or every one: no turn
	}
	c.slotted.Do(func() {
		n, err := c.takeSlot()
		if err != nil {
			c.logger.Warn("manifest cache: could not count the run; the turn of re-reads follows the clock", "err", err)
			n = uint64(time.Now().UnixNano())
		}
		c.turn = n
	})
	return c.turn
}

// takeSlot reads the count of runs and writes it plus one.
func (c *Reader) takeSlot() (uint64, error) {
	lock := flock.New(filepath.Join(c.dir, runsLock), flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	if ok, err := lock.TryLockContext(ctx, 5*time.Millisecond); err != nil || !ok {
		return 0, errors.Join(errors.New("locking the count of runs"), err)
	}
	defer lock.Close()
	p := filepath.Join(c.dir, runsFile)
	var n uint64
	switch b, err := os.ReadFile(p); {
	case err == nil:
		// A count that does not parse starts again from 0: the turn moves on.
		n, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	case !os.IsNotExist(err):
		return 0, err
	}
	if err := atomicfile.Write(p, []byte(strconv.FormatUint(n+1, 10)+"\n"), 0o600); err != nil {
		return 0, err
	}
	return n, nil
}
