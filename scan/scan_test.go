package scan_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/internal/testing/loopback"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// TestCheckFixtures checks each fixture shape intact: every one is ok, with
// the digest and media type it was pushed with, and every manifest and blob
// counted.
func TestCheckFixtures(t *testing.T) {
	tr := newRegistry(t)
	for _, name := range []string{"single", "app-a", "app-b", "buildx", "multiarch", "manifestlist", "partial"} {
		t.Run(name, func(t *testing.T) {
			fx := tr.fixture(name)
			im, err := scan.Check(context.Background(), fx.Ref, opts()...)
			if err != nil {
				t.Fatal(err)
			}
			if im.Verdict != types.OK || len(im.Findings) != 0 {
				t.Fatalf("verdict %s, findings %+v; want ok and none", im.Verdict, im.Findings)
			}
			if im.Digest != fx.Digest.String() || im.MediaType != string(fx.MediaType) {
				t.Errorf("resolved to %s (%s), want %s (%s)", im.Digest, im.MediaType, fx.Digest, fx.MediaType)
			}
			manifests, blobs := 1, len(fx.Blobs)
			for _, c := range fx.Children {
				manifests++
				blobs += len(c.Blobs)
			}
			if im.Manifests != manifests || im.Blobs != blobs {
				t.Errorf("checked %d manifests and %d blobs, want %d and %d", im.Manifests, im.Blobs, manifests, blobs)
			}
			if want := []types.Use{{Source: "args", Written: fx.Ref}}; !reflect.DeepEqual(im.Uses, want) {
				t.Errorf("uses %+v, want %+v", im.Uses, want)
			}
		})
	}
}

