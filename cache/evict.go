package cache

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/opencontainers/go-digest"
)

// lowWater is the share of the bound eviction brings the folder down to,
// so that it does not run again on the next write.
const lowWater = 0.9

// staleTemp is how old a temporary file of a write (see atomicfile) must
// be for eviction to delete it: its writer was killed before the rename.
const staleTemp = time.Hour

// lockWait bounds the wait for another process's eviction.
const lockWait = 10 * time.Second

// account counts n bytes this process wrote, and recounts the folder
// (evicting when it is over the bound) when the count says it is over, or
// when this process has written a tenth of the bound since it last
// counted: other processes' writes are in no count of this one's, so a
// folder shared by N processes holds at most the bound plus about a tenth
// of it for each of the other N-1.
func (c *Reader) account(n int64) {
	c.counted.Do(func() { c.used.Store(c.usage()) })
	if c.used.Add(n) > c.max || c.written.Add(n) >= c.max/10 {
		c.evict()
	}
}

// evict counts the folder's entries and, when they are over the bound,
// deletes the least recently used until they hold at most lowWater of it.
// One process (or goroutine) counts at a time, the others wait their turn
// (lockWait at most, then skip it): a count that skipped would miss what
// its writer just wrote. An entry deleted under a reader that has opened
// it stays readable to it; one that a reader opens after is a miss.
func (c *Reader) evict() {
	lock := flock.New(filepath.Join(c.dir, ".lock"), flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	if ok, err := lock.TryLockContext(ctx, 5*time.Millisecond); err != nil || !ok {
		c.logger.Warn("manifest cache: could not lock the folder to evict", "err", err)
		return
	}
	defer lock.Close()
	used, written := c.used.Load(), c.written.Load()
	es := c.entries()
	var total int64
	for _, e := range es {
		total += e.size
	}
	removed := 0
	if total > c.max {
		slices.SortFunc(es, func(a, b entry) int {
			if n := a.used.Compare(b.used); n != 0 {
				return n
			}
			return strings.Compare(a.path, b.path)
		})
		target := int64(float64(c.max) * lowWater)
		for _, e := range es {
			if total <= target {
				break
			}
			if err := os.Remove(e.path); err == nil || os.IsNotExist(err) {
				total -= e.size
				removed++
			}
		}
	}
	// This process's writes since the listing began are in it, or are
	// still to come: keep them, rather than lose them.
	c.used.Add(total - used)
	c.written.Add(-written)
	c.logger.Debug("manifest cache: counted", "bytes", total, "evicted", removed)
}

// entry is one file of the folder, for eviction.
type entry struct {
	path string
	size int64
	used time.Time
}

// entries lists the folder's entries and deletes the temporary files of
// writers killed mid-write.
func (c *Reader) entries() []entry {
	var out []entry
	algs, _ := os.ReadDir(c.dir)
	for _, a := range algs {
		if !a.IsDir() || !digest.Algorithm(a.Name()).Available() {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(c.dir, a.Name()))
		for _, f := range files {
			p := filepath.Join(c.dir, a.Name(), f.Name())
			fi, err := f.Info()
			switch {
			case err != nil || !fi.Mode().IsRegular():
			case f.Name()[0] == '.':
				if time.Since(fi.ModTime()) > staleTemp {
					os.Remove(p)
				}
			default:
				out = append(out, entry{p, fi.Size(), fi.ModTime()})
			}
		}
	}
	return out
}

// usage is the size of the folder's entries.
func (c *Reader) usage() int64 {
	var n int64
	for _, e := range c.entries() {
		n += e.size
	}
	return n
}
