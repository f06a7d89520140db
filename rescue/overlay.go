package rescue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// maxManifest bounds a manifest read from a source, as a registry's.
const maxManifest = 4 << 20

// overlay is the registry as it would be after a rescue: a walk.Reader
// that asks the registry first and, for what the registry proves absent,
// the sources in order, keeping the first copy whose bytes hash to the
// digest. Tags are the registry's alone. It remembers every answer, per
// repository and digest, for the plan.
type overlay struct {
	reg     walk.Reader
	sources []Source
	sem     chan struct{} // bounds source reads at once

	mu sync.Mutex
	m  map[key]*answer
}

type key struct{ repo, digest string }

// answer is what the overlay learnt about one digest in one repository.
type answer struct {
	done chan struct{}
	// inRegistry: the registry serves it.
	inRegistry bool
	// manifest is the parsed manifest, from the registry or a source.
	manifest *walk.Manifest
	// found is the copy a source holds, nil if none does.
	found *found
	// notes say what the sources said short of a copy: bytes that hash to
	// another digest, a source that could not be read.
	notes []string
	err   error
}

// found is a verified copy in a source.
type found struct {
	source Source
	size   int64
	body   []byte // a manifest's bytes; nil for a blob (read again to push)
}

var _ walk.Reader = (*overlay)(nil)

func newOverlay(reg walk.Reader, sources []Source, concurrency int) *overlay {
	return &overlay{reg: reg, sources: sources, sem: make(chan struct{}, concurrency), m: map[key]*answer{}}
}

// lookup returns the answer for (repo, digest), computing it once.
func (o *overlay) lookup(repo name.Repository, d string, f func(*answer)) *answer {
	k := key{repo.Name(), d}
	o.mu.Lock()
	a, ok := o.m[k]
	if !ok {
		a = &answer{done: make(chan struct{})}
		o.m[k] = a
	}
	o.mu.Unlock()
	if !ok {
		f(a)
		close(a.done)
	}
	<-a.done
	return a
}

// answerOf returns what the overlay learnt, nil if it was never asked.
func (o *overlay) answerOf(repo name.Repository, d string) *answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[key{repo.Name(), d}]
}

// Resolve asks the registry alone: sources hold no tags.
func (o *overlay) Resolve(ctx context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	return o.reg.Resolve(ctx, repo, tag)
}

// Manifest returns the registry's manifest, else a source's verified copy.
func (o *overlay) Manifest(ctx context.Context, repo name.Repository, d string) (walk.Manifest, error) {
	a := o.lookup(repo, d, func(a *answer) {
		m, err := o.reg.Manifest(ctx, repo, d)
		switch {
		case err == nil:
			a.inRegistry, a.manifest = true, &m
			return
		case !errors.Is(err, types.ErrNotFound):
			a.err = err
			return
		}
		a.err = o.find(ctx, a, Want{Repo: repo, Digest: d, Manifest: true})
	})
	if a.err != nil {
		return walk.Manifest{}, a.err
	}
	return *a.manifest, nil
}

// Blob says the registry serves the blob, else whether a source holds a
// verified copy.
func (o *overlay) Blob(ctx context.Context, repo name.Repository, d string) error {
	a := o.lookup(repo, d, func(a *answer) {
		err := o.reg.Blob(ctx, repo, d)
		switch {
		case err == nil:
			a.inRegistry = true
			return
		case !errors.Is(err, types.ErrNotFound):
			a.err = err
			return
		}
		a.err = o.find(ctx, a, Want{Repo: repo, Digest: d})
	})
	return a.err
}

// find asks each source in turn for a copy that hashes to the digest (and,
// for a manifest, parses as one). It returns nil when one does, an error
// wrapping types.ErrNotFound when none holds one, and a fault when none
// does but one could not be read.
func (o *overlay) find(ctx context.Context, a *answer, w Want) error {
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-o.sem }()
	var faults []error
	for _, s := range o.sources {
		f, m, err := read(ctx, s, w)
		switch {
		case err == nil:
			a.found, a.manifest = f, m
			return nil
		case errors.Is(err, types.ErrNotFound):
		case errors.Is(err, types.ErrDigestMismatch), errors.Is(err, errNotManifest):
			a.notes = append(a.notes, err.Error())
		default:
			a.notes = append(a.notes, err.Error())
			faults = append(faults, err)
		}
	}
	if len(faults) > 0 {
		return fmt.Errorf("the registry does not serve %s and no source could be read for it: %w", w.Digest, errors.Join(faults...))
	}
	return fmt.Errorf("the registry does not serve %s, nor does any source%s: %w", w.Digest, noteText(a.notes), types.ErrNotFound)
}

func noteText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// errNotManifest marks a source's bytes that hash right but do not parse
// as a manifest.
var errNotManifest = errors.New("not a manifest")

// read reads one source's copy of w and verifies it: every byte is hashed;
// a manifest is kept in memory (at most 4 MiB) and parsed.
func read(ctx context.Context, s Source, w Want) (*found, *walk.Manifest, error) {
	d, err := digest.Parse(w.Digest)
	if err != nil {
		return nil, nil, err
	}
	rc, err := s.Open(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	v, err := verify(rc, d, s.String())
	if err != nil {
		return nil, nil, err
	}
	defer v.Close()
	if !w.Manifest {
		if _, err := io.Copy(io.Discard, v); err != nil {
			return nil, nil, err
		}
		return &found{source: s, size: v.n}, nil, nil
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(v, maxManifest+1)); err != nil {
		return nil, nil, err
	}
	if buf.Len() > maxManifest {
		return nil, nil, fmt.Errorf("%s: %s is larger than a manifest may be (%d bytes)", s, d, maxManifest)
	}
	m, err := walk.Parse(buf.Bytes(), "")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s hashes right but is %w: %v", s, d, errNotManifest, err)
	}
	return &found{source: s, size: int64(buf.Len()), body: buf.Bytes()}, &m, nil
}