// TestCheckDamage hides what a registry's GC deletes, or serves what a bad
// store serves, and expects the finding that names it.
func TestCheckDamage(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	multi := tr.fixture("multiarch")
	list := tr.fixture("manifestlist")
	buildx := tr.fixture("buildx")
	amd, arm := multi.Children[0], multi.Children[1]
	if amd.Platform != "linux/amd64" || arm.Platform != "linux/arm64/v8" {
		t.Fatalf("multiarch fixture changed: %+v", multi.Children)
	}
	bxImage, bxAtt := buildx.Children[0], buildx.Children[1]
	if bxImage.Attestation || !bxAtt.Attestation {
		t.Fatalf("buildx fixture changed: %+v", buildx.Children)
	}
	missingDigest := v1.Hash{Algorithm: "sha256", Hex: "0000000000000000000000000000000000000000000000000000000000000000"}

	tests := []struct {
		name    string
		ref     string
		hook    hook
		options []scan.Option
		verdict types.Verdict
		want    []findingKey
	}{
		{
			name:    "tag missing",
			ref:     tr.ref("single", "nope"),
			verdict: types.Broken,
			want:    []findingKey{{types.TagMissing, "", ""}},
		},
		{
			name:    "digest reference missing",
			ref:     tr.at("single", missingDigest),
			verdict: types.Broken,
			want:    []findingKey{{types.ManifestMissing, missingDigest.String(), ""}},
		},
		{
			name:    "tag points at a manifest that is gone",
			ref:     single.Ref,
			hook:    hide(manifestPath("single", single.Digest.String())),
			verdict: types.Broken,
			want:    []findingKey{{types.ManifestMissing, single.Digest.String(), ""}},
		},
		{
			name:    "index child missing",
			ref:     multi.Ref,
			hook:    hide(manifestPath("multiarch", arm.Digest.String())),
			verdict: types.Broken,
			want:    []findingKey{{types.ChildMissing, arm.Digest.String(), "linux/arm64/v8"}},
		},
		{
			name:    "manifest list child missing",
			ref:     list.Ref,
			hook:    hide(manifestPath("manifestlist", list.Children[1].Digest.String())),
			verdict: types.Broken,
			want:    []findingKey{{types.ChildMissing, list.Children[1].Digest.String(), "linux/arm/v7"}},
		},
		{
			name:    "only the attestation child missing",
			ref:     buildx.Ref,
			hook:    hide(manifestPath("buildx", bxAtt.Digest.String())),
			verdict: types.AtRisk,
			want:    []findingKey{{types.AttestationMissing, bxAtt.Digest.String(), "unknown/unknown"}},
		},
		{
			name:    "attestation child and image child missing",
			ref:     buildx.Ref,
			hook:    hide(manifestPath("buildx", bxAtt.Digest.String()), manifestPath("buildx", bxImage.Digest.String())),
			verdict: types.Broken,
			want: []findingKey{
				{types.AttestationMissing, bxAtt.Digest.String(), "unknown/unknown"},
				{types.ChildMissing, bxImage.Digest.String(), "linux/amd64"},
			},
		},
		{
			name:    "attestation blob missing",
			ref:     buildx.Ref,
			hook:    hide(blobPath("buildx", bxAtt.Blobs[1])),
			verdict: types.AtRisk,
			want:    []findingKey{{types.AttestationMissing, bxAtt.Blobs[1].String(), "unknown/unknown"}},
		},
		{
			name:    "layer missing",
			ref:     single.Ref,
			hook:    hide(blobPath("single", single.Blobs[2])),
			verdict: types.Broken,
			want:    []findingKey{{types.BlobMissing, single.Blobs[2].String(), ""}},
		},
		{
			name:    "config missing",
			ref:     single.Ref,
			hook:    hide(blobPath("single", single.Blobs[0])),
			verdict: types.Broken,
			want:    []findingKey{{types.BlobMissing, single.Blobs[0].String(), ""}},
		},
		{
			name:    "child layer missing",
			ref:     multi.Ref,
			hook:    hide(blobPath("multiarch", amd.Blobs[2])),
			verdict: types.Broken,
			want:    []findingKey{{types.BlobMissing, amd.Blobs[2].String(), "linux/amd64"}},
		},
		{
			name:    "layer shared by two children missing",
			ref:     multi.Ref,
			hook:    hide(blobPath("multiarch", amd.Blobs[1])),
			verdict: types.Broken,
			want: []findingKey{
				{types.BlobMissing, amd.Blobs[1].String(), "linux/amd64"},
				{types.BlobMissing, amd.Blobs[1].String(), "linux/arm64/v8"},
			},
		},
		{
			name:    "digest mismatch by tag",
			ref:     single.Ref,
			hook:    corrupt(manifestPath("single", single.Digest.String())),
			verdict: types.Broken,
			want:    []findingKey{{types.DigestMismatch, single.Digest.String(), ""}},
		},
		{
			name:    "digest mismatch by digest",
			ref:     tr.at("single", single.Digest),
			hook:    corrupt(manifestPath("single", single.Digest.String())),
			verdict: types.Broken,
			want:    []findingKey{{types.DigestMismatch, single.Digest.String(), ""}},
		},
		{
			name:    "digest mismatch of a child",
			ref:     multi.Ref,
			hook:    corrupt(manifestPath("multiarch", arm.Digest.String())),
			verdict: types.Broken,
			want:    []findingKey{{types.DigestMismatch, arm.Digest.String(), "linux/arm64/v8"}},
		},
		{
			name:    "child of another platform missing, all platforms required",
			ref:     multi.Ref,
			hook:    hide(manifestPath("multiarch", arm.Digest.String())),
			verdict: types.Broken,
			want:    []findingKey{{types.ChildMissing, arm.Digest.String(), "linux/arm64/v8"}},
		},
		{
			name:    "child of another platform missing, linux/amd64 required",
			ref:     multi.Ref,
			hook:    hide(manifestPath("multiarch", arm.Digest.String())),
			options: []scan.Option{scan.WithPlatforms("linux/amd64")},
			verdict: types.OK,
			want:    []findingKey{},
		},
		{
			name:    "required child missing, linux/arm64 required",
			ref:     multi.Ref,
			hook:    hide(manifestPath("multiarch", arm.Digest.String())),
			options: []scan.Option{scan.WithPlatforms("linux/arm64")},
			verdict: types.Broken,
			want:    []findingKey{{types.ChildMissing, arm.Digest.String(), "linux/arm64/v8"}},
		},
		{
			name:    "attestation of a required platform",
			ref:     buildx.Ref,
			hook:    hide(manifestPath("buildx", bxAtt.Digest.String())),
			options: []scan.Option{scan.WithPlatforms("linux/amd64")},
			verdict: types.AtRisk,
			want:    []findingKey{{types.AttestationMissing, bxAtt.Digest.String(), "unknown/unknown"}},
		},
		{
			name:    "no child for a required platform",
			ref:     buildx.Ref,
			options: []scan.Option{scan.WithPlatforms("linux/arm64", "linux/amd64")},
			verdict: types.Broken,
			want:    []findingKey{{types.ChildMissing, "", "linux/arm64"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr.setHook(tc.hook)
			defer tr.setHook(nil)
			im, err := scan.Check(context.Background(), tc.ref, opts(tc.options...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(im.Findings); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings %+v\nwant %+v\n(%+v)", got, tc.want, im.Findings)
			}
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", im.Verdict, tc.verdict)
			}
			for _, f := range im.Findings {
				if f.Message == "" || f.Severity != f.Code.Severity() {
					t.Errorf("finding %+v: want a message and the code's severity", f)
				}
			}
		})
	}
}

// TestCheckFaults makes the registry fail to answer: a fault is never a
// verdict of broken, only unknown.
func TestCheckFaults(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	repo := "/v2/" + prefix + "single/"
	basic := http.Header{"Www-Authenticate": {`Basic realm="test"`}}

	tests := []struct {
		name    string
		ref     string
		hook    hook
		verdict types.Verdict
		want    []findingKey
		// requests of a kind and status the scan must have sent.
		kind, status string
		count        int
	}{
		{
			name:    "503 always",
			ref:     single.Ref,
			hook:    failFirst(repo, -1, http.StatusServiceUnavailable, nil),
			verdict: types.Unknown,
			want:    []findingKey{{types.RegistryFault, "", ""}},
			kind:    "manifest-head", status: "503", count: 3, // WithRetry(3, ...)
		},
		{
			name:    "503 twice",
			ref:     single.Ref,
			hook:    failFirst(repo, 2, http.StatusServiceUnavailable, nil),
			verdict: types.OK,
			want:    []findingKey{},
			kind:    "manifest-head", status: "503", count: 2,
		},
		{
			name:    "503 always on a blob",
			ref:     single.Ref,
			hook:    failFirst(blobPath("single", single.Blobs[1]), -1, http.StatusServiceUnavailable, nil),
			verdict: types.Unknown,
			want:    []findingKey{{types.RegistryFault, single.Blobs[1].String(), ""}},
			kind:    "blob-head", status: "503", count: 3,
		},
		{
			name: "503 always on a child, another child missing",
			ref:  tr.fixture("multiarch").Ref,
			hook: chain(
				failFirst(manifestPath("multiarch", tr.fixture("multiarch").Children[0].Digest.String()), -1, http.StatusServiceUnavailable, nil),
				hide(manifestPath("multiarch", tr.fixture("multiarch").Children[1].Digest.String())),
			),
			verdict: types.Broken,
			want: []findingKey{
				{types.ChildMissing, tr.fixture("multiarch").Children[1].Digest.String(), "linux/arm64/v8"},
				{types.RegistryFault, tr.fixture("multiarch").Children[0].Digest.String(), "linux/amd64"},
			},
			kind: "manifest-get", status: "503", count: 3,
		},
		{
			name:    "429 with Retry-After once",
			ref:     single.Ref,
			hook:    failFirst(repo, 1, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}),
			verdict: types.OK,
			want:    []findingKey{},
			kind:    "manifest-head", status: "429", count: 1,
		},
		{
			name:    "429 always",
			ref:     single.Ref,
			hook:    failFirst(repo, -1, http.StatusTooManyRequests, nil),
			verdict: types.Unknown,
			want:    []findingKey{{types.RateLimited, "", ""}},
			kind:    "manifest-head", status: "429", count: 3,
		},
		{
			name:    "401 on the repository",
			ref:     single.Ref,
			hook:    failFirst(repo, -1, http.StatusUnauthorized, basic),
			verdict: types.Unknown,
			want:    []findingKey{{types.Unauthorized, "", ""}},
			kind:    "manifest-head", status: "401", count: 1,
		},
		{
			name:    "401 on everything, ping included",
			ref:     single.Ref,
			hook:    failFirst("/v2/", -1, http.StatusUnauthorized, basic),
			verdict: types.Unknown,
			want:    []findingKey{{types.Unauthorized, "", ""}},
			kind:    "ping", status: "401", count: 1,
		},
		{
			name:    "403 on a blob",
			ref:     single.Ref,
			hook:    failFirst(blobPath("single", single.Blobs[0]), -1, http.StatusForbidden, nil),
			verdict: types.Unknown,
			want:    []findingKey{{types.Forbidden, single.Blobs[0].String(), ""}},
			kind:    "blob-head", status: "403", count: 1,
		},
		{
			name:    "unreachable",
			ref:     loopback.Closed(t) + "/fx/single:v1",
			verdict: types.Unknown,
			want:    []findingKey{{types.Unreachable, "", ""}},
			kind:    "ping", status: "error", count: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr.setHook(tc.hook)
			defer tr.setHook(nil)
			res, err := scan.Run(context.Background(), []types.Target{{Ref: tc.ref}}, opts()...)
			if err != nil {
				t.Fatal(err)
			}
			im := res.Images[0]
			if got := keys(im.Findings); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings %+v\nwant %+v\n(%+v)", got, tc.want, im.Findings)
			}
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", im.Verdict, tc.verdict)
			}
			for _, f := range im.Findings {
				if f.Code.Fault() && f.Severity != types.SeverityWarning {
					t.Errorf("fault %+v: severity %s, want warning", f, f.Severity)
				}
			}
			if got := requests(res.Requests, tc.kind, tc.status); got < tc.count || (tc.status != "error" && tc.kind != "ping" && got != tc.count) {
				t.Errorf("%d %s requests answered %s, want %d; all: %+v", got, tc.kind, tc.status, tc.count, res.Requests)
			}
		})
	}
}

