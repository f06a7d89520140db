//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/cache"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/front"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// The front tests put what people run in front of their images between
// regcheck and a real distribution v3.1.2 holding 11 intact images and one
// whose layer was deleted: loopback fronts answering blob HEADs as Harbor's
// proxy cache, Artifactory and ECR Public do (internal/testing/front), and
// a real distribution v3.1.2 in proxy mode (proxy.remoteurl). The pull's
// own outcome through the same front is the truth: a real containerd's
// ctr content fetch where it can run, else go-containerregistry's pull of
// every manifest, config and layer. The contract: broken exactly when the
// pull fails for a 404, ok exactly when it succeeds.

// frontImages are the references, on a host, of what the test registry holds.
type frontImages struct {
	intact  []string // repository:tag on the registry, without the host
	deleted string   // an image whose only layer the registry no longer serves
}

func (f frontImages) on(host string) (intact []string, deleted string) {
	for _, r := range f.intact {
		intact = append(intact, host+"/"+r)
	}
	return intact, host + "/" + f.deleted
}

// pushFrontImages pushes the seven fixtures and four single images, and a
// single image whose layer is then deleted through the registry's API.
func pushFrontImages(t *testing.T, host string) frontImages {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := fixture.Push(ctx, host, "gc/")
	if err != nil {
		t.Fatal(err)
	}
	var out frontImages
	for _, im := range imgs {
		out.intact = append(out.intact, strings.TrimPrefix(im.Ref, host+"/"))
	}
	for i := range 4 {
		ref := fmt.Sprintf("front/single%d:v1", i)
		if _, err := fixture.PushSingle(ctx, host+"/"+ref, fmt.Sprintf("front single %d", i)); err != nil {
			t.Fatal(err)
		}
		out.intact = append(out.intact, ref)
	}
	out.deleted = "front/deleted:v1"
	if _, err := fixture.PushSingle(ctx, host+"/"+out.deleted, "front deleted layer"); err != nil {
		t.Fatal(err)
	}
	layers, err := fixture.Single("front deleted layer").Layers()
	if err != nil {
		t.Fatal(err)
	}
	d, _ := layers[0].Digest()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, "http://"+host+"/v2/front/deleted/blobs/"+d.String(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting the layer %s: %s", d, resp.Status)
	}
	return out
}

// frontPuller pulls an image, every platform of it, as a node does:
// containerd's ctr content fetch (content not shared between pulls), or
// go-containerregistry where containerd cannot run.
func frontPuller(t *testing.T) (func(ref string) error, string) {
	t.Helper()
	if why := containerdReason(); why != "" {
		return pullEverything, "go-containerregistry's pull (containerd not run: " + why + ")"
	}
	cd := startContainerd(t, true)
	var n int
	return func(ref string) error {
		n++
		_, err := cd.ctr(fmt.Sprintf("front%d", n), "content", "fetch", "--plain-http", "--skip-metadata", "--all-platforms", ref)
		return err
	}, "ctr content fetch --all-platforms"
}

// pullEverything GETs ref's manifest, and every child's, config and layer
// with go-containerregistry, the bytes checked against their digests.
func pullEverything(ref string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	desc, err := remote.Get(r, remote.WithAuth(authn.Anonymous))
	if err != nil {
		return err
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		for _, child := range im.Manifests {
			if err := pullEverything(r.Context().Digest(child.Digest.String()).String()); err != nil {
				return err
			}
		}
		return nil
	}
	img, err := desc.Image()
	if err != nil {
		return err
	}
	return pullBlobs(img)
}

// frontVerdicts scans refs through a host with a new Scanner and no cache,
// and returns each verdict, with the deleted image's findings.
func frontVerdicts(t *testing.T, refs []string, extra ...scan.Option) (*types.Result, map[string]*types.Image) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var tg []types.Target
	for _, r := range refs {
		tg = append(tg, types.Target{Ref: r})
	}
	o := append([]scan.Option{scan.WithKeychain(authn.NewMultiKeychain()), scan.WithReask(0), scan.WithTimeout(10 * time.Second)}, extra...)
	res, err := scan.Run(ctx, tg, o...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*types.Image{}
	for i, im := range res.Images {
		out[refs[i]] = im
	}
	return res, out
}

// TestFronts: behind each front, regcheck's verdict is the pull's own:
// the 11 intact images ok, the image whose layer was deleted broken with
// blob-missing, and the pull through the front fails on it alone.
func TestFronts(t *testing.T) {
	up := startEmpty(t, registry.V3)
	imgs := pushFrontImages(t, up.Host())
	pull, how := frontPuller(t)
	bin, err := registry.Binary(registry.V3)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		start func(t *testing.T) string // the front's host
	}{
		{"harbor-proxy-cache", startFront(front.Harbor, up.Host())},
		{"artifactory", startFront(front.Artifactory, up.Host())},
		{"ecr-public", startFront(front.ECRPublic, up.Host())},
		{"distribution-proxy-mode", func(t *testing.T) string {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p, err := registry.Start(ctx, bin, t.TempDir(), "", registry.WithProxy("http://"+up.Host()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Stop() })
			return p.Host()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkFront(t, tc.name, tc.start, imgs, pull, how) })
	}
	t.Run("harbor-proxy-cache-as-mirror", func(t *testing.T) { checkFrontAsMirror(t, up, imgs) })
	t.Run("artifactory-warm-cache", func(t *testing.T) { checkWarmCache(t, up, imgs) })
	t.Run("truthful-registry", func(t *testing.T) { checkTruthful(t, up, imgs) })
}

