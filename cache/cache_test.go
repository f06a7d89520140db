package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// registry is a walk.RawReader over a map of manifest bytes, counting what
// it is asked. gone answers HasManifest with 404; fault answers every
// manifest question with a fault.
type registry struct {
	mu        sync.Mutex
	manifests map[string][]byte
	gone      map[string]bool
	fault     error
	absentIn  string        // a repository that serves none of the manifests
	hold      chan struct{} // RawManifest waits until it is closed
	raws      atomic.Int64
	heads     atomic.Int64
	resolves  atomic.Int64
	blobs     atomic.Int64
}

var _ walk.RawReader = (*registry)(nil)

func (r *registry) Resolve(_ context.Context, _ name.Repository, tag string) (walk.Descriptor, error) {
	r.resolves.Add(1)
	return walk.Descriptor{Digest: tag}, nil
}

func (r *registry) Blob(context.Context, name.Repository, string) error {
	r.blobs.Add(1)
	return nil
}

func (r *registry) body(repo name.Repository, d string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fault != nil {
		return nil, r.fault
	}
	b, ok := r.manifests[d]
	if !ok || r.gone[d] || repo.Name() == r.absentIn {
		return nil, fmt.Errorf("manifest %s: %w", d, types.ErrNotFound)
	}
	return b, nil
}

func (r *registry) Manifest(ctx context.Context, repo name.Repository, d string) (walk.Manifest, error) {
	b, ct, err := r.RawManifest(ctx, repo, d)
	if err != nil {
		return walk.Manifest{}, err
	}
	return walk.Parse(b, ct)
}

func (r *registry) RawManifest(_ context.Context, repo name.Repository, d string) ([]byte, string, error) {
	r.raws.Add(1)
	if r.hold != nil {
		<-r.hold
	}
	b, err := r.body(repo, d)
	return b, ocispec.MediaTypeImageManifest, err
}

func (r *registry) HasManifest(_ context.Context, repo name.Repository, d string) error {
	r.heads.Add(1)
	_, err := r.body(repo, d)
	return err
}