// TestRunInvalidReference keeps going past a reference that does not parse.
func TestRunInvalidReference(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	bad := "Not A/Reference::"
	res, err := scan.Run(context.Background(), []types.Target{
		{Ref: bad, Uses: []types.Use{{Source: "file", File: "a.yaml", Line: 3}}},
		{Ref: single.Ref},
	}, opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != 2 {
		t.Fatalf("%d images, want 2", len(res.Images))
	}
	inv := res.Images[0]
	if inv.Reference != bad || inv.Verdict != types.Broken || !reflect.DeepEqual(keys(inv.Findings), []findingKey{{types.InvalidReference, "", ""}}) {
		t.Errorf("invalid reference: %+v", inv)
	}
	if want := []types.Use{{Source: "file", File: "a.yaml", Line: 3, Written: bad}}; !reflect.DeepEqual(inv.Uses, want) {
		t.Errorf("uses %+v, want %+v", inv.Uses, want)
	}
	if ok := res.Images[1]; ok.Verdict != types.OK || ok.Digest != single.Digest.String() {
		t.Errorf("the valid reference after it: %+v", ok)
	}
	if c := res.Count(); c[types.Broken] != 1 || c[types.OK] != 1 {
		t.Errorf("count %v", c)
	}
}

// TestRunAsksOnce gives two tags of one repository, whose images share a
// layer, and the same references again: each manifest and blob is asked
// for once, and each reference is one Image with every use.
func TestRunAsksOnce(t *testing.T) {
	tr := newRegistry(t)
	base := static.NewLayer([]byte("shared base"), ggcrtypes.DockerLayer)
	var digests []v1.Hash
	distinct := map[v1.Hash]bool{}
	for _, tag := range []string{"a", "b"} {
		img, err := mutate.AppendLayers(empty.Image, base, static.NewLayer([]byte("app "+tag), ggcrtypes.DockerLayer))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(tr.ref("shared", tag), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		digests = append(digests, d)
		cfg, _ := img.ConfigName()
		distinct[cfg] = true
		m, _ := img.Manifest()
		for _, l := range m.Layers {
			distinct[l.Digest] = true
		}
	}
	if len(distinct) != 5 {
		t.Fatalf("%d distinct blobs, want 5 (base, two layers, two configs)", len(distinct))
	}
	useA1 := types.Use{Source: "file", File: "a.yaml", Line: 1}
	useA2 := types.Use{Source: "cluster", Namespace: "ns", Name: "web", Container: "app"}
	useB := types.Use{Source: "args"}
	useD := types.Use{Source: "args"}
	res, err := scan.Run(context.Background(), []types.Target{
		{Ref: tr.ref("shared", "a"), Uses: []types.Use{useA1}},
		{Ref: tr.ref("shared", "b"), Uses: []types.Use{useB}},
		{Ref: " " + tr.ref("shared", "a"), Uses: []types.Use{useA2}},
		{Ref: tr.at("shared", digests[0]), Uses: []types.Use{useD}},
	}, opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != 3 {
		t.Fatalf("%d images, want 3: %+v", len(res.Images), res.Images)
	}
	a, b, d := res.Images[0], res.Images[1], res.Images[2]
	// Each use keeps the image as it wrote it: the leading space too.
	written := func(u types.Use, w string) types.Use { u.Written = w; return u }
	wantA := []types.Use{written(useA1, tr.ref("shared", "a")), written(useA2, " "+tr.ref("shared", "a"))}
	if !reflect.DeepEqual(a.Uses, wantA) || !reflect.DeepEqual(b.Uses, []types.Use{written(useB, tr.ref("shared", "b"))}) || !reflect.DeepEqual(d.Uses, []types.Use{written(useD, tr.at("shared", digests[0]))}) {
		t.Errorf("uses: a %+v, b %+v, digest %+v", a.Uses, b.Uses, d.Uses)
	}
	for i, im := range res.Images {
		if im.Verdict != types.OK {
			t.Errorf("image %d %s: %s %+v", i, im.Reference, im.Verdict, im.Findings)
		}
	}
	for _, c := range []struct {
		kind string
		want int
	}{
		{"blob-head", len(distinct)},
		{"manifest-head", 2}, // two tags
		{"manifest-get", 2},  // two manifests, the digest reference's shared
	} {
		if got := requests(res.Requests, c.kind, ""); got != c.want {
			t.Errorf("%d %s requests, want %d: %+v", got, c.kind, c.want, res.Requests)
		}
		if got := requests(res.Requests, c.kind, "200"); got != c.want {
			t.Errorf("%d %s requests answered 200, want %d", got, c.kind, c.want)
		}
	}
}

// TestHeadNotAllowed falls back to GET where HEAD on a manifest answers 405.
func TestHeadNotAllowed(t *testing.T) {
	tr := newRegistry(t)
	tr.setHook(headNotAllowed)
	for _, tc := range []struct {
		name      string
		manifests int // GETs: the tag's, then the children's
	}{
		{"single", 1},
		{"buildx", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := tr.fixture(tc.name)
			res, err := scan.Run(context.Background(), []types.Target{{Ref: fx.Ref}}, opts()...)
			if err != nil {
				t.Fatal(err)
			}
			im := res.Images[0]
			if im.Verdict != types.OK || im.Digest != fx.Digest.String() || im.MediaType != string(fx.MediaType) {
				t.Errorf("got %s %s (%s) %+v, want ok %s (%s)", im.Verdict, im.Digest, im.MediaType, im.Findings, fx.Digest, fx.MediaType)
			}
			if got := requests(res.Requests, "manifest-head", "405"); got != 1 {
				t.Errorf("%d HEADs answered 405, want 1", got)
			}
			if got := requests(res.Requests, "manifest-get", "200"); got != tc.manifests {
				t.Errorf("%d manifest GETs, want %d: %+v", got, tc.manifests, res.Requests)
			}
		})
	}
}

// TestConcurrencyBound never has more requests at the registry at once than
// WithConcurrency allows.
func TestConcurrencyBound(t *testing.T) {
	tr := newRegistry(t)
	tr.setHook(slow(10 * time.Millisecond))
	var targets []types.Target
	for _, fx := range tr.images {
		targets = append(targets, types.Target{Ref: fx.Ref})
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit %d", n), func(t *testing.T) {
			tr.maxInflight.Store(0)
			res, err := scan.Run(context.Background(), targets, opts(scan.WithConcurrency(n))...)
			if err != nil {
				t.Fatal(err)
			}
			if c := res.Count(); c[types.OK] != len(targets) {
				t.Fatalf("verdicts %v, want all ok", c)
			}
			if got := tr.maxInflight.Load(); got > int64(n) || got < 1 {
				t.Errorf("%d requests in flight at once, want at most %d", got, n)
			}
		})
	}
}

