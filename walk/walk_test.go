package walk

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/types"
)

// store is a Reader over maps: what it holds is there, what it does not is
// absent, and errs answers a digest with a fault.
type store struct {
	tags      map[string]string
	manifests map[string]Manifest
	blobs     map[string]bool
	errs      map[string]error
}

func (s store) Resolve(_ context.Context, _ name.Repository, tag string) (Descriptor, error) {
	if err := s.errs[tag]; err != nil {
		return Descriptor{}, err
	}
	d, ok := s.tags[tag]
	if !ok {
		return Descriptor{}, fmt.Errorf("tag %s: %w", tag, types.ErrNotFound)
	}
	return Descriptor{Digest: d}, nil
}

func (s store) Manifest(_ context.Context, _ name.Repository, d string) (Manifest, error) {
	if err := s.errs[d]; err != nil {
		return Manifest{}, err
	}
	m, ok := s.manifests[d]
	if !ok {
		return Manifest{}, fmt.Errorf("manifest %s: %w", d, types.ErrNotFound)
	}
	return m, nil
}

func (s store) Blob(_ context.Context, _ name.Repository, d string) error {
	if err := s.errs[d]; err != nil {
		return err
	}
	if !s.blobs[d] {
		return fmt.Errorf("blob %s: %w", d, types.ErrNotFound)
	}
	return nil
}

func dg(s string) digest.Digest { return digest.FromString(s) }

func image(config string, layers ...string) Manifest {
	m := Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: ocispec.Descriptor{Digest: dg(config)}}
	for _, l := range layers {
		m.Layers = append(m.Layers, ocispec.Descriptor{Digest: dg(l), MediaType: ocispec.MediaTypeImageLayerGzip})
	}
	return m
}

func child(m string, os, arch string) ocispec.Descriptor {
	return ocispec.Descriptor{Digest: dg(m), MediaType: ocispec.MediaTypeImageManifest, Platform: &ocispec.Platform{OS: os, Architecture: arch}}
}

// fixture is an index with an amd64 and an arm64 child and an attestation
// of the amd64 one, all present.
func fixture() store {
	att := ocispec.Descriptor{Digest: dg("att"), MediaType: ocispec.MediaTypeImageManifest,
		Platform:    &ocispec.Platform{OS: "unknown", Architecture: "unknown"},
		Annotations: map[string]string{annotationRefType: refTypeAttestation, annotationRefDigest: dg("amd").String()}}
	return store{
		tags: map[string]string{"v1": dg("index").String()},
		manifests: map[string]Manifest{
			dg("index").String(): {MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{child("amd", "linux", "amd64"), child("arm", "linux", "arm64"), att}},
			dg("amd").String():   image("amd-config", "base", "amd-layer"),
			dg("arm").String():   image("arm-config", "base"),
			dg("att").String():   image("att-config", "att-layer"),
		},
		blobs: map[string]bool{dg("amd-config").String(): true, dg("arm-config").String(): true, dg("base").String(): true,
			dg("amd-layer").String(): true, dg("att-config").String(): true, dg("att-layer").String(): true},
		errs: map[string]error{},
	}
}

type key struct {
	Code     types.Code
	Digest   string
	Platform string
}

