package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/types"
)

// served is a registry that counts the GETs of each manifest, and can
// serve other bytes under some digests (a digest mismatch, as the scan's
// client reports it) or fail every GET.
type served struct {
	*registry
	mu    sync.Mutex
	gets  map[string]int
	wrong map[string]bool
	fault error
}

func newServed(n int) (*served, []string) {
	reg, ds := fill(n, 400)
	return &served{registry: reg, gets: map[string]int{}, wrong: map[string]bool{}}, ds
}

func (s *served) RawManifest(ctx context.Context, repo name.Repository, d string) ([]byte, string, error) {
	s.mu.Lock()
	s.gets[d]++
	wrong, fault := s.wrong[d], s.fault
	s.mu.Unlock()
	switch {
	case fault != nil:
		return nil, "", fault
	case wrong:
		return nil, "", fmt.Errorf("GET %s: body hashes to sha256:0000: %w", d, types.ErrDigestMismatch)
	}
	return s.registry.RawManifest(ctx, repo, d)
}

// take returns the GETs counted since the last take, by digest.
func (s *served) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.gets
	s.gets = map[string]int{}
	return out
}

// warnings is a slog.Handler that keeps the warnings' messages.
type warnings struct {
	mu   *sync.Mutex
	msgs *[]string
}

func newWarnings() warnings { return warnings{&sync.Mutex{}, &[]string{}} }

func (h warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h warnings) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.msgs = append(*h.msgs, r.Message)
	return nil
}
func (h warnings) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnings) WithGroup(string) slog.Handler      { return h }

func (h warnings) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(*h.msgs, "; ")
}

func TestParseShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Share
		text string
		bad  bool
	}{
		{in: "1/30", want: Share{1, 30}, text: "1/30"},
		{in: " 2/60 ", want: Share{1, 30}, text: "1/30"},
		{in: "0.033", want: Share{33, 1000}, text: "33/1000"},
		{in: "0", want: Share{}, text: "0"},
		{in: "0/7", want: Share{}, text: "0"},
		{in: "1", want: Share{1, 1}, text: "1"},
		{in: "1.0", want: Share{1, 1}, text: "1"},
		{in: "", bad: true},
		{in: "-1/30", bad: true},
		{in: "31/30", bad: true},
		{in: "2", bad: true},
		{in: "1/0", bad: true},
		{in: "one in thirty", bad: true},
		{in: "1/2000000", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			var got Share
			err := got.UnmarshalText([]byte(tc.in))
			if tc.bad {
				if err == nil {
					t.Fatalf("%q read as %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want || got.String() != tc.text || got.Check() != nil {
				t.Errorf("%q read as %v (%q), %v; want %v (%q)", tc.in, got, got, err, tc.want, tc.text)
			}
		})
	}
	for _, s := range []Share{{-1, 30}, {31, 30}, {1, 0}, {0, 5}, {1, maxDen + 1}} {
		if s.Check() == nil && s != (Share{0, 5}) {
			t.Errorf("%d/%d passes the check", s.Num, s.Den)
		}
	}
	if _, err := New(&registry{}, t.TempDir(), 1, WithReverify(Share{2, 1})); err == nil {
		t.Error("New took a share over 1")
	}
}

// TestTurn: for each share, every place of the circle is due at most
// Runs() runs apart from any run on (the turn's drift included), and each
// run takes exactly Num places of Den.
func TestTurn(t *testing.T) {
	t.Parallel()
	for _, s := range []Share{{1, 30}, {1, 2}, {2, 3}, {1, 7}, {7, 30}, {33, 1000}, {1, 1000}, {1, 1}} {
		t.Run(s.String(), func(t *testing.T) {
			t.Parallel()
			slots := uint64(4*s.Runs() + 3)
			last := make([]int64, s.Den)
			for i := range last {
				last[i] = -1 // the run before the first: a first turn counts as a gap
			}
			for slot := range slots {
				taken := 0
				for place := range uint64(s.Den) {
					if s.Num < s.Den && !s.dueAt(place, slot) {
						continue
					}
					taken++
					if gap := int64(slot) - last[place]; gap > int64(s.Runs()) {
						t.Fatalf("place %d: due at run %d, %d runs after the last, want at most %d", place, slot, gap, s.Runs())
					}
					last[place] = int64(slot)
				}
				if taken != s.Num {
					t.Fatalf("run %d takes %d places, want %d", slot, taken, s.Num)
				}
			}
		})
	}
}