// TestOptions rejects bad option values.
func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  scan.Option
		ok   bool
	}{
		{"concurrency 0", scan.WithConcurrency(0), false},
		{"concurrency 1", scan.WithConcurrency(1), true},
		{"platform without arch", scan.WithPlatforms("linux"), false},
		{"empty platform", scan.WithPlatforms(""), false},
		{"platform with variant", scan.WithPlatforms("linux/arm/v7"), true},
		{"insecure registry with path", scan.WithInsecureRegistries("a/b"), false},
		{"insecure registry empty", scan.WithInsecureRegistries(" "), false},
		{"insecure registry host:port", scan.WithInsecureRegistries("reg.local:5000"), true},
		{"retry 0 attempts", scan.WithRetry(0, time.Second), false},
		{"retry no backoff", scan.WithRetry(1, 0), false},
		{"timeout 0", scan.WithTimeout(0), false},
		{"nil keychain", scan.WithKeychain(nil), false},
		{"nil logger", scan.WithLogger(nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scan.New(tc.opt)
			if tc.ok && (err != nil || s == nil) {
				t.Errorf("New: %v, want a scanner", err)
			}
			if !tc.ok && (err == nil || s != nil) {
				t.Errorf("New: %v, %v; want an error and no scanner", s, err)
			}
			if !tc.ok {
				// Check must refuse the options before asking anything.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := scan.Check(ctx, "127.0.0.1:1/x:y", tc.opt)
					done <- err
				}()
				select {
				case err := <-done:
					if err == nil || errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Check: %v; want the options' error", err)
					}
				case <-time.After(10 * time.Second):
					t.Errorf("Check still running after 10s; want the options' error")
				}
			}
		})
	}
}

