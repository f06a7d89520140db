package rescue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	rtypes "github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Writer pushes a plan to the images' own repositories: blobs first, then
// child manifests, then the indexes that list them. It only adds: nothing
// is deleted, no tag is moved, and nothing is pushed whose bytes do not
// hash to its digest, so a restore cut short leaves the registry no worse
// than it was.
type Writer struct {
	o *options
}

// NewWriter returns a Writer configured by opts (credentials, transport, WithTag).
func NewWriter(opts ...Option) (*Writer, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Writer{o: o}, nil
}

// Write pushes every piece of the plan that is not blocked, in the plan's
// order, setting each piece's Outcome, and with WithTag tags what no tag
// holds. Then, when after is not nil, it walks each image again over
// after (a fresh read of the registry, with no memory of the plan) and
// keeps what that walk found in Image.After. A failed push is an outcome,
// not an error: Write fails only when ctx ends.
func (w *Writer) Write(ctx context.Context, p *Plan, after walk.Reader) error {
	for _, im := range p.Images {
		if ctx.Err() != nil {
			break
		}
		w.image(ctx, im)
	}
	p.Written = true
	if after != nil {
		var wg sync.WaitGroup
		for _, im := range p.Images {
			if im.Digest == "" {
				continue
			}
			wg.Go(func() {
				res := walk.New(after, walk.WithConcurrency(w.o.concurrency)).Walk(ctx, im.repo.Digest(im.Digest))
				im.After = res.Findings
			})
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("writing interrupted: %w", err)
	}
	return nil
}

// image pushes one image's pieces: blobs in parallel, then manifests in
// order, each only if everything it references is there.
func (w *Writer) image(ctx context.Context, im *Image) {
	opts := append(w.o.remote(), remote.WithContext(ctx))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(w.o.concurrency)
	var manifests []*Piece
	for _, p := range im.Pieces {
		switch {
		case p.Blocked != "":
			p.Outcome, p.Error = Skipped, p.Blocked
		case p.Kind.IsManifest():
			manifests = append(manifests, p)
		default:
			g.Go(func() error {
				w.done(p, remote.WriteLayer(im.repo, &layer{ctx: gctx, p: p, repo: im.repo}, append(opts, remote.WithContext(gctx))...))
				return nil
			})
		}
	}
	g.Wait()
	failed := map[string]string{}
	for _, p := range im.Pieces {
		if p.Outcome == Failed || p.Outcome == Skipped {
			failed[p.Digest] = string(p.Kind)
		}
	}
	for _, p := range manifests {
		if lacking := w.lacking(im, p, failed); lacking != "" {
			p.Outcome, p.Error = Skipped, "not pushed: its "+lacking+" could not be pushed"
			failed[p.Digest] = string(p.Kind)
			continue
		}
		err := w.put(ctx, im.repo.Digest(p.Digest), p, opts)
		w.done(p, err)
		if err != nil {
			failed[p.Digest] = string(p.Kind)
			continue
		}
		if p.Untagged && w.o.tagPrefix != "" {
			w.tag(ctx, im, p, opts)
		}
	}
}

// lacking names a manifest's references whose push failed, "" if none did.
func (w *Writer) lacking(im *Image, p *Piece, failed map[string]string) string {
	m, err := walk.Parse(p.body, "")
	if err != nil {
		return "manifest body"
	}
	var refs []string
	for _, c := range m.Manifests {
		refs = append(refs, c.Digest.String())
	}
	if m.IsImage() {
		refs = append(refs, m.Config.Digest.String())
		for _, l := range m.Layers {
			refs = append(refs, l.Digest.String())
		}
	}
	for _, r := range refs {
		if k, ok := failed[r]; ok {
			return k + " " + rtypes.ShortDigest(r)
		}
	}
	return ""
}

func (w *Writer) done(p *Piece, err error) {
	if err != nil {
		p.Outcome, p.Error = Failed, err.Error()
		w.o.logger.Warn("push failed", "digest", p.Digest, "kind", p.Kind, "err", err)
		return
	}
	p.Outcome = Pushed
	w.o.logger.Info("pushed", "digest", p.Digest, "kind", p.Kind, "bytes", p.Size, "from", p.Source)
}

// put pushes a manifest's bytes to ref, after checking once more that they
// hash to its digest.
func (w *Writer) put(ctx context.Context, ref name.Reference, p *Piece, opts []remote.Option) error {
	if got := digest.FromBytes(p.body); got.String() != p.Digest {
		return fmt.Errorf("the bytes held for %s hash to %s: %w", p.Digest, got, rtypes.ErrDigestMismatch)
	}
	return remote.Put(ref, rawManifest{body: p.body, mediaType: types.MediaType(p.MediaType)}, append(opts, remote.WithContext(ctx))...)
}

// tag tags a pushed manifest prefix-<12 hex>, unless that tag exists and
// points elsewhere: a tag is never moved.
func (w *Writer) tag(ctx context.Context, im *Image, p *Piece, opts []remote.Option) {
	t := im.repo.Tag(fmt.Sprintf("%s-%s", w.o.tagPrefix, digest.Digest(p.Digest).Encoded()[:12]))
	d, err := remote.Head(t, append(opts, remote.WithContext(ctx))...)
	var te *transport.Error
	switch {
	case err == nil && d.Digest.String() == p.Digest:
	case err == nil:
		p.Error = fmt.Sprintf("not tagged: tag %s exists and points at %s; it is not moved", t.TagStr(), d.Digest)
		return
	case errors.As(err, &te) && te.StatusCode == http.StatusNotFound:
		if err := remote.Put(t, rawManifest{body: p.body, mediaType: types.MediaType(p.MediaType)}, append(opts, remote.WithContext(ctx))...); err != nil {
			p.Error = fmt.Sprintf("not tagged %s: %v", t.TagStr(), err)
			return
		}
	default:
		p.Error = fmt.Sprintf("not tagged: could not ask whether tag %s exists: %v", t.TagStr(), err)
		return
	}
	p.Tag, p.Untagged = t.TagStr(), false
}

// rawManifest is a manifest's bytes as remote.Put takes them.
type rawManifest struct {
	body      []byte
	mediaType types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.body, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mediaType, nil }

// layer is a piece as remote.WriteLayer takes a blob: its bytes are read
// from the source again, and hashed as they go; bytes that do not hash to
// the digest fail the upload before it is committed.
type layer struct {
	ctx  context.Context
	p    *Piece
	repo name.Repository
}

var _ v1.Layer = (*layer)(nil)

func (l *layer) Digest() (v1.Hash, error) { return v1.NewHash(l.p.Digest) }
func (l *layer) DiffID() (v1.Hash, error) {
	return v1.Hash{}, errors.New("rescue pushes blobs as stored: no diff ID")
}
func (l *layer) Size() (int64, error) { return l.p.Size, nil }
func (l *layer) MediaType() (types.MediaType, error) {
	return types.MediaType("application/octet-stream"), nil
}
func (l *layer) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("rescue pushes blobs as stored: not uncompressed")
}

func (l *layer) Compressed() (io.ReadCloser, error) {
	rc, err := l.p.source.Open(l.ctx, Want{Repo: l.repo, Digest: l.p.Digest})
	if err != nil {
		return nil, err
	}
	return verify(rc, digest.Digest(l.p.Digest), l.p.Source)
}