func keysOf(fs []types.Finding) []key {
	out := []key{}
	for _, f := range fs {
		out = append(out, key{f.Code, f.Digest, f.Platform})
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// TestWalk: blobs are counted per check (the shared base layer twice), as
// a node's pull of each platform would need it.
func TestWalk(t *testing.T) {
	fault := fmt.Errorf("HEAD …: 503: %w", types.ErrRegistry)
	tests := []struct {
		name      string
		change    func(s store)
		opts      []Option
		want      []key
		manifests int
		blobs     int
	}{
		{name: "whole", want: []key{}, manifests: 4, blobs: 7},
		{name: "a child gone", change: func(s store) { delete(s.manifests, dg("arm").String()) },
			want: []key{{types.ChildMissing, dg("arm").String(), "linux/arm64"}}, manifests: 4, blobs: 5},
		{name: "a child's read fails: a fault, not absence", change: func(s store) { s.errs[dg("arm").String()] = fault },
			want: []key{{types.RegistryFault, dg("arm").String(), "linux/arm64"}}, manifests: 4, blobs: 5},
		{name: "the attestation gone", change: func(s store) { delete(s.manifests, dg("att").String()) },
			want: []key{{types.AttestationMissing, dg("att").String(), "unknown/unknown"}}, manifests: 4, blobs: 5},
		{name: "a layer gone", change: func(s store) { delete(s.blobs, dg("amd-layer").String()) },
			want: []key{{types.BlobMissing, dg("amd-layer").String(), "linux/amd64"}}, manifests: 4, blobs: 7},
		{name: "the tag gone", change: func(s store) { delete(s.tags, "v1") },
			want: []key{{types.TagMissing, "", ""}}, manifests: 0, blobs: 0},
		{name: "the tag's read fails", change: func(s store) { s.errs["v1"] = fmt.Errorf("GET /v2/: %w", types.ErrPing) },
			want: []key{{types.PingFailed, "", ""}}, manifests: 0, blobs: 0},
		{name: "only amd64 required, arm64 gone", change: func(s store) { delete(s.manifests, dg("arm").String()) },
			opts: []Option{WithPlatforms(v1.Platform{OS: "linux", Architecture: "amd64"})}, want: []key{}, manifests: 3, blobs: 5},
		{name: "a platform the index lacks", opts: []Option{WithPlatforms(v1.Platform{OS: "linux", Architecture: "s390x"})},
			want: []key{{types.ChildMissing, "", "linux/s390x"}}, manifests: 1, blobs: 0},
		{name: "indexes nested too deep", change: func(s store) {
			for i := range MaxDepth + 1 {
				s.manifests[dg(fmt.Sprint("nest", i)).String()] = Manifest{MediaType: ocispec.MediaTypeImageIndex,
					Manifests: []ocispec.Descriptor{{Digest: dg(fmt.Sprint("nest", i+1)), MediaType: ocispec.MediaTypeImageIndex}}}
			}
			s.tags["v1"] = dg("nest0").String()
		}, want: []key{{types.UnsupportedMedia, dg(fmt.Sprint("nest", MaxDepth)).String(), ""}}, manifests: MaxDepth + 1},
		{name: "an index too large", change: func(s store) {
			m := s.manifests[dg("index").String()]
			for i := range MaxChildren {
				m.Manifests = append(m.Manifests, child(fmt.Sprint(i), "linux", "amd64"))
			}
			s.manifests[dg("index").String()] = m
		}, want: []key{{types.LimitExceeded, dg("index").String(), ""}}, manifests: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fixture()
			if tc.change != nil {
				tc.change(s)
			}
			ref, _ := name.ParseReference("reg.test/app:v1")
			got := New(s, tc.opts...).Walk(context.Background(), ref)
			if k := keysOf(got.Findings); !reflect.DeepEqual(k, tc.want) {
				t.Errorf("findings %+v\nwant %+v", got.Findings, tc.want)
			}
			if got.Manifests != tc.manifests || got.Blobs != tc.blobs {
				t.Errorf("read %d manifests and %d blobs, want %d and %d", got.Manifests, got.Blobs, tc.manifests, tc.blobs)
			}
		})
	}
}

func TestWalkVisits(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	ref, _ := name.ParseReference("reg.test/app:v1")
	New(fixture(), WithVisit(func(d string) { mu.Lock(); seen[d] = true; mu.Unlock() })).Walk(context.Background(), ref)
	for _, want := range []string{"index", "amd", "arm", "att", "base", "amd-layer", "att-layer"} {
		if !seen[dg(want).String()] {
			t.Errorf("%s not visited", want)
		}
	}
	if len(seen) != 10 {
		t.Errorf("visited %d digests, want 10", len(seen))
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType, want string
		bad                           bool
	}{
		{name: "oci index by its fields", body: `{"manifests":[]}`, want: ocispec.MediaTypeImageIndex},
		{name: "docker image by its mediaType", body: `{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"digest":"` + dg("c").String() + `"}}`, want: "application/vnd.docker.distribution.manifest.v2+json"},
		{name: "the body's type beats the header's", body: `{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`, contentType: "application/vnd.oci.image.manifest.v1+json", want: ocispec.MediaTypeImageIndex},
		{name: "a JSON page", body: `{"status":"ok"}`, bad: true},
		{name: "cut short", body: `{"manifests":[{"dig`, bad: true},
		{name: "an invalid child digest", body: `{"manifests":[{"digest":"sha256:zz"}]}`, bad: true},
		{name: "an image without a config digest", body: `{"mediaType":"application/vnd.oci.image.manifest.v1+json"}`, bad: true},
		{name: "an artifact type is not an error", body: `{"mediaType":"application/vnd.example+json"}`, want: "application/vnd.example+json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.body), tc.contentType)
			if (err != nil) != tc.bad || (!tc.bad && m.MediaType != tc.want) {
				t.Errorf("Parse = %q, %v; want %q, bad=%v", m.MediaType, err, tc.want, tc.bad)
			}
			if err != nil && errors.Is(err, types.ErrNotFound) {
				t.Errorf("a bad body is absence: %v", err)
			}
		})
	}
}

