//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/regcheck/regcheck/types"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
)

// scanCached runs `regcheck scan -o json --cache-dir dir` on every fixture,
// named on host, and returns the report and how long it took.
func scanCached(t *testing.T, dir, host string, imgs []fixture.Image) (report.Document, time.Duration) {
	t.Helper()
	args := []string{"scan", "-o", "json", "--timeout", "5s", "--cache-dir", dir}
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

// TestCache runs the CLI twice with one --cache-dir against distribution
// v3.1.2: the second run GETs no manifest (it HEADs each instead: no pull
// on Docker Hub) and says the same. A child deleted through the registry
// API since is still missing: the cache holds its bytes, the registry's
// 404 to the HEAD decides. Through a proxy answering 503 to manifests by
// digest, the cached images are unknown, not ok.
func TestCache(t *testing.T) {
	r, imgs := startRegistry(t, registry.V3)
	dir := t.TempDir()

	cold, coldTook := scanCached(t, dir, r.Host(), imgs)
	warm, warmTook := scanCached(t, dir, r.Host(), imgs)
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
	after, _ := scanCached(t, dir, r.Host(), imgs)
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
	faulty, _ := scanCached(t, dir, p.Host(), imgs)
	for name, v := range verdicts(t, faulty, p.Host(), imgs) {
		if v != types.Unknown {
			t.Errorf("%s through a proxy failing every manifest HEAD: %s, want unknown", name, v)
		}
	}
	if n := faulty.Summary.Requests["manifest-get"]; n != 0 {
		t.Errorf("through the proxy: %d manifest GETs, want 0", n)
	}
}
