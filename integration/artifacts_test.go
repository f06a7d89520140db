//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/scan"
)

// slsaV02 is the predicate type cosign attest --type slsaprovenance writes.
const slsaV02 = "https://slsa.dev/provenance/v0.2"

var slsaPredicate = []byte(`{"buildType":"https://example.com/build","builder":{"id":"https://example.com/builder"}}`)

// newCosign generates a key pair for the test, or fails saying how to build
// cosign.
func newCosign(t *testing.T) *cosign.Cosign {
	t.Helper()
	c, err := cosign.New(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// signedImage is an image on a registry, signed or attested by cosign.
type signedImage struct {
	repo     name.Repository
	digest   string
	children []string // an index's, per platform
}

func (im signedImage) ref(digest string) string { return im.repo.Name() + "@" + digest }

// pushSigned pushes an image (or, with index, a two-platform index) with
// content unique to name, then signs or attests it with cosign (an index
// recursively, so each child is signed too).
func pushSigned(t *testing.T, c *cosign.Cosign, host, repoName string, f cosign.Format, attest, index bool) signedImage {
	t.Helper()
	ctx := context.Background()
	repo, err := name.NewRepository(host+"/"+repoName, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	im := signedImage{repo: repo}
	if index {
		im.digest, im.children = pushTwoPlatforms(t, repo, repoName)
	} else if im.digest, err = fixture.PushSingle(ctx, repo.Tag("v1").String(), "signed "+repoName); err != nil {
		t.Fatal(err)
	}
	if attest {
		for _, d := range append([]string{im.digest}, im.children...) {
			if err := c.Attest(ctx, im.ref(d), "slsaprovenance", slsaPredicate, f); err != nil {
				t.Fatal(err)
			}
		}
		return im
	}
	if err := c.Sign(ctx, im.ref(im.digest), f, index); err != nil {
		t.Fatal(err)
	}
	return im
}

// pushTwoPlatforms pushes a linux/amd64 + linux/arm64 OCI index.
func pushTwoPlatforms(t *testing.T, repo name.Repository, salt string) (string, []string) {
	t.Helper()
	var adds []mutate.IndexAddendum
	var children []string
	for _, arch := range []string{"amd64", "arm64"} {
		p := v1.Platform{OS: "linux", Architecture: arch}
		img := fixture.BuildImage(ggcrtypes.OCIManifestSchema1, p, static.NewLayer([]byte(salt+" "+arch), ggcrtypes.OCILayer))
		d, _ := img.Digest()
		children = append(children, d.String())
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, ggcrtypes.OCIImageIndex), adds...)
	if err := remote.WriteIndex(repo.Tag("v1"), idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return d.String(), children
}

// artifactOf locates, with go-containerregistry and not the finder, the
// manifest that holds the subject's signature (or attestation) in format
// f: the .sig/.att tag's target, or the bundle referrer the referrers
// tag lists. It returns the manifest's digest and its first layer's.
func artifactOf(t *testing.T, repo name.Repository, subject string, f cosign.Format, attest bool) (string, string) {
	t.Helper()
	hex := strings.TrimPrefix(subject, "sha256:")
	var d v1.Hash
	if f == cosign.Legacy {
		suffix := ".sig"
		if attest {
			suffix = ".att"
		}
		desc, err := remote.Head(repo.Tag("sha256-" + hex + suffix))
		if err != nil {
			t.Fatal(err)
		}
		d = desc.Digest
	} else {
		idx, err := remote.Referrers(repo.Digest(subject))
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range im.Manifests {
			got, err := remote.Get(repo.Digest(m.Digest.String()))
			if err != nil {
				t.Fatal(err)
			}
			isAtt := strings.Contains(string(got.Manifest), `"dev.sigstore.bundle.predicateType":"`+slsaV02)
			if isAtt == attest {
				d, found = m.Digest, true
			}
		}
		if !found {
			t.Fatalf("no bundle referrer of %s (attestation %v)", subject, attest)
		}
	}
	img, err := remote.Image(repo.Digest(d.String()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String(), m.Layers[0].Digest.String()
}

// removeBlobData deletes a blob's data from the registry's storage.
func removeBlobData(t *testing.T, r *registry.Registry, digest string) {
	t.Helper()
	hex := strings.TrimPrefix(digest, "sha256:")
	if err := os.RemoveAll(filepath.Join(r.Root, "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex)); err != nil {
		t.Fatal(err)
	}
}

// breakage is how an artifact is lost.
type breakage string

const (
	intact          breakage = "intact"
	manifestByAPI   breakage = "manifest deleted through the API"
	manifestInStore breakage = "manifest deleted from storage"
	layerInStore    breakage = "layer deleted from storage"
)

// breakArtifact loses the subject's artifact as b says.
func breakArtifact(t *testing.T, r *registry.Registry, im signedImage, subject string, f cosign.Format, attest bool, b breakage) {
	t.Helper()
	if b == intact {
		return
	}
	m, layer := artifactOf(t, im.repo, subject, f, attest)
	switch b {
	case manifestByAPI:
		if err := remote.Delete(im.repo.Digest(m)); err != nil {
			t.Fatal(err)
		}
	case manifestInStore:
		removeBlobData(t, r, m)
	case layerInStore:
		removeBlobData(t, r, layer)
	}
}

// judge checks the finder against cosign for one subject: whole (present)
// exactly when cosign verify passes, missing exactly when it fails.
func judge(t *testing.T, c *cosign.Cosign, set artifacts.Set, im signedImage, subject string, f cosign.Format, attest, wantPass bool) {
	t.Helper()
	ctx := context.Background()
	var passed bool
	var out string
	var err error
	q := artifacts.Query{Kind: artifacts.Signature, Subject: subject}
	if attest {
		q = artifacts.Query{Kind: artifacts.Attestation, Subject: subject, PredicateType: slsaV02}
		passed, out, err = c.VerifyAttestation(ctx, im.ref(subject), "slsaprovenance", f)
	} else {
		passed, out, err = c.Verify(ctx, im.ref(subject), f)
	}
	if err != nil {
		t.Fatal(err)
	}
	if passed != wantPass {
		t.Fatalf("cosign verify of %s passed %v, want %v (the breakage did not take)\n%s", subject, passed, wantPass, out)
	}
	want := artifacts.Missing
	if passed {
		want = artifacts.Present
	}
	if got := set.Presence(q); got != want {
		t.Errorf("finder: %s of %s is %s; cosign verify passed=%v, so want %s\nartifacts %+v\nfaults %+v\ncosign: %s",
			q.Kind, subject, got, passed, want, set.Artifacts, set.Faults, lastLines(out, 3))
	}
}

// findArtifacts runs the finder on a new Scanner (nothing remembered from before
// the breakage).
func findArtifacts(t *testing.T, im signedImage, opts ...scan.Option) artifacts.Set {
	t.Helper()
	s, err := scan.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := s.Parse(im.ref(im.digest))
	if err != nil {
		t.Fatal(err)
	}
	set, err := artifacts.NewFinder(s).Find(context.Background(), r.Context(), im.digest)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestArtifactsMatchCosign signs and attests images with the real cosign,
// in both formats, on the real registries, loses the artifacts the ways
// the wild does, and holds the finder to cosign verify: present exactly
// when verify passes, missing exactly when it fails.
func TestArtifactsMatchCosign(t *testing.T) {
	c := newCosign(t)
	for _, version := range []string{registry.V3, registry.V2} {
		r := startEmpty(t, version)
		var n int
		for _, f := range []cosign.Format{cosign.Legacy, cosign.Bundle} {
			for _, attest := range []bool{false, true} {
				for _, b := range []breakage{intact, manifestByAPI, manifestInStore, layerInStore} {
					n++
					name := fmt.Sprintf("%s/%s/attest=%v/%s", version, map[cosign.Format]string{cosign.Legacy: "legacy", cosign.Bundle: "bundle"}[f], attest, b)
					t.Run(name, func(t *testing.T) {
						im := pushSigned(t, c, r.Host(), fmt.Sprintf("art%d", n), f, attest, false)
						breakArtifact(t, r, im, im.digest, f, attest, b)
						set := findArtifacts(t, im)
						if len(set.Faults) > 0 {
							t.Fatalf("faults on a healthy registry: %+v", set.Faults)
						}
						judge(t, c, set, im, im.digest, f, attest, b == intact)
					})
				}
			}
		}
	}
}

// TestArtifactsIndexPerPlatform signs an index recursively (the index and
// each child), loses one child's signature, and holds the finder to cosign
// verify of the index and of each child.
func TestArtifactsIndexPerPlatform(t *testing.T) {
	c := newCosign(t)
	r := startEmpty(t, registry.V3)
	for i, f := range []cosign.Format{cosign.Legacy, cosign.Bundle} {
		t.Run([]string{"legacy", "bundle"}[i], func(t *testing.T) {
			im := pushSigned(t, c, r.Host(), fmt.Sprintf("multi%d", i), f, false, true)
			breakArtifact(t, r, im, im.children[1], f, false, layerInStore)
			set := findArtifacts(t, im)
			judge(t, c, set, im, im.digest, f, false, true)
			judge(t, c, set, im, im.children[0], f, false, true)
			judge(t, c, set, im, im.children[1], f, false, false)
			for _, a := range set.Artifacts {
				if a.Subject == im.children[1] && a.Kind == artifacts.Signature && a.Platform != "linux/arm64" {
					t.Errorf("the arm64 child's signature names platform %q", a.Platform)
				}
			}
		})
	}
}

// TestArtifactsFaultsAreNotMissing: a registry that fails (503 through the
// fault proxy, or stopped) leaves a whole signature unknown, never
// missing.
func TestArtifactsFaultsAreNotMissing(t *testing.T) {
	c := newCosign(t)
	r := startEmpty(t, registry.V3)
	legacy := pushSigned(t, c, r.Host(), "faultlegacy", cosign.Legacy, false, false)
	bundle := pushSigned(t, c, r.Host(), "faultbundle", cosign.Bundle, false, false)
	for _, tt := range []struct {
		name  string
		rules []faultproxy.Rule
	}{
		{"503 on tags", []faultproxy.Rule{{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.ManifestByTag}}}},
		{"503 on artifact blobs", []faultproxy.Rule{{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.Blob}}}},
		{"503 on manifests by digest", []faultproxy.Rule{{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.ManifestByDigest}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := faultproxy.Start(faultproxy.Config{Upstream: r.Host(), Rules: tt.rules})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for _, im := range []signedImage{legacy, bundle} {
				via := im
				via.repo, _ = name.NewRepository(p.Host()+"/"+im.repo.RepositoryStr(), name.Insecure)
				set := findArtifacts(t, via, scan.WithRetry(1, time.Millisecond))
				if got := set.Presence(artifacts.Query{Kind: artifacts.Signature}); got != artifacts.Unknown {
					t.Errorf("%s: signature %s through faults, want unknown\n%+v\n%+v", im.repo.RepositoryStr(), got, set.Artifacts, set.Faults)
				}
			}
		})
	}
	t.Run("registry stopped", func(t *testing.T) {
		if err := r.Stop(); err != nil {
			t.Fatal(err)
		}
		for _, im := range []signedImage{legacy, bundle} {
			set := findArtifacts(t, im, scan.WithRetry(1, time.Millisecond))
			if got := set.Presence(artifacts.Query{Kind: artifacts.Signature}); got != artifacts.Unknown {
				t.Errorf("%s: signature %s with the registry down, want unknown", im.repo.RepositoryStr(), got)
			}
		}
	})
}