// treeText writes a tree one node a line, indented by depth, with digests
// named by the strings they were made from.
func treeText(n *types.Node, names ...string) string {
	byDigest := map[string]string{}
	for _, s := range names {
		byDigest[dg(s).String()] = s
	}
	var b strings.Builder
	var write func(n *types.Node, depth int)
	write = func(n *types.Node, depth int) {
		fields := []string{n.Kind}
		for _, f := range []string{n.Label, byDigest[n.Digest], n.State, string(n.Code)} {
			if f != "" {
				fields = append(fields, f)
			}
		}
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), strings.Join(fields, " "))
		for _, c := range n.Children {
			write(c, depth+1)
		}
	}
	write(n, 0)
	return b.String()
}

// TestWalkTree: the tree holds every node the walk reached, in the order
// the manifests list them, each with the state the walk found.
func TestWalkTree(t *testing.T) {
	names := []string{"index", "amd", "arm", "att", "amd-config", "arm-config", "att-config", "base", "amd-layer", "att-layer"}
	s := fixture()
	delete(s.manifests, dg("arm").String())
	delete(s.blobs, dg("amd-layer").String())
	s.errs[dg("att-layer").String()] = fmt.Errorf("HEAD …: %w", types.ErrUnreachable)
	ref, _ := name.ParseReference("reg.test/app:v1")
	got := New(s, WithPlatforms(v1.Platform{OS: "linux", Architecture: "amd64"}, v1.Platform{OS: "linux", Architecture: "arm64"}, v1.Platform{OS: "linux", Architecture: "s390x"})).Walk(context.Background(), ref)
	want := `index index
  manifest linux/s390x absent child-missing
  manifest linux/amd64 amd
    config amd-config
    layer layer 1 base
    layer layer 2 amd-layer missing blob-missing
  manifest linux/arm64 arm missing child-missing
  attestation unknown/unknown att
    config att-config
    layer layer 1 att-layer unchecked unreachable
`
	if text := treeText(got.Tree, names...); text != want {
		t.Errorf("tree\n%s\nwant\n%s", text, want)
	}
	tag := New(s).Walk(context.Background(), mustRef(t, "reg.test/app:gone"))
	if tag.Tree != nil {
		t.Errorf("a tag that does not resolve has a tree: %+v", tag.Tree)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
