//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// scanCached runs `regcheck scan -o json --cache-dir dir [flags]` on every
// fixture, named on host, and returns the report and how long it took.
func scanCached(t *testing.T, dir, host string, imgs []fixture.Image, flags ...string) (report.Document, time.Duration) {
	t.Helper()
	args := append([]string{"scan", "-o", "json", "--timeout", "5s", "--cache-dir", dir}, flags...)
	for _, fx := range imgs {
		args = append(args, fixture.Ref(host, "gc/", fx.Name, "v1"))
	}
	var out, errb bytes.Buffer
	start := time.Now()
	code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	took := time.Since(start)
	var doc report.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("exit %d, no JSON report: %v\n%s%s", code, err, out.String(), errb.String())
	}
	if len(doc.Images) != len(imgs) {
		t.Fatalf("%d images in the report, want %d", len(doc.Images), len(imgs))
	}
	return doc, took
}

// images are a report's images by fixture name (a report orders them its
// own way).
func images(t *testing.T, doc report.Document, host string, imgs []fixture.Image) map[string]*types.Image {
	t.Helper()
	out := map[string]*types.Image{}
	for _, fx := range imgs {
		i := slices.IndexFunc(doc.Images, func(im *types.Image) bool { return im.Reference == fixture.Ref(host, "gc/", fx.Name, "v1") })
		if i < 0 {
			t.Fatalf("the report has no %s", fx.Name)
		}
		out[fx.Name] = doc.Images[i]
	}
	return out
}

// verdicts are a report's verdicts by fixture name.
func verdicts(t *testing.T, doc report.Document, host string, imgs []fixture.Image) map[string]types.Verdict {
	t.Helper()
	out := map[string]types.Verdict{}
	for name, im := range images(t, doc, host, imgs) {
		out[name] = im.Verdict
	}
	return out
}

func requestsText(rs map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(rs)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, rs[k]))
	}
	return strings.Join(parts, ", ")
}

// noReverify reads no cached manifest again (see TestCacheReverify).
var noReverify = []string{"--cache-reverify", "0"}