// manifest returns an image manifest whose config is named by seed, padded
// to about size bytes, and its digest.
func manifest(seed string, size int) ([]byte, string) {
	b := fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":%q,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":1},"layers":[],"annotations":{"pad":%q}}`,
		ocispec.MediaTypeImageManifest, digest.FromString(seed), strings.Repeat("x", max(size-300, 0)))
	return b, digest.FromBytes(b).String()
}

// fill returns a registry holding n manifests of about size bytes, and
// their digests.
func fill(n, size int) (*registry, []string) {
	r := &registry{manifests: map[string][]byte{}, gone: map[string]bool{}}
	var ds []string
	for i := range n {
		b, d := manifest(strconv.Itoa(i), size)
		r.manifests[d] = b
		ds = append(ds, d)
	}
	return r, ds
}

var repo = name.MustParseReference("registry.example/app:v1").Context()

// newCache returns a Reader over next that fails the test on any warning
// (a corrupt entry seen, a write that failed) unless it is expected. It
// reads no cached manifest again unless opts say so (see reverify_test.go).
func newCache(t testing.TB, next walk.RawReader, dir string, maxBytes int64, opts ...Option) *Reader {
	t.Helper()
	opts = append([]Option{WithReverify(Share{}), WithLogger(slog.New(failOnWarn{t}))}, opts...)
	c, err := New(next, dir, maxBytes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failOnWarn is a slog.Handler that fails t on a warning.
type failOnWarn struct{ t testing.TB }

func (h failOnWarn) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h failOnWarn) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(h.t.Name(), "TestVerifyOnRead") {
		h.t.Errorf("warning: %s", r.Message)
	}
	return nil
}
func (h failOnWarn) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h failOnWarn) WithGroup(string) slog.Handler      { return h }

func read(t testing.TB, c *Reader, d string) walk.Manifest {
	t.Helper()
	m, err := c.Manifest(context.Background(), repo, d)
	if err != nil {
		t.Fatalf("manifest %s: %v", d, err)
	}
	if !m.IsImage() || m.Config.Digest == "" {
		t.Fatalf("manifest %s parsed as %+v", d, m)
	}
	return m
}

func entryPath(dir, d string) string {
	p := digest.Digest(d)
	return filepath.Join(dir, p.Algorithm().String(), p.Encoded())
}

// TestManifest: the first read fetches and keeps the bytes; the next, by
// a new Reader as a second run would, reads them from disk and asks only
// whether the manifest is still there.
func TestManifest(t *testing.T) {
	t.Parallel()
	reg, ds := fill(1, 500)
	dir := filepath.Join(t.TempDir(), "manifests")
	first := read(t, newCache(t, reg, dir, 1<<20), ds[0])
	if n, h := reg.raws.Load(), reg.heads.Load(); n != 1 || h != 0 {
		t.Fatalf("first read: %d fetches and %d presence checks, want 1 and 0", n, h)
	}
	second := read(t, newCache(t, reg, dir, 1<<20), ds[0])
	if n, h := reg.raws.Load(), reg.heads.Load(); n != 1 || h != 1 {
		t.Fatalf("second read: %d fetches and %d presence checks in all, want 1 and 1", n, h)
	}
	if first.Config.Digest != second.Config.Digest || first.MediaType != second.MediaType {
		t.Errorf("from disk %+v, fetched %+v", second, first)
	}
	for _, p := range []string{dir, filepath.Join(dir, "sha256")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a folder of mode 0700", p, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(entryPath(dir, ds[0])); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("entry: %v, %v; want mode 0600", fi.Mode(), err)
	}
}

// TestNeverCached: tags and blobs are asked every time; a manifest the
// registry says is gone, or a fault, is not kept.
func TestNeverCached(t *testing.T) {
	t.Parallel()
	reg, ds := fill(2, 500)
	dir := t.TempDir()
	c := newCache(t, reg, dir, 1<<20)
	ctx := context.Background()
	for range 3 {
		c.Resolve(ctx, repo, "v1")
		c.Blob(ctx, repo, ds[0])
	}
	if r, b := reg.resolves.Load(), reg.blobs.Load(); r != 3 || b != 3 {
		t.Errorf("%d resolves and %d blob checks reached the registry, want 3 and 3", r, b)
	}
	reg.gone[ds[0]] = true
	if _, err := c.Manifest(ctx, repo, ds[0]); !errors.Is(err, types.ErrNotFound) {
		t.Errorf("a manifest the registry does not serve: %v, want not found", err)
	}
	reg.fault = errors.New("503")
	if _, err := c.Manifest(ctx, repo, ds[1]); err == nil {
		t.Error("a fault: no error")
	}
	if files, _ := os.ReadDir(filepath.Join(dir, "sha256")); len(files) != 0 {
		t.Errorf("kept %d entries of answers that were not manifests", len(files))
	}
}

// TestAbsenceNotHidden: a cached manifest the registry no longer serves is
// gone for the walk, and a fault asking is a fault, not the cached bytes.
func TestAbsenceNotHidden(t *testing.T) {
	t.Parallel()
	reg, ds := fill(1, 500)
	dir := t.TempDir()
	read(t, newCache(t, reg, dir, 1<<20), ds[0])
	reg.gone[ds[0]] = true
	c := newCache(t, reg, dir, 1<<20)
	if _, err := c.Manifest(context.Background(), repo, ds[0]); !errors.Is(err, types.ErrNotFound) {
		t.Errorf("deleted from the registry, cached: %v, want not found", err)
	}
	reg.gone[ds[0]] = false
	reg.fault = fmt.Errorf("HEAD: %w", types.ErrRateLimited)
	if _, err := c.Manifest(context.Background(), repo, ds[0]); !errors.Is(err, types.ErrRateLimited) {
		t.Errorf("a fault asking, cached: %v, want the fault", err)
	}
	if reg.raws.Load() != 1 {
		t.Errorf("%d fetches, want 1", reg.raws.Load())
	}
	if _, err := os.Stat(entryPath(dir, ds[0])); err != nil {
		t.Errorf("the entry (still the digest's bytes) was deleted: %v", err)
	}
}

// TestVerifyOnRead: an entry whose bytes do not hash to its digest, or do
// not decode, is deleted and fetched again, never used.
func TestVerifyOnRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		corrupt func(data []byte) []byte
	}{
		{"a flipped byte", func(b []byte) []byte { b[len(b)-5] ^= 1; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"empty", func([]byte) []byte { return nil }},
		{"no header", func(b []byte) []byte { _, body, _ := strings.Cut(string(b), "\n"); return []byte(body) }},
		{"another format", func(b []byte) []byte { return append([]byte("regcheck-manifest/v0 "), b[len(header):]...) }},
		{"a control character in the content type", func(b []byte) []byte { return append([]byte(header+"\x1b[31m\n"), b[len(header):]...) }},
		{"another manifest's bytes", func([]byte) []byte { b, _ := manifest("other", 500); return encode("", b) }},
		{"bytes that hash right but are no manifest", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg, ds := fill(1, 500)
			d := ds[0]
			if tc.corrupt == nil {
				b := []byte(`{"not":"a manifest"}`)
				d = digest.FromBytes(b).String()
				reg.manifests[d] = b
				tc.corrupt = func([]byte) []byte { return encode("", b) }
			}
			dir := t.TempDir()
			p := entryPath(dir, d)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			data, _ := manifest("0", 500)
			if err := os.WriteFile(p, tc.corrupt(encode(ocispec.MediaTypeImageManifest, data)), 0o600); err != nil {
				t.Fatal(err)
			}
			c := newCache(t, reg, dir, 1<<20)
			if _, ok := c.load(d); ok {
				t.Fatal("a corrupt entry was used")
			}
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the corrupt entry was not deleted: %v", err)
			}
			if tc.name == "bytes that hash right but are no manifest" {
				return // the registry's bytes are not a manifest either
			}
			read(t, c, d)
			if reg.raws.Load() != 1 {
				t.Errorf("%d fetches, want 1: the manifest was not fetched again", reg.raws.Load())
			}
			got, err := os.ReadFile(p)
			if err != nil || string(got) != string(encode(ocispec.MediaTypeImageManifest, reg.manifests[d])) {
				t.Errorf("the entry was not written again whole: %q, %v", got, err)
			}
		})
	}
}

// TestInvalidDigest: a string that is not a digest names no file: the
// registry below is asked, and nothing is written outside the folder.
func TestInvalidDigest(t *testing.T) {
	t.Parallel()
	reg, _ := fill(0, 0)
	dir := filepath.Join(t.TempDir(), "c")
	c := newCache(t, reg, dir, 1<<20)
	for _, d := range []string{"sha256:../../escape", "md5:0123", "", "sha256:" + strings.Repeat("A", 64)} {
		if _, err := c.Manifest(context.Background(), repo, d); err == nil {
			t.Errorf("%q: no error", d)
		}
	}
	if reg.raws.Load() != 4 {
		t.Errorf("%d fetches, want 4", reg.raws.Load())
	}
	if files, _ := os.ReadDir(filepath.Dir(dir)); len(files) != 1 {
		t.Errorf("files beside the folder: %v", files)
	}
}

// size is what the folder's entries hold.
func size(t *testing.T, dir string) (int64, int) {
	t.Helper()
	var n int64
	count := 0
	files, _ := os.ReadDir(filepath.Join(dir, "sha256"))
	for _, f := range files {
		fi, err := f.Info()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(f.Name(), ".") {
			t.Errorf("a temporary file is left: %s", f.Name())
			continue
		}
		n += fi.Size()
		count++
	}
	return n, count
}

// TestSizeBound: however much is read, the folder stays within its bound.
func TestSizeBound(t *testing.T) {
	t.Parallel()
	const bound = 20_000
	reg, ds := fill(100, 1000)
	dir := t.TempDir()
	c := newCache(t, reg, dir, bound)
	for _, d := range ds {
		read(t, c, d)
		if n, _ := size(t, dir); n > bound {
			t.Fatalf("the folder holds %d bytes, over its bound of %d", n, bound)
		}
	}
	n, count := size(t, dir)
	if n < bound/2 || count < 10 {
		t.Errorf("the folder holds %d bytes in %d entries: eviction took too much", n, count)
	}
	big, d := manifest("big", bound+1)
	reg.manifests[d] = big
	read(t, c, d)
	if _, err := os.Stat(entryPath(dir, d)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a manifest larger than the bound was kept")
	}
}

// TestEvictionKeepsNewest: the entries least recently used go first; a
// read is a use.
func TestEvictionKeepsNewest(t *testing.T) {
	t.Parallel()
	reg, ds := fill(30, 1000)
	dir := t.TempDir()
	c := newCache(t, reg, dir, 1<<20)
	old := time.Now().Add(-time.Hour)
	for i, d := range ds[:20] {
		read(t, c, d)
		at := old.Add(time.Duration(i) * time.Minute) // ds[0] the oldest
		if err := os.Chtimes(entryPath(dir, d), at, at); err != nil {
			t.Fatal(err)
		}
	}
	read(t, c, ds[0]) // the oldest, used now
	n, _ := size(t, dir)
	// A new Reader (another run) whose bound is 25 entries: the 10 writes
	// past 20 evict down to 90% of it.
	c = newCache(t, reg, dir, n/20*25)
	for _, d := range ds[20:] {
		read(t, c, d)
	}
	_, count := size(t, dir)
	if count > 25 || count < 20 {
		t.Fatalf("%d entries left, want 20 to 25", count)
	}
	for i, d := range ds {
		_, err := os.Stat(entryPath(dir, d))
		kept := err == nil
		switch {
		case i == 0 && !kept:
			t.Error("the entry just read was evicted")
		case i >= 20 && !kept:
			t.Errorf("entry %d, just written, was evicted", i)
		case i >= 1 && i <= 5 && kept:
			t.Errorf("entry %d, among the oldest, was kept", i)
		}
	}
}

// TestStaleTemp: eviction deletes the temporary file a killed writer left,
// once it is old, and never a fresh one (a live writer's).
func TestStaleTemp(t *testing.T) {
	t.Parallel()
	reg, ds := fill(3, 1000)
	dir := t.TempDir()
	read(t, newCache(t, reg, dir, 1<<20), ds[0])
	stale := filepath.Join(dir, "sha256", ".abc.tmp-1")
	fresh := filepath.Join(dir, "sha256", ".abc.tmp-2")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleTemp)
	os.Chtimes(stale, long, long)
	c := newCache(t, reg, dir, 1500) // one entry: the next write evicts
	read(t, c, ds[1])
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the stale temporary file is left")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh temporary file was deleted")
	}
}

// TestConcurrent: Readers over one folder (as in two processes) fetching
// the same manifests at once, under eviction, never read a half-written
// or wrong entry, and one Reader fetches each manifest once however many
// of its walks ask at the same time.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	reg, ds := fill(40, 1000)
	dir := t.TempDir()
	a, b := newCache(t, reg, dir, 30_000), newCache(t, reg, dir, 30_000)
	var wg sync.WaitGroup
	for w := range 8 {
		c := a
		if w%2 == 1 {
			c = b
		}
		wg.Go(func() {
			for range 5 {
				for _, d := range ds {
					m := read(t, c, d)
					want, _ := walk.Parse(reg.manifests[d], "")
					if m.Config.Digest != want.Config.Digest {
						t.Errorf("%s: read config %s, want %s", d, m.Config.Digest, want.Config.Digest)
					}
				}
			}
		})
	}
	wg.Wait()
	if n, _ := size(t, dir); n > shared(30_000, 2, 1100) {
		t.Errorf("the folder holds %d bytes, over its bound", n)
	}

	// One Reader, many walks asking for one manifest at once: one fetch.
	reg2, ds2 := fill(1, 1000)
	c := newCache(t, reg2, t.TempDir(), 1<<20)
	for range 16 {
		wg.Go(func() { read(t, c, ds2[0]) })
	}
	wg.Wait()
	if n := reg2.raws.Load(); n != 1 {
		t.Errorf("16 walks at once fetched %d times, want 1", n)
	}
}

// TestSharedAcrossRepositories: a manifest asked for in two repositories
// at once is fetched once; the other repository is asked whether it serves
// it. When the fetch fails, the other repository's caller fetches its own.
func TestSharedAcrossRepositories(t *testing.T) {
	t.Parallel()
	other := name.MustParseReference("registry.example/other:v1").Context()
	for _, tc := range []struct {
		name              string
		absentIn          string
		raws, heads       int64
		firstErr, lastErr error
	}{
		{"both serve it", "", 1, 1, nil, nil},
		{"the first does not", repo.Name(), 2, 0, types.ErrNotFound, nil},
		{"the second does not", other.Name(), 1, 1, nil, types.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg, ds := fill(1, 500)
			reg.absentIn, reg.hold = tc.absentIn, make(chan struct{})
			c := newCache(t, reg, t.TempDir(), 1<<20)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			wg.Go(func() { _, errs[0] = c.Manifest(context.Background(), repo, ds[0]) })
			for reg.raws.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			wg.Go(func() { _, errs[1] = c.Manifest(context.Background(), other, ds[0]) })
			time.Sleep(100 * time.Millisecond) // the second caller joins the fetch in flight
			close(reg.hold)
			wg.Wait()
			for i, want := range []error{tc.firstErr, tc.lastErr} {
				if (want == nil) != (errs[i] == nil) || (want != nil && !errors.Is(errs[i], want)) {
					t.Errorf("caller %d: %v, want %v", i, errs[i], want)
				}
			}
			if r, h := reg.raws.Load(), reg.heads.Load(); r != tc.raws || h != tc.heads {
				t.Errorf("%d fetches and %d presence checks, want %d and %d", r, h, tc.raws, tc.heads)
			}
		})
	}
}

// TestTwoProcesses runs two processes writing and reading the same digests
// in one small folder at once: every read verifies, none fails.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(exe, "-test.run", "^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CACHE_HELPER_DIR="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	if n, _ := size(t, dir); n > shared(40_000, 2, 1100) {
		t.Errorf("the folder holds %d bytes, over its bound", n)
	}
}

// shared is the most a folder shared by processes holds: each may write a
// tenth of the bound and an entry past another's last eviction.
func shared(bound int64, processes, entry int64) int64 {
	return bound + (processes-1)*(bound/10+entry)
}

// TestHelperProcess is one of TestTwoProcesses' processes.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("CACHE_HELPER_DIR")
	if dir == "" {
		t.Skip("run by TestTwoProcesses")
	}
	reg, ds := fill(60, 1000)
	c := newCache(t, reg, dir, 40_000)
	for range 10 {
		for _, d := range ds {
			read(t, c, d)
		}
	}
}

// TestRawManifest: the cache hands over a manifest's bytes as stored
// (their annotations, which walk.Manifest drops, with them), read from
// below and kept: the next Manifest of the digest is served from the
// folder.
func TestRawManifest(t *testing.T) {
	r, ds := fill(1, 400)
	c := newCache(t, r, t.TempDir(), 1<<20)
	body, ct, err := c.RawManifest(context.Background(), repo, ds[0])
	if err != nil || string(body) != string(r.manifests[ds[0]]) || ct != ocispec.MediaTypeImageManifest {
		t.Fatalf("RawManifest: %q, %q, %v; want the stored bytes", body, ct, err)
	}
	if !strings.Contains(string(body), `"annotations"`) {
		t.Errorf("the bytes lost the annotations: %s", body)
	}
	read(t, c, ds[0])
	if n := r.raws.Load(); n != 1 {
		t.Errorf("%d reads from below, want 1 (the bytes kept)", n)
	}
	if err := c.HasManifest(context.Background(), repo, "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, types.ErrNotFound) {
		t.Errorf("HasManifest of an absent digest: %v, want not found", err)
	}
}