// TestRunCanceled fails a run whose context ended.
func TestRunCanceled(t *testing.T) {
	tr := newRegistry(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := scan.Run(ctx, []types.Target{{Ref: tr.fixture("single").Ref}}, opts()...)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
}

// TestScannerReuseAfterCancel: a Scanner remembers answers, but not the
// ones a caller's canceled context cut short.
func TestScannerReuseAfterCancel(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	s, err := scan.New(opts()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 5 { // the request slot and ctx.Done race; try a few times
		if _, _, err := s.Resolve(ctx, single.Ref); err == nil {
			t.Fatal("Resolve with a canceled context: no error")
		}
	}
	res, err := s.Run(context.Background(), []types.Target{{Ref: single.Ref}})
	if err != nil {
		t.Fatal(err)
	}
	if im := res.Images[0]; im.Verdict != types.OK || im.Digest != single.Digest.String() {
		t.Errorf("after a canceled Resolve: %s %s %+v, want ok", im.Verdict, im.Digest, im.Findings)
	}
	if d, _, err := s.Resolve(context.Background(), single.Ref); err != nil || d != single.Digest.String() {
		t.Errorf("Resolve: %s, %v; want %s", d, err, single.Digest)
	}
}

// responseWithoutRequest is a caller's transport whose responses do not
// name their request, as the RoundTripper contract allows.
type responseWithoutRequest struct{ next http.RoundTripper }

func (r responseWithoutRequest) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if resp != nil {
		resp.Request = nil
	}
	return resp, err
}

// TestCallerTransport honours WithTransport, digest mismatches included.
func TestCallerTransport(t *testing.T) {
	tr := newRegistry(t)
	single := tr.fixture("single")
	tr.setHook(corrupt(manifestPath("single", single.Digest.String())))
	im, err := scan.Check(context.Background(), single.Ref, opts(scan.WithTransport(responseWithoutRequest{http.DefaultTransport}))...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(im.Findings), []findingKey{{types.DigestMismatch, single.Digest.String(), ""}}; !reflect.DeepEqual(got, want) {
		t.Errorf("findings %+v, want %+v", got, want)
	}
}

// TestFindingOrder reports findings in the same order every time: worst
// first, then by platform and digest.
func TestFindingOrder(t *testing.T) {
	tr := newRegistry(t)
	buildx := tr.fixture("buildx")
	img, att := buildx.Children[0], buildx.Children[1]
	var paths []string
	for _, b := range append(append([]v1.Hash{}, img.Blobs...), att.Blobs...) {
		paths = append(paths, blobPath("buildx", b))
	}
	tr.setHook(hide(paths...))
	var want []findingKey
	for _, b := range img.Blobs {
		want = append(want, findingKey{types.BlobMissing, b.String(), "linux/amd64"})
	}
	for _, b := range att.Blobs {
		want = append(want, findingKey{types.AttestationMissing, b.String(), "unknown/unknown"})
	}
	// Within one severity and platform, by digest.
	sortKeys := func(ks []findingKey) {
		sort.SliceStable(ks, func(i, j int) bool {
			return ks[i].Code.Severity() > ks[j].Code.Severity() ||
				ks[i].Code.Severity() == ks[j].Code.Severity() && (ks[i].Platform < ks[j].Platform ||
					ks[i].Platform == ks[j].Platform && ks[i].Digest < ks[j].Digest)
		})
	}
	sortKeys(want)
	for i := range 10 {
		im, err := scan.Check(context.Background(), buildx.Ref, opts()...)
		if err != nil {
			t.Fatal(err)
		}
		var got []findingKey
		for _, f := range im.Findings {
			got = append(got, findingKey{f.Code, f.Digest, f.Platform})
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: findings in order\n%+v\nwant\n%+v", i, got, want)
		}
	}
}
