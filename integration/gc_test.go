//go:build integration

package integration

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"

	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

// gcExtras are the shapes internal/testing/fixture does not push, added here.
type gcExtras struct {
	retagOld, retagNew v1.Hash // gc/retag:v1 pushed twice: old is untagged, in its index
	digestOnly         v1.Hash // gc/single@digest, never tagged, shares the base layer
	neverTagged        v1.Hash // gc/notags@digest: a repository with no _manifests/tags
}

// gcImage builds a deterministic Docker schema2 image from layer contents.
func gcImage(t *testing.T, contents ...string) v1.Image {
	t.Helper()
	img := mutate.MediaType(empty.Image, ggcrtypes.DockerManifestSchema2)
	for _, c := range contents {
		var err error
		img, err = mutate.AppendLayers(img, static.NewLayer([]byte(c), ggcrtypes.DockerLayer))
		if err != nil {
			t.Fatal(err)
		}
	}
	return img
}

func gcPush(t *testing.T, ctx context.Context, ref string, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(ref, "@") {
		ref += d.String()
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithTransport(http.DefaultTransport)); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return d
}

// seedGC starts a registry, pushes the fixtures and the extras, and stops it
// so that its storage can be read and collected.
func seedGC(t *testing.T, version string, neverTagged bool) (*registry.Registry, []fixture.Image, gcExtras) {
	t.Helper()
	r, imgs := startRegistry(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var x gcExtras
	h := r.Host()
	x.retagOld = gcPush(t, ctx, h+"/gc/retag:v1", gcImage(t, "base layer shared by app-a, app-b and the multiarch children", "retag first build"))
	x.retagNew = gcPush(t, ctx, h+"/gc/retag:v1", gcImage(t, "base layer shared by app-a, app-b and the multiarch children", "retag second build"))
	x.digestOnly = gcPush(t, ctx, h+"/gc/single@", gcImage(t, "base layer shared by app-a, app-b and the multiarch children", "pushed by digest only"))
	if neverTagged {
		x.neverTagged = gcPush(t, ctx, h+"/gc/notags@", gcImage(t, "never tagged layer"))
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	return r, imgs, x
}

// inUseTargets: every fixture by tag, the old retag build pinned by digest
// (its tag moved), and the digest-only push pinned by digest.
func inUseTargets(host string, imgs []fixture.Image, x gcExtras) []types.Target {
	ts := targets(imgs)
	for _, ref := range []string{
		host + "/gc/retag:v1",
		host + "/gc/retag@" + x.retagOld.String(),
		host + "/gc/single@" + x.digestOnly.String(),
	} {
		ts = append(ts, types.Target{Ref: ref, Uses: []types.Use{{Source: "args"}}})
	}
	return ts
}

// storageTree lists what a collector can delete: revision links, tag index
// entries, _layers links and blob data, one string each.
func storageTree(t *testing.T, root string) map[string]bool {
	t.Helper()
	v2 := filepath.Join(root, "docker", "registry", "v2")
	out := map[string]bool{}
	err := filepath.WalkDir(v2, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(v2, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		n := len(parts)
		switch {
		case parts[0] == "blobs" && parts[n-1] == "data":
			out["blob "+parts[n-4]+":"+parts[n-2]] = true
		case parts[0] != "repositories" || parts[n-1] != "link" || n < 5:
		case parts[n-5] == "_manifests" && parts[n-4] == "revisions":
			out["manifest "+strings.Join(parts[1:n-5], "/")+" "+parts[n-3]+":"+parts[n-2]] = true
		case parts[n-4] == "index" && n >= 8 && parts[n-6] == "tags":
			out["tagindex "+strings.Join(parts[1:n-7], "/")+" "+parts[n-5]+" "+parts[n-3]+":"+parts[n-2]] = true
		case parts[n-4] == "_layers":
			out["layer "+strings.Join(parts[1:n-4], "/")+" "+parts[n-3]+":"+parts[n-2]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// planTree is a plan in storageTree's terms.
func planTree(p *gc.Plan) map[string]bool {
	out := map[string]bool{}
	for _, m := range p.Manifests {
		out["manifest "+m.Repository+" "+m.Digest] = true
		for _, tag := range m.TagIndex {
			out["tagindex "+m.Repository+" "+tag+" "+m.Digest] = true
		}
	}
	for _, b := range p.Blobs {
		out["blob "+b] = true
	}
	for _, l := range p.LayerLinks {
		out["layer "+l.Repository+" "+l.Digest] = true
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func diffSets(t *testing.T, what string, got, want map[string]bool) {
	t.Helper()
	for _, k := range keys(got) {
		if !want[k] {
			t.Errorf("%s: predicted %s, which the real GC kept", what, k)
		}
	}
	for _, k := range keys(want) {
		if !got[k] {
			t.Errorf("%s: the real GC deleted %s, which was not predicted", what, k)
		}
	}
}

var eligible = regexp.MustCompile(`(manifest|blob|layer link) eligible for deletion: .*?(sha256:[0-9a-f]{64})`)

// dryRunSets parses garbage-collect --dry-run: manifests, blobs and layer
// links "eligible for deletion", by digest.
func dryRunSets(out string) (manifests, blobs, layers map[string]bool) {
	manifests, blobs, layers = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, m := range eligible.FindAllStringSubmatch(out, -1) {
		switch m[1] {
		case "manifest":
			manifests[m[2]] = true
		case "blob":
			blobs[m[2]] = true
		default:
			layers[m[2]] = true
		}
	}
	return
}

// TestGCPrediction seeds a real registry of each version, predicts each
// collector run with gc.Check, and compares the prediction with the dry run
// and with what the real collector deleted, digest for digest.
func TestGCPrediction(t *testing.T) {
	for _, version := range []string{registry.V2, registry.V3} {
		for _, du := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/delete-untagged=%t", version, du), func(t *testing.T) {
				t.Parallel()
				model := gcresult.Distribution28
				if version == registry.V3 {
					model = gcresult.Distribution3
				}
				// A never-tagged repository aborts 2.8.3 with --delete-untagged:
				// TestGCAbort covers that; elsewhere it is part of the seed.
				r, imgs, x := seedGC(t, version, !(model == gcresult.Distribution28 && du))
				st, err := storage.Open(r.Root)
				if err != nil {
					t.Fatal(err)
				}
				rep, plan, err := gc.Check(st, gc.Options{Model: model, DeleteUntagged: du}, inUseTargets(r.Host(), imgs, x))
				if err != nil {
					t.Fatal(err)
				}
				if rep.Abort != nil {
					t.Fatalf("predicted an abort: %+v", rep.Abort)
				}
				predicted := planTree(plan)

				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				before := storageTree(t, r.Root)
				dry, err := r.GC(ctx, du, true)
				if err != nil {
					t.Fatal(err)
				}
				if after := storageTree(t, r.Root); !slices.Equal(keys(after), keys(before)) {
					t.Fatal("the dry run changed the storage")
				}
				dm, db, dl := dryRunSets(dry)
				pm, pb, pl := map[string]bool{}, map[string]bool{}, map[string]bool{}
				for _, m := range plan.Manifests {
					pm[m.Digest] = true
				}
				for _, b := range plan.Blobs {
					pb[b] = true
				}
				for _, l := range plan.LayerLinks {
					pl[l.Digest] = true
				}
				diffSets(t, "dry-run manifests", pm, dm)
				diffSets(t, "dry-run blobs", pb, db)
				if model == gcresult.Distribution3 {
					diffSets(t, "dry-run layer links", pl, dl)
				}

				if _, err := r.GC(ctx, du, false); err != nil {
					t.Fatal(err)
				}
				after := storageTree(t, r.Root)
				deleted := map[string]bool{}
				for k := range before {
					if !after[k] {
						deleted[k] = true
					}
				}
				for k := range after {
					if !before[k] {
						t.Errorf("the GC created %s", k)
					}
				}
				diffSets(t, "real GC", predicted, deleted)
				t.Logf("predicted and deleted: %d manifests, %d blobs, %d layer links; %d in-use images would break",
					len(plan.Manifests), len(plan.Blobs), len(plan.LayerLinks), len(rep.WouldBreak))

				// Sanity on the seed incident: 2.8.3 breaks the tagged indexes.
				breaks := map[string]bool{}
				for _, e := range rep.WouldBreak {
					if e.Verdict == types.Broken {
						breaks[e.Reference] = true
					}
				}
				if model == gcresult.Distribution28 && du {
					for _, fx := range imgs {
						if len(fx.UntaggedChildren()) > 0 && !breaks[fx.Ref] {
							t.Errorf("%s: not predicted to break", fx.Ref)
						}
					}
				}
				if model == gcresult.Distribution3 {
					for _, fx := range imgs {
						if breaks[fx.Ref] {
							t.Errorf("%s: predicted to break under distribution 3", fx.Ref)
						}
					}
				}
				if !du && len(rep.WouldBreak) > 0 {
					t.Errorf("without --delete-untagged nothing in use should break: %+v", rep.WouldBreak)
				}

				// After the run, the damage survey must agree with the scan
				// engine against the same registry, image for image.
				if err := r.Restart(ctx); err != nil {
					t.Fatal(err)
				}
				collected, err := storage.Open(r.Root)
				if err != nil {
					t.Fatal(err)
				}
				post, _, err := gc.Check(collected, gc.Options{Model: model, DeleteUntagged: du}, inUseTargets(r.Host(), imgs, x))
				if err != nil {
					t.Fatal(err)
				}
				res, err := scan.Run(ctx, inUseTargets(r.Host(), imgs, x))
				if err != nil {
					t.Fatal(err)
				}
				compareWithScan(t, post, res)
				if !du && len(post.AlreadyBroken) > 0 {
					t.Errorf("broken after a run without --delete-untagged: %+v", post.AlreadyBroken)
				}
				if len(post.WouldBreak) > 0 {
					t.Errorf("a second run would break more: %+v", post.WouldBreak)
				}
			})
		}
	}
}

// compareWithScan: the survey's already-broken and at-risk images, and the
// digests each lost, are exactly what scan reports.
func compareWithScan(t *testing.T, rep *gcresult.Report, res *types.Result) {
	t.Helper()
	got := map[string]string{}
	for _, e := range rep.AlreadyBroken {
		var ds []string
		for _, l := range e.Losses {
			ds = append(ds, string(l.Code)+" "+l.Digest)
		}
		sort.Strings(ds)
		got[e.Reference] = string(e.Verdict) + " " + strings.Join(ds, ",")
	}
	want := map[string]string{}
	for _, im := range res.Images {
		if im.Verdict == types.OK {
			continue
		}
		var ds []string
		for _, f := range im.Findings {
			ds = append(ds, string(f.Code)+" "+f.Digest)
		}
		sort.Strings(ds)
		want[im.Reference] = string(im.Verdict) + " " + strings.Join(ds, ",")
	}
	for ref, w := range want {
		if got[ref] != w {
			t.Errorf("%s: gc-check says %q, scan says %q", ref, got[ref], w)
		}
	}
	for ref, g := range got {
		if _, ok := want[ref]; !ok {
			t.Errorf("%s: gc-check says %q, scan says ok", ref, g)
		}
	}
	t.Logf("survey and scan agree on %d damaged in-use images", len(want))
}

// TestGCAbort: 2.8.3 with --delete-untagged stops at a repository that never
// had a tag and deletes nothing; gc-check says so instead of predicting.
func TestGCAbort(t *testing.T) {
	r, imgs, x := seedGC(t, registry.V2, true)
	st, err := storage.Open(r.Root)
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := gc.Check(st, gc.Options{Model: gcresult.Distribution28, DeleteUntagged: true}, inUseTargets(r.Host(), imgs, x))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Abort == nil || rep.Abort.Repository != "gc/notags" || len(rep.WouldBreak) != 0 || rep.Counts.Blobs+rep.Counts.Manifests != 0 {
		t.Fatalf("want an abort at gc/notags and no deletions; got abort %+v, %d would break, counts %+v", rep.Abort, len(rep.WouldBreak), rep.Counts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := storageTree(t, r.Root)
	out, err := r.GC(ctx, true, false)
	if err == nil {
		t.Fatalf("the real GC succeeded:\n%s", out)
	}
	if !strings.Contains(err.Error(), "unknown repository") || !strings.Contains(err.Error(), "failed to mark") {
		t.Errorf("the real GC failed otherwise: %v", err)
	}
	if !strings.Contains(err.Error(), rep.Abort.Message) {
		t.Errorf("predicted %q; the GC said %v", rep.Abort.Message, err)
	}
	if after := storageTree(t, r.Root); !slices.Equal(keys(before), keys(after)) {
		t.Error("the aborted GC changed the storage")
	}
}
