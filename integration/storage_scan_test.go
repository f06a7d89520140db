//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// storageCopies is how many more copies of the fixtures each registry holds
// for the timing: as many repositories again, sharing every blob.
const storageCopies = 20

// TestStorageScanEqualsHTTP walks the same images over each real
// registry's API and over its filesystem storage (scan --storage, the
// registry stopped, as its docs ask of a GC), before its own garbage
// collector runs, after it, and after blob data is lost: the verdicts,
// digests, counts and findings (code, severity, digest, platform) must be
// equal image by image. It logs the time of each walk; none is asserted.
func TestStorageScanEqualsHTTP(t *testing.T) {
	for _, version := range []string{registry.V2, registry.V3} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			// 2.8.3 aborts its GC on a repository that never had a tag.
			r, imgs, x := seedGC(t, version, version == registry.V3)
			refs := storageRefs(t, r, imgs, x)
			list := filepath.Join(t.TempDir(), "images.txt")
			if err := os.WriteFile(list, []byte(strings.Join(refs, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()

			compare := func(phase string) map[string]*types.Image {
				t.Helper()
				// The registry is stopped: read its storage.
				stored, storedCode, storedTime := scanCLI(t, "--images-from", list, "--storage", r.Root)
				if err := r.Restart(ctx); err != nil {
					t.Fatal(err)
				}
				served, servedCode, servedTime := scanCLI(t, "--images-from", list)
				if err := r.Stop(); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s %s, %d images: storage walk %v, HTTP walk %v (%d requests): %.1f× faster (walks alone %dms and %dms)",
					version, phase, len(served.Images), storedTime.Round(time.Millisecond), servedTime.Round(time.Millisecond),
					sum(served.Summary.Requests), float64(servedTime)/float64(storedTime), stored.Summary.DurationMS, served.Summary.DurationMS)
				if storedCode != servedCode {
					t.Errorf("%s: exit %d over the storage, %d over HTTP", phase, storedCode, servedCode)
				}
				if n := sum(stored.Summary.Requests); n != 0 {
					t.Errorf("%s: the storage walk sent %d requests", phase, n)
				}
				if len(stored.InputErrors)+len(served.InputErrors) > 0 {
					t.Errorf("%s: input errors %+v %+v", phase, stored.InputErrors, served.InputErrors)
				}
				return sameImages(t, phase, stored.Images, served.Images, len(refs))
			}

			before := compare("before GC")
			for ref, im := range before {
				want := types.OK
				if strings.Contains(ref, "/nothere:") || strings.HasSuffix(ref, ":gone") {
					want = types.Broken
				}
				if im.Verdict != want {
					t.Errorf("before GC: %s is %s %+v, want %s", ref, im.Verdict, im.Findings, want)
				}
			}

			gcCtx, gcCancel := context.WithTimeout(ctx, time.Minute)
			defer gcCancel()
			if _, err := r.GC(gcCtx, true, false); err != nil {
				t.Fatal(err)
			}
			after := compare("after GC")
			if version == registry.V2 {
				for _, fx := range []string{"buildx", "multiarch", "manifestlist", "partial"} {
					if im := after[fixture.Ref(r.Host(), "gc/", fx, "v1")]; im == nil || im.Verdict != types.Broken {
						t.Errorf("after the 2.8.3 GC, %s is not broken: %+v", fx, im)
					}
				}
			}

			// A layer's data lost behind the registry's back (shared by every
			// copy of single): the registry's 404 and the storage's absence agree.
			single := imgs[slices.IndexFunc(imgs, func(im fixture.Image) bool { return im.Name == "single" })]
			layer := single.Blobs[len(single.Blobs)-1]
			data := filepath.Join(r.Root, "docker", "registry", "v2", "blobs", layer.Algorithm, layer.Hex[:2], layer.Hex, "data")
			if err := os.Remove(data); err != nil {
				t.Fatal(err)
			}
			lost := compare("after a layer's data is lost")
			if im := lost[single.Ref]; im == nil || im.Verdict != types.Broken {
				t.Errorf("%s without its layer's data: %+v, want broken", single.Ref, im)
			}
		})
	}
}

// storageRefs pushes storageCopies more copies of the fixtures (the
// registry is stopped on return, as seedGC leaves it) and returns every
// reference to walk: each fixture and copy by tag, the GC extras pinned,
// each index child pinned, a tagged child by its tag, a tag and a
// repository that do not exist.
func storageRefs(t *testing.T, r *registry.Registry, imgs []fixture.Image, x gcExtras) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		g      errgroup.Group
		copies = make([][]fixture.Image, storageCopies)
	)
	g.SetLimit(2)
	for i := range storageCopies {
		g.Go(func() (err error) {
			copies[i], err = fixture.Push(ctx, r.Host(), fmt.Sprintf("copy%02d/", i))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, tgt := range inUseTargets(r.Host(), imgs, x) {
		refs = append(refs, tgt.Ref)
	}
	for _, fx := range imgs {
		repo := strings.TrimSuffix(fx.Ref, ":v1")
		for _, c := range fx.Children {
			refs = append(refs, repo+"@"+c.Digest.String())
		}
	}
	if x.neverTagged.Hex != "" {
		refs = append(refs, r.Host()+"/gc/notags@"+x.neverTagged.String())
	}
	refs = append(refs, r.Host()+"/gc/partial:v1-amd64", r.Host()+"/gc/single:gone", r.Host()+"/gc/nothere:v1")
	for _, c := range copies {
		for _, fx := range c {
			refs = append(refs, fx.Ref)
		}
	}
	return refs
}

// scanCLI runs regcheck scan -o json in process and returns its document,
// exit code and wall time.
func scanCLI(t *testing.T, args ...string) (report.Document, int, time.Duration) {
	t.Helper()
	start := time.Now()
	code, out, errs := runCLI(t, append([]string{"scan", "-o", "json"}, args...)...)
	took := time.Since(start)
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("scan %s: exit %d, %v\n%s%s", strings.Join(args, " "), code, err, out, errs)
	}
	return doc, code, took
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// sameImages asserts two walks' images are equal reference by reference
// (what each resolved to, its verdict, counts and findings, but for the
// wording of a message), and returns them by reference.
func sameImages(t *testing.T, phase string, got, want []*types.Image, n int) map[string]*types.Image {
	t.Helper()
	byRef := func(ims []*types.Image) map[string]*types.Image {
		out := map[string]*types.Image{}
		for _, im := range ims {
			out[im.Reference] = im
		}
		return out
	}
	g, w := byRef(got), byRef(want)
	if len(g) != n || len(w) != n {
		t.Fatalf("%s: %d and %d images, want %d", phase, len(g), len(w), n)
	}
	type finding struct {
		Code             types.Code
		Severity         types.Severity
		Digest, Platform string
	}
	shape := func(im *types.Image) string {
		var fs []finding
		for _, f := range im.Findings {
			fs = append(fs, finding{f.Code, f.Severity, f.Digest, f.Platform})
		}
		return fmt.Sprintf("%s %s %s manifests=%d blobs=%d %+v", im.Verdict, im.Digest, im.MediaType, im.Manifests, im.Blobs, fs)
	}
	for ref, wi := range w {
		gi := g[ref]
		if gi == nil {
			t.Errorf("%s: %s is not in the storage walk", phase, ref)
			continue
		}
		if a, b := shape(gi), shape(wi); a != b {
			t.Errorf("%s: %s\n  storage: %s\n  HTTP:    %s", phase, ref, a, b)
		}
	}
	return w
}
