package scan_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// mapReader is a walk.Reader over maps, keyed by repository@digest.
type mapReader struct {
	tags      map[string]string
	manifests map[string]walk.Manifest
	blobs     map[string]bool
}

func (m mapReader) Resolve(_ context.Context, repo name.Repository, tag string) (walk.Descriptor, error) {
	if d, ok := m.tags[repo.Name()+":"+tag]; ok {
		return walk.Descriptor{Digest: d}, nil
	}
	return walk.Descriptor{}, fmt.Errorf("tag %s: %w", tag, types.ErrNotFound)
}

func (m mapReader) Manifest(_ context.Context, repo name.Repository, d string) (walk.Manifest, error) {
	if mf, ok := m.manifests[repo.Name()+"@"+d]; ok {
		return mf, nil
	}
	return walk.Manifest{}, fmt.Errorf("manifest %s: %w", d, types.ErrNotFound)
}

func (m mapReader) Blob(_ context.Context, repo name.Repository, d string) error {
	if m.blobs[repo.Name()+"@"+d] {
		return nil
	}
	return fmt.Errorf("blob %s: %w", d, types.ErrNotFound)
}

// noHTTP fails, and counts, every request.
type noHTTP struct{ n atomic.Int32 }

func (t *noHTTP) RoundTrip(*http.Request) (*http.Response, error) {
	t.n.Add(1)
	return nil, errors.New("no request may be sent")
}

// TestWithReader: a Scanner given a Reader walks over it alone, with Run's
// verdicts, and sends no request.
func TestWithReader(t *testing.T) {
	dg := func(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
	img := walk.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{Digest: digest.Digest(dg('c'))}, Layers: []ocispec.Descriptor{{Digest: digest.Digest(dg('l'))}}}
	idx := walk.Manifest{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
		{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(dg('a')), Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}},
		{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(dg('b')), Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}},
	}}
	r := mapReader{
		tags:      map[string]string{"reg.example/app:v1": dg('i')},
		manifests: map[string]walk.Manifest{"reg.example/app@" + dg('i'): idx, "reg.example/app@" + dg('a'): img},
		blobs:     map[string]bool{"reg.example/app@" + dg('c'): true, "reg.example/app@" + dg('l'): true},
	}
	tr := &noHTTP{}
	s, err := scan.New(scan.WithReader(r), scan.WithTransport(tr), scan.WithReask(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := s.Run(ctx, []types.Target{{Ref: "reg.example/app:v1"}, {Ref: "reg.example/app@" + dg('a')}, {Ref: "reg.example/app:v2"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		verdict types.Verdict
		code    types.Code
	}{{types.Broken, types.ChildMissing}, {types.OK, ""}, {types.Broken, types.TagMissing}} {
		im := res.Images[i]
		if im.Verdict != want.verdict || (want.code != "" && (len(im.Findings) != 1 || im.Findings[0].Code != want.code)) {
			t.Errorf("%s: %s %+v, want %s %s", im.Reference, im.Verdict, im.Findings, want.verdict, want.code)
		}
	}
	if d, _, err := s.Resolve(ctx, "reg.example/app:v1"); err != nil || d != dg('i') {
		t.Errorf("Resolve: %s, %v", d, err)
	}
	if m, err := s.Manifest(ctx, "reg.example/app:v1"); err != nil || m.Digest != dg('i') {
		t.Errorf("Manifest: %+v, %v", m, err)
	}
	if _, ok := s.Reader().(mapReader); !ok {
		t.Errorf("Reader is a %T, want the one given", s.Reader())
	}
	if n := tr.n.Load(); n != 0 || len(res.Requests) != 0 {
		t.Errorf("%d requests sent, %v counted; want none", n, res.Requests)
	}
	if _, err := scan.New(scan.WithReader(nil)); err == nil {
		t.Error("a nil Reader is accepted")
	}
}
