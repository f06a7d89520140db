//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// stateConfig says what generateState pushes: Images targets over Repos
// repositories, shapes and damage drawn from Seed. Without Damage every
// image is intact.
type stateConfig struct {
	Images, Repos int
	Seed          uint64
	Damage        bool
}

// How many images each kind of damage takes, with Damage.
const (
	damageChild       = 14 // an index's platform child deleted through the API
	damageBlob        = 14 // a layer's link deleted through the API
	damageGC          = 8  // a digest-pinned image untagged by a tag move, then collected by the registry's GC
	damageAttestation = 5  // only an attestation manifest deleted: at-risk, not broken
)

// benchTarget is one image reference of a generated state, with the
// verdict the generator knows it has.
type benchTarget struct {
	Ref  string
	Want types.Verdict
	Why  string // the damage done, "" for none
}

// requestCounts are requests by regcheck's kinds.
type requestCounts struct {
	Ping, ManifestHead, ManifestGet, BlobHead, BlobGet, Other int
}

func (c requestCounts) Total() int {
	return c.Ping + c.ManifestHead + c.ManifestGet + c.BlobHead + c.BlobGet + c.Other
}

// addKind adds n requests of one of regcheck's request kinds.
func (c *requestCounts) addKind(kind string, n int) {
	switch kind {
	case "ping":
		c.Ping += n
	case "manifest-head":
		c.ManifestHead += n
	case "manifest-get":
		c.ManifestGet += n
	case "blob-head":
		c.BlobHead += n
	case "blob-get":
		c.BlobGet += n
	default:
		c.Other += n
	}
}

// benchState is a generated registry state and what the generator knows
// of it.
type benchState struct {
	Targets []benchTarget
	// Tags, Manifests and Blobs are the minimum a walk of every target
	// must ask, each (repository, digest) once: one resolve per tag, one
	// read per manifest reached (a missing one included), one presence
	// check per blob of a manifest that is there. Plus one version check.
	Tags, Manifests, Blobs int
	// Present are repository/digest pairs of blobs the registry serves,
	// for a capacity probe.
	Present []string
	Pushed  time.Duration
}

// Minimum is the fewest requests of regcheck's design, cold: a ping, a
// HEAD per tag, a GET per manifest, a HEAD per blob.
func (s *benchState) Minimum() requestCounts {
	return requestCounts{Ping: 1, ManifestHead: s.Tags, ManifestGet: s.Manifests, BlobHead: s.Blobs}
}

// Count returns how many targets want each verdict.
func (s *benchState) Count() map[types.Verdict]int {
	out := map[types.Verdict]int{}
	for _, t := range s.Targets {
		out[t.Want]++
	}
	return out
}

// genManifest is a pushed manifest: an image's blobs or an index's children.
type genManifest struct {
	blobs    []string
	children []string
}

// genRepo is one repository of the state as pushed, and what was removed.
type genRepo struct {
	name      string
	push      map[name.Reference]remote.Taggable
	manifests map[string]genManifest
	gone      map[string]bool // manifests deleted, through the API or by the GC
	goneBlobs map[string]bool // blob links deleted through the API
	// Candidates for damage, by kind: indexes (digest, first platform
	// child, its attestation), images (digest, own layer).
	indexes []genIndex
	singles []genSingle
	old     *genSingle // an earlier image of tag v1, which the tag no longer names
	tags    []string
}

type genIndex struct {
	tag, digest, child, attestation string
	childLayer                      string // a layer only child has
}

type genSingle struct {
	tag, digest, layer string // layer: one only this image has
	img                v1.Image
}