// TestCache runs the CLI twice with one --cache-dir against distribution
// v3.1.2, reading no cached manifest again: the second run GETs no
// manifest (it HEADs each instead: no pull on Docker Hub) and says the
// same. A child deleted through the registry
// API since is still missing: the cache holds its bytes, the registry's
// 404 to the HEAD decides. Through a proxy answering 503 to manifests by
// digest, the cached images are unknown, not ok.
func TestCache(t *testing.T) {
	r, imgs := startRegistry(t, registry.V3)
	dir := t.TempDir()

	cold, coldTook := scanCached(t, dir, r.Host(), imgs, noReverify...)
	warm, warmTook := scanCached(t, dir, r.Host(), imgs, noReverify...)
	t.Logf("%d images\ncold: %s in %s\nwarm: %s in %s", len(imgs),
		requestsText(cold.Summary.Requests), coldTook.Round(time.Millisecond),
		requestsText(warm.Summary.Requests), warmTook.Round(time.Millisecond))
	gets, heads := cold.Summary.Requests["manifest-get"], cold.Summary.Requests["manifest-head"]
	if gets == 0 {
		t.Fatalf("the cold run GET no manifest: %v", cold.Summary.Requests)
	}
	if n := warm.Summary.Requests["manifest-get"]; n != 0 {
		t.Errorf("warm: %d manifest GETs, want 0", n)
	}
	if n := warm.Summary.Requests["manifest-head"]; n != heads+gets {
		t.Errorf("warm: %d manifest HEADs, want the %d tags' and one per manifest the cold run GET (%d)", n, heads, gets)
	}
	if a, b := cold.Summary.Requests["blob-head"], warm.Summary.Requests["blob-head"]; a != b {
		t.Errorf("blob HEADs: cold %d, warm %d", a, b)
	}
	if a, b := verdicts(t, cold, r.Host(), imgs), verdicts(t, warm, r.Host(), imgs); !maps.Equal(a, b) {
		t.Errorf("verdicts: cold %v, warm %v", a, b)
	}
	for name, v := range verdicts(t, warm, r.Host(), imgs) {
		if v != types.OK {
			t.Errorf("%s: %s on an intact registry", name, v)
		}
	}

	// Delete an index child through the registry API.
	var multiarch fixture.Image
	for _, fx := range imgs {
		if fx.Name == "multiarch" {
			multiarch = fx
		}
	}
	child := multiarch.Children[0].Digest.String()
	req, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("http://%s/v2/gc/multiarch/manifests/%s", r.Host(), child), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting %s: %v %v", child, err, resp)
	}
	resp.Body.Close()
	if serves(t, r.Host(), "gc/multiarch", child) {
		t.Fatal("the registry still serves the deleted child")
	}
	after, _ := scanCached(t, dir, r.Host(), imgs, noReverify...)
	t.Logf("after deleting %s: %s", child, requestsText(after.Summary.Requests))
	got := images(t, after, r.Host(), imgs)
	for _, fx := range imgs {
		im, want := got[fx.Name], types.OK
		if fx.Name == "multiarch" {
			want = types.Broken
			if c := codes(im, types.ChildMissing); !slices.Equal(c, []string{child}) {
				t.Errorf("multiarch: child-missing for %v, want %s (findings %+v)", c, child, im.Findings)
			}
		}
		if im.Verdict != want {
			t.Errorf("%s: %s, want %s", fx.Name, im.Verdict, want)
		}
	}
	if n := after.Summary.Requests["manifest-get"]; n != 0 {
		t.Errorf("after the delete: %d manifest GETs, want 0", n)
	}

	// The cache's key is the digest alone: through another host, the bytes
	// come from the cache, but whether that host serves them is its to say.
	p, err := faultproxy.Start(faultproxy.Config{Upstream: r.Host(), Rules: []faultproxy.Rule{rule(faultproxy.Unavailable, byDigest)}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	faulty, _ := scanCached(t, dir, p.Host(), imgs, noReverify...)
	for name, v := range verdicts(t, faulty, p.Host(), imgs) {
		if v != types.Unknown {
			t.Errorf("%s through a proxy failing every manifest HEAD: %s, want unknown", name, v)
		}
	}
	if n := faulty.Summary.Requests["manifest-get"]; n != 0 {
		t.Errorf("through the proxy: %d manifest GETs, want 0", n)
	}
}

// TestCacheReverify warms a --cache-dir against each real registry, then
// changes the bytes the registry stores under a cached manifest's digest
// (its data file in the filesystem storage gets a space: the same manifest
// to a JSON parser, other bytes to a digest), as a corrupt store or a
// rewriting proxy would. A warm run with --cache-reverify 0 HEADs it and
// says ok: the cache hides the change. With --cache-reverify 1 it GETs
// every cached manifest again and says digest-mismatch, broken, as a cold
// run does; the entry is deleted, so the next run, even with 0, GETs that
// manifest and says it again.
func TestCacheReverify(t *testing.T) {
	for _, version := range []string{registry.V2, registry.V3} {
		t.Run(version, func(t *testing.T) {
			r, imgs := startRegistry(t, version)
			dir := t.TempDir()
			cold, _ := scanCached(t, dir, r.Host(), imgs, noReverify...)
			gets := cold.Summary.Requests["manifest-get"]
			single := slices.IndexFunc(imgs, func(fx fixture.Image) bool { return fx.Name == "single" })
			d := imgs[single].Digest
			serveOtherBytes(t, r, "gc/single", d.String())

			for _, tc := range []struct {
				name   string
				flags  []string
				broken bool
				gets   int // manifest GETs
			}{
				{"--cache-reverify 0", noReverify, false, 0},
				// Every manifest, and the mismatching one asked again once,
				// as the client asks after any bad body.
				{"--cache-reverify 1", []string{"--cache-reverify", "1"}, true, gets + 1},
				{"the next run, --cache-reverify 0", noReverify, true, 2},
			} {
				doc, _ := scanCached(t, dir, r.Host(), imgs, tc.flags...)
				t.Logf("%s: %s", tc.name, requestsText(doc.Summary.Requests))
				for name, im := range images(t, doc, r.Host(), imgs) {
					want, mismatch := types.OK, []string(nil)
					if name == "single" && tc.broken {
						want, mismatch = types.Broken, []string{d.String()}
					}
					if got := codes(im, types.DigestMismatch); im.Verdict != want || !slices.Equal(got, mismatch) {
						t.Errorf("%s: %s is %s with digest-mismatch for %v, want %s and %v (findings %+v)", tc.name, name, im.Verdict, got, want, mismatch, im.Findings)
					}
				}
				if n := doc.Summary.Requests["manifest-get"]; n != tc.gets {
					t.Errorf("%s: %d manifest GETs, want %d", tc.name, n, tc.gets)
				}
				_, err := os.Stat(filepath.Join(dir, d.Algorithm, d.Hex))
				if kept := err == nil; kept == tc.broken {
					t.Errorf("%s: the entry of %s kept: %v", tc.name, d, kept)
				}
			}
		})
	}
}

// serveOtherBytes makes the registry serve other bytes under a manifest's
// digest: it rewrites the manifest's data file in the filesystem storage,
// and checks that a GET by digest now returns bytes that hash to another.
func serveOtherBytes(t *testing.T, r *registry.Registry, repo, dg string) {
	t.Helper()
	hex := strings.TrimPrefix(dg, "sha256:")
	data := filepath.Join(r.Root, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, append([]byte("{ "), b[1:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/v2/%s/manifests/%s", r.Host(), repo, dg), nil)
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s after the change: %d, %v", dg, resp.StatusCode, err)
	}
	if got := digest.FromBytes(body).String(); got == dg {
		t.Fatalf("the registry still serves the bytes of %s", dg)
	}
}
