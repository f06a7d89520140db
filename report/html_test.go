package report

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// store is a registry in memory for the walker: what a test deletes from
// it, a walk finds missing, in the words the walker really uses.
type store struct {
	tags      map[string]walk.Descriptor
	manifests map[string]walk.Manifest
	blobs     map[string]bool
	fault     error // every read fails with it when set
}

func (s *store) Resolve(_ context.Context, _ name.Repository, tag string) (walk.Descriptor, error) {
	if s.fault != nil {
		return walk.Descriptor{}, s.fault
	}
	d, ok := s.tags[tag]
	if !ok {
		return d, types.ErrNotFound
	}
	return d, nil
}

func (s *store) Manifest(_ context.Context, _ name.Repository, d string) (walk.Manifest, error) {
	m, ok := s.manifests[d]
	if !ok {
		return m, types.ErrNotFound
	}
	return m, nil
}

func (s *store) Blob(_ context.Context, _ name.Repository, d string) error {
	if !s.blobs[d] {
		return types.ErrNotFound
	}
	return nil
}

func desc(mediaType, seed string, platform *ocispec.Platform) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromString(seed), Size: 1, Platform: platform}
}

// buildxStore is an index as buildx pushes it: an amd64 and an arm64
// image, and an attestation of the amd64 one, each with a config and a
// layer.
func buildxStore() (*store, map[string]string) {
	s := &store{manifests: map[string]walk.Manifest{}, blobs: map[string]bool{}}
	d := map[string]string{}
	var children []ocispec.Descriptor
	for _, p := range []string{"amd64", "arm64", "attestation"} {
		cfg, layer := desc(ocispec.MediaTypeImageConfig, p+"-config", nil), desc(ocispec.MediaTypeImageLayerGzip, p+"-layer", nil)
		s.blobs[cfg.Digest.String()], s.blobs[layer.Digest.String()] = true, true
		d[p+"-config"], d[p+"-layer"] = cfg.Digest.String(), layer.Digest.String()
		child := desc(ocispec.MediaTypeImageManifest, p, &ocispec.Platform{OS: "linux", Architecture: p})
		if p == "attestation" {
			child.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
			child.Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": d["amd64"]}
		}
		s.manifests[child.Digest.String()] = walk.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{layer}}
		d[p] = child.Digest.String()
		children = append(children, child)
	}
	index := desc(ocispec.MediaTypeImageIndex, "index", nil)
	s.manifests[index.Digest.String()] = walk.Manifest{MediaType: ocispec.MediaTypeImageIndex, Manifests: children}
	d["index"] = index.Digest.String()
	s.tags = map[string]walk.Descriptor{"v1": {Digest: index.Digest.String(), MediaType: ocispec.MediaTypeImageIndex}}
	return s, d
}

// scanned walks ref over s as a scan does and returns the image.
func scanned(t *testing.T, s *store, ref string, opts ...walk.Option) *types.Image {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	got := walk.New(s, opts...).Walk(context.Background(), r)
	return &types.Image{Reference: ref, Digest: got.Digest, MediaType: got.MediaType, Findings: got.Findings,
		Verdict: types.VerdictOf(got.Findings), Manifests: got.Manifests, Blobs: got.Blobs, Tree: got.Tree}
}

// treeText writes a tree one node a line, indented by depth, digests
// named by what they are in the store.
func treeText(n *treeNode, names map[string]string) string {
	byDigest := map[string]string{}
	for k, v := range names {
		byDigest[v] = k
	}
	var b strings.Builder
	var walkTree func(n *treeNode, depth int)
	walkTree = func(n *treeNode, depth int) {
		fields := []string{n.Kind}
		for _, f := range []string{n.Label, byDigest[n.Digest], n.State, n.Why, n.Note} {
			if f != "" {
				fields = append(fields, f)
			}
		}
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), strings.Join(fields, " "))
		for _, c := range n.Children {
			walkTree(c, depth+1)
		}
	}
	walkTree(n, 0)
	return b.String()
}