// checkFront scans the images through the front start makes, then pulls
// them through it, and holds the verdicts to the pulls.
func checkFront(t *testing.T, name string, start func(t *testing.T) string, imgs frontImages, pull func(string) error, how string) {
	host := start(t)
	intact, deleted := imgs.on(host)
	res, got := frontVerdicts(t, append(intact, deleted))
	ok := 0
	for _, ref := range intact {
		if im := got[ref]; im.Verdict == types.OK {
			ok++
		} else {
			t.Errorf("%s: %s, want ok: %s", ref, im.Verdict, outcomeOf(im).detail)
		}
	}
	del := got[deleted]
	if del.Verdict != types.Broken || len(codes(del, types.BlobMissing)) != 1 {
		t.Errorf("%s: %s, want broken with one blob-missing: %s", deleted, del.Verdict, outcomeOf(del).detail)
	}
	// The pull's own outcome, through the same front, after the scan.
	pulled := 0
	for _, ref := range intact {
		if err := pull(ref); err != nil {
			t.Errorf("pulling %s: %v", ref, err)
		} else {
			pulled++
		}
	}
	perr := pull(deleted)
	if perr == nil {
		t.Errorf("pulling %s succeeded: the case proves nothing", deleted)
	}
	t.Logf("%s: regcheck %d of %d intact ok, deleted-layer %s; %s: %d of %d pulled, deleted-layer pull error: %v; blob requests: %d HEAD, %d GET",
		name, ok, len(intact), del.Verdict, how, pulled, len(intact), pullError(perr),
		requestsOf(res, "blob-head"), requestsOf(res, "blob-get"))
}

// checkFrontAsMirror: the nodes pull the registry's images through the Harbor-like
// front, their mirror of it (containerd's hosts.toml), falling back to the
// registry.
func checkFrontAsMirror(t *testing.T, up *registry.Registry, imgs frontImages) {
	// The nodes pull the registry's images through the Harbor-like
	// front, their mirror of it (containerd's hosts.toml), falling back
	// to the registry: every blob comes back through the cache, which
	// fetches it from upstream, so the cache lacks none of them.
	f := startFront(front.Harbor, up.Host())(t)
	hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+up.Host(), "http://"+f)
	config, _ := pathConfig(t, pathCase{hosts: hosts}, up.Host())
	intact, deleted := imgs.on(up.Host())
	_, got := frontVerdicts(t, append(intact, deleted), scan.WithPullPathFile(config))
	for _, ref := range intact {
		if im := got[ref]; im.Verdict != types.OK || len(codes(im, types.MirrorLacks)) > 0 {
			t.Errorf("%s: %s, want ok with the mirror lacking nothing: %s", ref, im.Verdict, outcomeOf(im).detail)
		}
	}
	if del := got[deleted]; del.Verdict != types.Broken {
		t.Errorf("%s: %s, want broken: %s", deleted, del.Verdict, outcomeOf(del).detail)
	}
}

// checkWarmCache runs a cold and a warm scan with a manifest cache behind
// the Artifactory-like front.
func checkWarmCache(t *testing.T, up *registry.Registry, imgs frontImages) {
	// A warm manifest cache keeps no HEAD-only proof from the
	// Artifactory-like front: its cached manifests are GET again, its
	// blobs asked by GET, so the deleted layer is still broken.
	host := startFront(front.Artifactory, up.Host())(t)
	intact, deleted := imgs.on(host)
	refs := append(intact, deleted)
	o := []scan.Option{scan.WithCache(t.TempDir(), 64<<20), scan.WithCacheReverify(cache.Share{})}
	cold, _ := frontVerdicts(t, refs, o...)
	warm, got := frontVerdicts(t, refs, o...)
	if del := got[deleted]; del.Verdict != types.Broken {
		t.Errorf("warm: %s: %s, want broken: %s", deleted, del.Verdict, outcomeOf(del).detail)
	}
	if c, w := requestsOf(cold, "manifest-get"), requestsOf(warm, "manifest-get"); w != c || requestsOf(warm, "blob-head") != 0 {
		t.Errorf("warm run: %d manifest GETs (cold %d), %d blob HEADs; want every cached manifest GET again and no blob HEAD", w, c, requestsOf(warm, "blob-head"))
	}
	t.Logf("artifactory, warm cache: manifest GETs %d cold, %d warm; manifest HEADs %d warm; blob GETs %d warm",
		requestsOf(cold, "manifest-get"), requestsOf(warm, "manifest-get"), requestsOf(warm, "manifest-head"), requestsOf(warm, "blob-get"))
}

// checkTruthful scans the registry itself: no blob GET.
func checkTruthful(t *testing.T, up *registry.Registry, imgs frontImages) {
	intact, _ := imgs.on(up.Host())
	res, got := frontVerdicts(t, intact)
	for _, ref := range intact {
		if got[ref].Verdict != types.OK {
			t.Errorf("%s: %s, want ok", ref, got[ref].Verdict)
		}
	}
	if n := requestsOf(res, "blob-get"); n != 0 {
		t.Errorf("%d blob GETs on a registry whose HEAD is truthful, want 0", n)
	}
	t.Logf("truthful registry: %d blob HEADs, %d blob GETs", requestsOf(res, "blob-head"), requestsOf(res, "blob-get"))
}

func startFront(kind front.Kind, upstream string) func(t *testing.T) string {
	return func(t *testing.T) string {
		f, err := front.Start(kind, upstream)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f.Host()
	}
}

func requestsOf(res *types.Result, kind string) int {
	n := 0
	for _, rc := range res.Requests {
		if rc.Kind == kind {
			n += rc.Count
		}
	}
	return n
}

// pullError is the last line of a pull's error: ctr's own reason, or
// go-containerregistry's error.
func pullError(err error) string {
	if err == nil {
		return "none"
	}
	return lastLines(err.Error(), 1)
}