// TestReverifyRuns warms a folder with 300 manifests, then runs 3×31 warm
// runs (each a new Reader, as a process would be) with the default share:
// the first 30 read every manifest again once, 300 GETs in all, and in
// every run each manifest is either read again or HEADed, never both. No
// manifest goes more than DefaultReverify.Runs() runs between re-reads.
// Share 0 reads none again; share 1 reads every one in every run.
func TestReverifyRuns(t *testing.T) {
	t.Parallel()
	const n = 300
	for _, tc := range []struct {
		share Share
		runs  int
		// first30 bounds the GETs of the first 30 warm runs.
		first30Min, first30Max int
	}{
		{DefaultReverify, 93, n, 2 * n},
		{Share{}, 30, 0, 0},
		{Share{1, 1}, 30, 30 * n, 30 * n},
	} {
		t.Run(tc.share.String(), func(t *testing.T) {
			t.Parallel()
			reg, ds := newServed(n)
			dir := t.TempDir()
			cold := newCache(t, reg, dir, 1<<30, WithReverify(tc.share))
			for _, d := range ds {
				read(t, cold, d)
			}
			if got := reg.take(); len(got) != n {
				t.Fatalf("cold run GET %d manifests, want %d", len(got), n)
			}
			last := map[string]int{}
			var first30, most, least int
			least = n
			for run := range tc.runs {
				heads := reg.heads.Load()
				c := newCache(t, reg, dir, 1<<30, WithReverify(tc.share))
				for _, d := range ds {
					read(t, c, d)
				}
				gets := reg.take()
				if h := int(reg.heads.Load() - heads); h+len(gets) != n {
					t.Fatalf("run %d: %d HEADs and %d GETs, want one of either per manifest (%d)", run, h, len(gets), n)
				}
				for d, k := range gets {
					if k != 1 {
						t.Fatalf("run %d: %s GET %d times", run, d, k)
					}
					if prev, ok := last[d]; ok && run-prev > tc.share.Runs() {
						t.Errorf("%s read again at runs %d and %d: more than %d apart", d, prev, run, tc.share.Runs())
					}
					last[d] = run
				}
				if run < 30 {
					first30 += len(gets)
				}
				most, least = max(most, len(gets)), min(least, len(gets))
			}
			t.Logf("share %s: %d GETs in the first 30 warm runs; %d to %d a run (of %d cached)", tc.share, first30, least, most, n)
			if first30 < tc.first30Min || first30 > tc.first30Max {
				t.Errorf("%d GETs in 30 warm runs, want %d to %d", first30, tc.first30Min, tc.first30Max)
			}
			if tc.share.Num > 0 && len(last) != n {
				t.Errorf("%d of %d manifests read again", len(last), n)
			}
		})
	}
}

// TestReverify: what a re-read finds. Bytes the registry no longer serves
// under the digest are a digest mismatch, and the entry is deleted (the
// next run reads from the registry, and finds it again); a fault is a
// fault, the entry stays, and the next ask of the run reads again; an
// absence is an absence. A re-read the pull budget withholds falls back
// to the HEAD. A manifest read again is not read again in the same run:
// the next ask is a HEAD.
func TestReverify(t *testing.T) {
	t.Parallel()
	fault := errors.New("503 Service Unavailable")
	for _, tc := range []struct {
		name     string
		break_   func(*served, string)
		want     error
		kept     bool
		getsNext int // GETs of a second ask in the same run
	}{
		{"served as cached", func(*served, string) {}, nil, true, 0},
		{"other bytes", func(s *served, d string) { s.wrong[d] = true }, types.ErrDigestMismatch, false, 1},
		{"a fault", func(s *served, _ string) { s.fault = fault }, fault, true, 1},
		{"gone", func(s *served, d string) { s.gone[d] = true }, types.ErrNotFound, true, 0},
		{"withheld by the pull budget", func(s *served, _ string) { s.fault = fmt.Errorf("GET: %w", types.ErrPullBudget) }, nil, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg, ds := newServed(1)
			dir := t.TempDir()
			read(t, newCache(t, reg, dir, 1<<20), ds[0])
			reg.take()
			reg.mu.Lock()
			tc.break_(reg, ds[0])
			reg.mu.Unlock()
			w := newWarnings()
			c, err := New(reg, dir, 1<<20, WithReverify(Share{1, 1}), WithLogger(slog.New(w)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Manifest(context.Background(), repo, ds[0])
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("re-read: %v, want %v", err, tc.want)
			}
			if got := reg.take()[ds[0]]; got != 1 {
				t.Errorf("%d GETs, want 1", got)
			}
			_, serr := os.Stat(entryPath(dir, ds[0]))
			if kept := serr == nil; kept != tc.kept {
				t.Errorf("entry kept: %v, want %v (warnings: %s)", kept, tc.kept, w)
			}
			if !tc.kept && !strings.Contains(w.String(), "other bytes") {
				t.Errorf("no warning of the deleted entry: %q", w)
			}
			c.Manifest(context.Background(), repo, ds[0])
			if got := reg.take()[ds[0]]; got != tc.getsNext {
				t.Errorf("the next ask of the run: %d GETs, want %d", got, tc.getsNext)
			}
		})
	}
}

// TestReverifyShared: walks asking for a due manifest at once share one
// GET; the Readers of a folder take turns 0, 1, 2… however many start at
// once, and a run that reads nothing again takes none.
func TestReverifyShared(t *testing.T) {
	t.Parallel()
	reg, ds := newServed(1)
	dir := t.TempDir()
	read(t, newCache(t, reg, dir, 1<<20), ds[0])
	reg.take()
	if _, err := os.Stat(filepath.Join(dir, runsFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a run that read nothing again counted itself: %v", err)
	}

	c := newCache(t, reg, dir, 1<<20, WithReverify(Share{1, 1}))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { read(t, c, ds[0]) })
	}
	wg.Wait()
	if got := reg.take()[ds[0]]; got != 1 {
		t.Errorf("16 walks at once: %d GETs, want 1", got)
	}

	const readers = 12
	turns := make([]uint64, readers)
	for i := range readers {
		wg.Go(func() { turns[i] = newCache(t, reg, dir, 1<<20, WithReverify(DefaultReverify)).slot() })
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, n := range turns {
		seen[n] = true
	}
	for n := range uint64(readers) {
		if !seen[n] {
			t.Errorf("turns %v: no turn %d", turns, n)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, runsFile)); err != nil || string(b) != fmt.Sprintf("%d\n", readers) {
		t.Errorf("count of runs: %q, %v; want %d", b, err, readers)
	}
}