// The tree is the walk's: every manifest and blob it reached, with the
// state it found each in, under the reference.
func TestImageTree(t *testing.T) {
	amd := "    manifest linux/amd64 amd64\n      config amd64-config\n      layer 1 amd64-layer\n"
	arm := "    manifest linux/arm64 arm64\n      config arm64-config\n      layer 1 arm64-layer\n"
	att := "    attestation attestation for the linux/amd64 manifest " + types.ShortDigest(digest.FromString("amd64").String()) +
		"\n      config attestation-config\n      layer 1 attestation-layer\n"
	for _, tc := range []struct {
		name   string
		ref    string
		break_ func(s *store, d map[string]string)
		opts   []walk.Option
		want   string
	}{
		{
			name: "intact index", ref: "reg.example/app:v1",
			want: "tag v1\n  index index 4 manifests and 6 blobs checked\n" + amd + arm + att,
		},
		{
			name: "the seed: an untagged child and its attestation collected", ref: "reg.example/app:v1",
			break_: func(s *store, d map[string]string) {
				delete(s.manifests, d["amd64"])
				delete(s.manifests, d["attestation"])
			},
			want: "tag v1\n  index index 4 manifests and 2 blobs checked\n" +
				"    manifest linux/amd64 amd64 missing child-missing\n" + arm +
				"    attestation attestation missing attestation-missing for the linux/amd64 manifest " + types.ShortDigest(digest.FromString("amd64").String()) + "\n",
		},
		{
			name: "a layer of a child gone", ref: "reg.example/app:v1",
			break_: func(s *store, d map[string]string) { delete(s.blobs, d["arm64-layer"]) },
			want: "tag v1\n  index index 4 manifests and 6 blobs checked\n" + amd +
				"    manifest linux/arm64 arm64\n      config arm64-config\n      layer 1 arm64-layer missing blob-missing\n" + att,
		},
		{
			name: "an attestation's config gone", ref: "reg.example/app:v1",
			break_: func(s *store, d map[string]string) { delete(s.blobs, d["attestation-config"]) },
			want: "tag v1\n  index index 4 manifests and 6 blobs checked\n" + amd + arm +
				"    attestation attestation for the linux/amd64 manifest " + types.ShortDigest(digest.FromString("amd64").String()) +
				"\n      config attestation-config missing attestation-missing\n      layer 1 attestation-layer\n",
		},
		{
			name: "no child for a platform asked for", ref: "reg.example/app:v1",
			opts: []walk.Option{walk.WithPlatforms(mustPlatform(t, "linux/s390x"))},
			want: "tag v1\n  index index 1 manifest and 0 blobs checked\n" +
				"    manifest linux/s390x absent child-missing the index has no manifest for this platform\n",
		},
		{
			name: "the index itself gone", ref: "reg.example/app:v1",
			break_: func(s *store, d map[string]string) { delete(s.manifests, d["index"]) },
			want:   "tag v1\n  index index missing manifest-missing 1 manifest and 0 blobs checked\n",
		},
		{
			name: "a single image's config gone, pinned by digest", ref: "reg.example/app@" + digest.FromString("amd64").String(),
			break_: func(s *store, d map[string]string) { delete(s.blobs, d["amd64-config"]) },
			want:   "manifest pinned amd64 1 manifest and 2 blobs checked\n  config amd64-config missing blob-missing\n  layer 1 amd64-layer\n",
		},
		{
			name: "the tag gone", ref: "reg.example/app:v2",
			want: "tag v2 missing tag-missing\n",
		},
		{
			name: "the registry did not answer", ref: "reg.example/app:v1",
			break_: func(s *store, d map[string]string) { s.fault = fmt.Errorf("GET /v2/: %w", types.ErrUnauthorized) },
			want:   "tag v1 unchecked unauthorized\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, d := buildxStore()
			if tc.break_ != nil {
				tc.break_(s, d)
			}
			im := scanned(t, s, tc.ref, tc.opts...)
			if got := treeText(imageTree(im), d); got != tc.want {
				t.Errorf("tree\n%s\nwant\n%s\nfindings %+v", got, tc.want, im.Findings)
			}
		})
	}
}

func mustPlatform(t *testing.T, s string) v1.Platform {
	t.Helper()
	p, err := v1.ParsePlatform(s)
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

// The page groups images by namespace and workload, worst first, folds
// the ok ones, and draws the missing child in the broken image's tree.
func TestHTMLGroups(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, result()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	order := []string{
		"<h2>What to do</h2>",
		`<li class="t-broken"><span><span class="v v-broken">broken</span></span><b>1</b>`,
		`<li class="t-unknown">`,
		`<h3>Namespace dam-prod</h3>`,
		`<h4>Deployment signaling</h4>`,
		`<span class="ref">127.0.0.1:5055/demo/buildx:v1</span>`,
		`<li><span class="node gone"><span class="k">manifest</span> <span>linux/amd64</span> <code class="d" title="` + childDigest + `">`,
		`<h3>Not in a workload (command line, image lists)</h3>`,
		`<details class="ok" id="ok">`,
		`<span class="ref">127.0.0.1:5055/demo/single:v1</span>`,
		"<h2>Inputs not read</h2>",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("page lacks %q after byte %d", want, at)
		}
		at += i + len(want)
	}
}

func TestMarkdownEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, text, code string }{
		{"reference", "ghcr.io/org/app:v1", "ghcr.io/org/app:v1", "`ghcr.io/org/app:v1`"},
		{"digest reference", "reg.example/a@sha256:0123", "reg.example/a@sha256:0123", "`reg.example/a@sha256:0123`"},
		{"pipe ends no cell", "a|b", `a\|b`, `a\|b`},
		{"backtick ends no code span", "a`b", "a\\`b", "a\\`b"},
		{"HTML is text", "<img src=x>", "&lt;img src=x&gt;", "&lt;img src=x&gt;"},
		{"entity is text", "&amp;", "&amp;amp;", "&amp;amp;"},
		{"emphasis and links", "*a* _b_ [c](d) ~e~", `\*a\* \_b\_ \[c\](d) \~e\~`, `\*a\* \_b\_ \[c\](d) \~e\~`},
		{"backslash", `a\b`, `a\\b`, `a\\b`},
		{"line feed and escape visible", "a\nb\x1b[1m", `a\\nb\\x1b\[1m`, `a\\nb\\x1b\[1m`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mdText(tc.in); got != tc.text {
				t.Errorf("mdText(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if got := mdCode(tc.in); got != tc.code {
				t.Errorf("mdCode(%q) = %q, want %q", tc.in, got, tc.code)
			}
		})
	}
}

// An image two workloads use is under each; its findings are written once.
func TestMarkdownSharedImage(t *testing.T) {
	r := result()
	broken := r.Images[1]
	broken.Uses = append(broken.Uses, types.Use{Source: "cluster", Kind: "CronJob", Namespace: "ops", Name: "report", Container: "r"})
	var buf bytes.Buffer
	if err := Markdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "`child-missing`"); n != 1 {
		t.Errorf("findings written %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{
		"#### Namespace `dam-prod`\n\n**Deployment `signaling`**\n\n- **broken** `127.0.0.1:5055/demo/buildx:v1`",
		"#### Namespace `ops`\n\n**CronJob `report`**\n\n- **broken** `127.0.0.1:5055/demo/buildx:v1` `sha256:daf12a12d785` — container r\n  - the same image as under dam-prod/Deployment signaling: its findings are there\n",
		"<details><summary>1 ok image: nothing to do</summary>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}
