package artifacts_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/scan"
)

// startV3 starts the real distribution v3.1.2 registry (which serves no
// referrers API), or skips when hack/build-bins.sh has not built it.
func startV3(t testing.TB) *registry.Registry {
	t.Helper()
	bin, err := registry.Binary(registry.V3)
	bins.Require(t, err, "registry")
	r, err := registry.Start(context.Background(), bin, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	return r
}

// startReferrersRegistry starts go-containerregistry's registry with its
// referrers API on, behind fail (nil: none), which may answer a request
// in its place: no registry binary here serves /referrers.
func startReferrersRegistry(t testing.TB, fail func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail != nil && fail(w, r) {
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// newFinder returns a Finder over a new Scanner that reads host over
// plain HTTP, retrying nothing (a fault is a fault at once).
func newFinder(t testing.TB, host string) (*scan.Scanner, func(repo string) name.Repository) {
	t.Helper()
	s, err := scan.New(scan.WithInsecureRegistries(host), scan.WithRetry(1, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return s, func(repo string) name.Repository {
		r, err := name.NewRepository(host+"/"+repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// repoOf names repo on host for pushing.
func repoOf(t testing.TB, host, repo string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pushImage pushes a one-layer image to repo:tag and returns its digest.
func pushImage(t testing.TB, repo name.Repository, tag, content string) string {
	t.Helper()
	d, err := fixture.PushSingle(context.Background(), repo.Tag(tag).String(), content)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pushIndex pushes a two-platform index to repo:tag and returns its
// digest and its children's (amd64, arm64).
func pushIndex(t testing.TB, repo name.Repository, tag string) (string, []string) {
	t.Helper()
	var adds []mutate.IndexAddendum
	var children []string
	for _, arch := range []string{"amd64", "arm64"} {
		p := v1.Platform{OS: "linux", Architecture: arch}
		img := fixture.BuildImage(ggcrtypes.OCIManifestSchema1, p, static.NewLayer([]byte("layer "+arch+tag), ggcrtypes.OCILayer))
		d, _ := img.Digest()
		children = append(children, d.String())
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, ggcrtypes.OCIImageIndex), adds...)
	if err := remote.WriteIndex(repo.Tag(tag), idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return d.String(), children
}

// artifact is a manifest to push as cosign would: layers with
// annotations, an artifact type, a subject.
type artifact struct {
	artifactType string
	configType   string // "" is the empty descriptor's
	annotations  map[string]string
	subject      string // digest; "" for none
	layers       []layerSpec
}

type layerSpec struct {
	mediaType   string
	body        string
	annotations map[string]string
}

// rawManifest is a manifest's bytes as remote.Put takes them.
type rawManifest struct {
	body []byte
	mt   ggcrtypes.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)            { return m.body, nil }
func (m rawManifest) MediaType() (ggcrtypes.MediaType, error) { return m.mt, nil }

// push uploads the artifact's blobs and its manifest to repo under tag
// ("" pushes by digest, as a referrer is) and returns the manifest's
// digest and its layers' digests. go-containerregistry keeps the
// referrers tag-schema index up to date for a subject when the registry
// serves no referrers API, as cosign does.
func (a artifact) push(t testing.TB, repo name.Repository, tag string) (string, []string) {
	t.Helper()
	ct := a.configType
	if ct == "" {
		ct = "application/vnd.oci.empty.v1+json"
	}
	cfg := static.NewLayer([]byte("{}"), ggcrtypes.MediaType(ct))
	if err := remote.WriteLayer(repo, cfg); err != nil {
		t.Fatal(err)
	}
	cd, _ := cfg.Digest()
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     string(ggcrtypes.OCIManifestSchema1),
		"config":        map[string]any{"mediaType": ct, "digest": cd.String(), "size": 2},
	}
	if a.artifactType != "" {
		m["artifactType"] = a.artifactType
	}
	if a.annotations != nil {
		m["annotations"] = a.annotations
	}
	if a.subject != "" {
		m["subject"] = map[string]any{"mediaType": string(ggcrtypes.OCIManifestSchema1), "digest": a.subject, "size": 1}
	}
	var layers []map[string]any
	var digests []string
	for _, l := range a.layers {
		b := static.NewLayer([]byte(l.body), ggcrtypes.MediaType(l.mediaType))
		if err := remote.WriteLayer(repo, b); err != nil {
			t.Fatal(err)
		}
		d, _ := b.Digest()
		digests = append(digests, d.String())
		e := map[string]any{"mediaType": l.mediaType, "digest": d.String(), "size": len(l.body)}
		if l.annotations != nil {
			e["annotations"] = l.annotations
		}
		layers = append(layers, e)
	}
	m["layers"] = layers
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h, _, _ := v1.SHA256(strings.NewReader(string(body)))
	var ref name.Reference = repo.Digest(h.String())
	if tag != "" {
		ref = repo.Tag(tag)
	}
	if err := remote.Put(ref, rawManifest{body, ggcrtypes.OCIManifestSchema1}); err != nil {
		t.Fatal(err)
	}
	return h.String(), digests
}

// cosignTag is cosign's tag for a subject's artifact of the suffix.
func cosignTag(subject, suffix string) string { return scan.ReferrersTag(subject) + suffix }

// legacySig is a cosign .sig manifest's shape.
func legacySig(payload string) artifact {
	return artifact{layers: []layerSpec{{mediaType: "application/vnd.dev.cosign.simplesigning.v1+json", body: payload,
		annotations: map[string]string{"dev.cosignproject.cosign/signature": "MEUCIQ-test"}}}}
}

// legacyAtt is a cosign .att manifest's shape.
func legacyAtt(predicateType string) artifact {
	return artifact{layers: []layerSpec{{mediaType: "application/vnd.dsse.envelope.v1+json", body: `{"payloadType":"application/vnd.in-toto+json"}`,
		annotations: map[string]string{"predicateType": predicateType}}}}
}

// bundle is a cosign v3 sigstore bundle referrer of subject.
func bundle(subject, content, predicateType string) artifact {
	return artifact{artifactType: "application/vnd.dev.sigstore.bundle.v0.3+json", subject: subject,
		annotations: map[string]string{"dev.sigstore.bundle.content": content, "dev.sigstore.bundle.predicateType": predicateType},
		layers:      []layerSpec{{mediaType: "application/vnd.dev.sigstore.bundle.v0.3+json", body: `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}` + subject + content}}}
}

// deleteBlobData removes a blob's data from a filesystem registry's
// storage, as a storage-level cleanup or a lost object does: the registry
// then answers 404 for it.
func deleteBlobData(t testing.TB, r *registry.Registry, digest string) {
	t.Helper()
	hex := strings.TrimPrefix(digest, "sha256:")
	p := filepath.Join(r.Root, "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex)
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("blob %s still in storage", digest)
	}
}

// deleteManifest deletes a manifest by digest through the registry API.
func deleteManifest(t testing.TB, repo name.Repository, digest string) {
	t.Helper()
	if err := remote.Delete(repo.Digest(digest)); err != nil {
		t.Fatal(err)
	}
}