// generateState pushes cfg's images to the registry r (a distribution 3.x
// with delete enabled), then, with Damage, breaks some: index children,
// attestations and blob links deleted through the API, and images pinned
// by digest whose tag moved, collected by the registry's own
// garbage-collect --delete-untagged. Shapes, as internal/testing/fixture's: single
// Docker images over a base shared across repositories, buildx OCI
// indexes (amd64 and arm64, each with an attestation child), Docker
// manifest lists (amd64, arm/v7). Everything is drawn from cfg.Seed; blob
// contents name the repository and tag, so no two images share an own
// layer.
func generateState(ctx context.Context, r *registry.Registry, cfg stateConfig) (*benchState, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	gcLost := 0
	if cfg.Damage {
		gcLost = damageGC
	}
	tagged := cfg.Images - gcLost
	repos := make([]*genRepo, cfg.Repos)
	for i := range repos {
		n := tagged / cfg.Repos
		if i < tagged%cfg.Repos {
			n++
		}
		repos[i] = buildRepo(rng, r.Host(), fmt.Sprintf("bench/r%04d", i), n)
	}
	// The images that lose to the GC: an earlier v1 of single-image repos.
	var lost []*genRepo
	if cfg.Damage {
		for _, i := range rng.Perm(len(repos)) {
			if rp := repos[i]; len(rp.singles) > 0 && len(lost) < gcLost {
				old := single(rp.name, "v1-old", rng, ggcrtypes.DockerManifestSchema2)
				rp.old = &old
				lost = append(lost, rp)
			}
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, rp := range repos {
		g.Go(func() error { return pushRepo(gctx, r.Host(), rp) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	var targets []benchTarget
	want := map[string]benchTarget{}
	for _, rp := range repos {
		for _, tag := range rp.tags {
			ref := r.Host() + "/" + rp.name + ":" + tag
			want[ref] = benchTarget{Ref: ref, Want: types.OK}
			targets = append(targets, want[ref])
		}
	}
	if cfg.Damage {
		if err := damage(ctx, r, rng, repos, lost, want); err != nil {
			return nil, err
		}
		for i := range targets {
			targets[i] = want[targets[i].Ref]
		}
		for _, rp := range lost {
			ref := r.Host() + "/" + rp.name + "@" + rp.old.digest
			targets = append(targets, want[ref])
		}
	}
	st := &benchState{Targets: targets, Pushed: time.Since(start)}
	st.minimum(repos)
	return st, nil
}

// pushState generates cfg's state in r and writes its references, one a
// line, to a file for --images-from.
func pushState(ctx context.Context, tb testing.TB, r *registry.Registry, cfg stateConfig) (st *benchState, refs []string, list string) {
	tb.Helper()
	st, err := generateState(ctx, r, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range st.Targets {
		refs = append(refs, t.Ref)
	}
	list = filepath.Join(tb.TempDir(), "images.txt")
	if err := os.WriteFile(list, []byte(strings.Join(refs, "\n")+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return st, refs, list
}

// buildRepo draws a repository's shape and its n tags' images.
func buildRepo(rng *rand.Rand, host, repo string, n int) *genRepo {
	rp := &genRepo{name: repo, push: map[name.Reference]remote.Taggable{}, manifests: map[string]genManifest{}, gone: map[string]bool{}, goneBlobs: map[string]bool{}}
	shape := rng.IntN(100)
	for t := range n {
		tag := fmt.Sprintf("v%d", t+1)
		rp.tags = append(rp.tags, tag)
		ref, _ := name.NewTag(host+"/"+repo+":"+tag, name.Insecure)
		switch {
		case shape < 55: // a single Docker image
			s := single(repo, tag, rng, ggcrtypes.DockerManifestSchema2)
			rp.add(s.img)
			rp.singles = append(rp.singles, s)
			rp.push[ref] = s.img
		case shape < 80: // buildx: an OCI index, two platforms, each attested
			idx, gi := rp.index(repo, tag, rng, ggcrtypes.OCIImageIndex, true, "linux/amd64", "linux/arm64")
			rp.indexes = append(rp.indexes, gi)
			rp.push[ref] = idx
		default: // a Docker manifest list
			idx, gi := rp.index(repo, tag, rng, ggcrtypes.DockerManifestList, false, "linux/amd64", "linux/arm/v7")
			rp.indexes = append(rp.indexes, gi)
			rp.push[ref] = idx
		}
	}
	return rp
}

// baseLayers are a base image's two layers, one of eight shared by every
// repository (the registry stores each once, and links it per repository).
func baseLayers(b int) []v1.Layer {
	return []v1.Layer{
		static.NewLayer(fmt.Appendf(nil, "base %d os layer", b), ggcrtypes.DockerLayer),
		static.NewLayer(fmt.Appendf(nil, "base %d runtime layer", b), ggcrtypes.DockerLayer),
	}
}

// single builds a Docker or OCI image: a shared base and one to three
// layers of its own.
func single(repo, tag string, rng *rand.Rand, mt ggcrtypes.MediaType) genSingle {
	own := 1 + rng.IntN(3)
	layers := baseLayers(rng.IntN(8))
	for i := range own {
		layers = append(layers, static.NewLayer(fmt.Appendf(nil, "%s:%s own layer %d", repo, tag, i), ggcrtypes.DockerLayer))
	}
	img := fixture.BuildImage(mt, v1.Platform{OS: "linux", Architecture: "amd64"}, layers...)
	d, _ := img.Digest()
	dl, _ := layers[2].Digest()
	return genSingle{tag: tag, digest: d.String(), layer: dl.String(), img: img}
}

// index builds an index of one image per platform (and, with attest, an
// attestation manifest for each) and records its manifests.
func (rp *genRepo) index(repo, tag string, rng *rand.Rand, mt ggcrtypes.MediaType, attest bool, platforms ...string) (v1.ImageIndex, genIndex) {
	imt := ggcrtypes.DockerManifestSchema2
	if mt == ggcrtypes.OCIImageIndex {
		imt = ggcrtypes.OCIManifestSchema1
	}
	base := rng.IntN(8)
	idx := mutate.IndexMediaType(empty.Index, mt)
	var gi genIndex
	var children []string
	for i, p := range platforms {
		plat, _ := v1.ParsePlatform(p)
		own := static.NewLayer(fmt.Appendf(nil, "%s:%s %s own layer", repo, tag, p), ggcrtypes.DockerLayer)
		img := fixture.BuildImage(imt, *plat, append(baseLayers(base), own)...)
		d := rp.add(img)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
		children = append(children, d)
		if i == 0 {
			gi.child = d
			ol, _ := own.Digest()
			gi.childLayer = ol.String()
		}
		if attest {
			att := benchAttestation(img)
			ad := rp.add(att)
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
				Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
				Annotations: map[string]string{
					"vnd.docker.reference.type":   "attestation-manifest",
					"vnd.docker.reference.digest": d,
				},
			}})
			children = append(children, ad)
			if i == 0 {
				gi.attestation = ad
			}
		}
	}
	id, _ := idx.Digest()
	gi.tag, gi.digest = tag, id.String()
	rp.manifests[gi.digest] = genManifest{children: children}
	return idx, gi
}

// add records an image manifest's blobs and returns its digest.
func (rp *genRepo) add(img v1.Image) string {
	d, _ := img.Digest()
	cfg, _ := img.ConfigName()
	blobs := []string{cfg.String()}
	m, _ := img.Manifest()
	for _, l := range m.Layers {
		blobs = append(blobs, l.Digest.String())
	}
	rp.manifests[d.String()] = genManifest{blobs: blobs}
	return d.String()
}

// benchAttestation is an attestation manifest for subject as buildx
// pushes one: an in-toto layer, and a config whose platform is
// unknown/unknown (crane's validate requires a platform in every child's
// config).
func benchAttestation(subject v1.Image) v1.Image {
	return fixture.WithPlatform(fixture.BuildAttestation(subject), v1.Platform{OS: "unknown", Architecture: "unknown"})
}

// pushRepo pushes a repository's images: the old v1 first, when there is
// one, then every tag at once (shared blobs uploaded once).
func pushRepo(ctx context.Context, host string, rp *genRepo) error {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithJobs(2)}
	if rp.old != nil {
		ref, _ := name.NewTag(host+"/"+rp.name+":v1", name.Insecure)
		if err := remote.Write(ref, rp.old.img, opts...); err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		rp.add(rp.old.img)
	}
	if err := remote.MultiWrite(rp.push, opts...); err != nil {
		return fmt.Errorf("pushing %s: %w", rp.name, err)
	}
	return nil
}

// damage runs the registry's GC (which collects the lost repositories'
// old v1, untagged by the push over it), then deletes, through the API,
// index children, blob links and attestation manifests of images drawn
// at random, and writes each target's verdict into want.
func damage(ctx context.Context, r *registry.Registry, rng *rand.Rand, repos, lost []*genRepo, want map[string]benchTarget) error {
	if err := r.Stop(); err != nil {
		return err
	}
	gcCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := r.GC(gcCtx, true, false); err != nil {
		return err
	}
	if err := r.Restart(ctx); err != nil {
		return err
	}
	for _, rp := range lost {
		rp.gone[rp.old.digest] = true
		ref := r.Host() + "/" + rp.name + "@" + rp.old.digest
		want[ref] = benchTarget{Ref: ref, Want: types.Broken, Why: "untagged by a push, collected by the registry's GC"}
	}

	var indexes []struct {
		rp *genRepo
		gi genIndex
	}
	var singles []struct {
		rp *genRepo
		s  genSingle
	}
	for _, rp := range repos {
		for _, gi := range rp.indexes {
			indexes = append(indexes, struct {
				rp *genRepo
				gi genIndex
			}{rp, gi})
		}
		for _, s := range rp.singles {
			if rp.old == nil || s.tag != "v1" {
				singles = append(singles, struct {
					rp *genRepo
					s  genSingle
				}{rp, s})
			}
		}
	}
	rng.Shuffle(len(indexes), func(i, j int) { indexes[i], indexes[j] = indexes[j], indexes[i] })
	rng.Shuffle(len(singles), func(i, j int) { singles[i], singles[j] = singles[j], singles[i] })
	del := func(repo, kind, digest string) error { return deleteThroughAPI(ctx, r.Host(), repo, kind, digest) }
	mark := func(rp *genRepo, tag string, v types.Verdict, why string) {
		ref := r.Host() + "/" + rp.name + ":" + tag
		want[ref] = benchTarget{Ref: ref, Want: v, Why: why}
	}
	// Index children: the first platform's manifest.
	for _, x := range indexes[:damageChild] {
		if err := del(x.rp.name, "manifests", x.gi.child); err != nil {
			return err
		}
		x.rp.gone[x.gi.child] = true
		mark(x.rp, x.gi.tag, types.Broken, "index child deleted through the API")
	}
	indexes = indexes[damageChild:]
	// Attestations only: buildx indexes.
	n := 0
	for _, x := range indexes {
		if x.gi.attestation == "" || n == damageAttestation {
			continue
		}
		if err := del(x.rp.name, "manifests", x.gi.attestation); err != nil {
			return err
		}
		x.rp.gone[x.gi.attestation] = true
		mark(x.rp, x.gi.tag, types.AtRisk, "attestation deleted through the API")
		n++
	}
	if n < damageAttestation {
		return fmt.Errorf("only %d buildx indexes for %d attestation losses", n, damageAttestation)
	}
	// Blob links: half an own layer of a single image, half of an index child.
	var blobIdx []struct {
		rp *genRepo
		gi genIndex
	}
	for _, x := range indexes {
		if want[r.Host()+"/"+x.rp.name+":"+x.gi.tag].Why == "" {
			blobIdx = append(blobIdx, x)
		}
	}
	for i := range damageBlob {
		var rp *genRepo
		var tag, layer string
		if i%2 == 0 {
			x := singles[i/2]
			rp, tag, layer = x.rp, x.s.tag, x.s.layer
		} else {
			x := blobIdx[i/2]
			rp, tag, layer = x.rp, x.gi.tag, x.gi.childLayer
		}
		if err := del(rp.name, "blobs", layer); err != nil {
			return err
		}
		rp.goneBlobs[layer] = true
		mark(rp, tag, types.Broken, "layer link deleted through the API")
	}
	return nil
}

// deleteThroughAPI deletes a manifest or a blob link (kind "manifests" or
// "blobs") of a repository as a client of the registry's API does.
func deleteThroughAPI(ctx context.Context, host, repo, kind, digest string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, fmt.Sprintf("http://%s/v2/%s/%s/%s", host, repo, kind, digest), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("DELETE %s %s in %s: %s", kind, digest, repo, resp.Status)
	}
	return nil
}

// minimum counts what a walk of every target must ask, each (repository,
// digest) once, and lists the blobs still served.
func (s *benchState) minimum(repos []*genRepo) {
	byName := map[string]*genRepo{}
	for _, rp := range repos {
		byName[rp.name] = rp
	}
	seenM, seenB := map[string]bool{}, map[string]bool{}
	var visit func(rp *genRepo, d string)
	visit = func(rp *genRepo, d string) {
		if seenM[rp.name+"@"+d] {
			return
		}
		seenM[rp.name+"@"+d] = true
		s.Manifests++
		if rp.gone[d] {
			return
		}
		m := rp.manifests[d]
		for _, c := range m.children {
			visit(rp, c)
		}
		for _, b := range m.blobs {
			if !seenB[rp.name+"@"+b] {
				seenB[rp.name+"@"+b] = true
				s.Blobs++
				if !rp.goneBlobs[b] {
					s.Present = append(s.Present, rp.name+"@"+b)
				}
			}
		}
	}
	for _, t := range s.Targets {
		rest := t.Ref[strings.Index(t.Ref, "/")+1:]
		if repo, d, ok := strings.Cut(rest, "@"); ok {
			visit(byName[repo], d)
			continue
		}
		repo, tag, _ := strings.Cut(rest, ":")
		s.Tags++
		rp := byName[repo]
		ref := rp.push[mustTag(rp, tag)]
		d, _ := ref.(interface{ Digest() (v1.Hash, error) }).Digest()
		visit(rp, d.String())
	}
	slices.Sort(s.Present)
}

// mustTag finds the reference a repository pushed tag under.
func mustTag(rp *genRepo, tag string) name.Reference {
	for ref := range rp.push {
		if ref.Identifier() == tag {
			return ref
		}
	}
	panic("no tag " + tag + " in " + rp.name)
}
