//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

// signedSeed is what seedSigned pushed: the in-use references, and for
// each signed one how it was signed.
type signedSeed struct {
	targets []types.Target
	// signed are the in-use images signed and attested, by normalized
	// reference: what cosign verify is asked about after the run.
	signed map[string]signedImage
	format map[string]cosign.Format
	// whole counts, by "reference kind", the whole artifacts of each
	// signed image's own digest before the run, as the live finder saw
	// them.
	whole map[string]int
	// unlisted is a bundle referrer no tag and no index lists.
	unlisted string
}

// seedSigned pushes, signs and attests images the ways cosign v3 does on
// a registry without the referrers API, then stops the registry:
//   - signed:v1      legacy .sig and .att tags, and bundles under the referrers tag
//   - signed@<old>   signed both ways, then its tag moved to another build
//   - bundleonly:v1  bundles only (cosign v3's default)
//   - legacyonly:v1  the .sig and .att tags only
//   - multi:v1       an index signed recursively, both ways
//   - unlisted:v1    a bundle referrer whose referrers tag was deleted
func seedSigned(t *testing.T, c *cosign.Cosign, r *registry.Registry) signedSeed {
	t.Helper()
	ctx := context.Background()
	h := r.Host()
	seed := signedSeed{signed: map[string]signedImage{}, format: map[string]cosign.Format{}, whole: map[string]int{}}
	use := func(ref string) {
		seed.targets = append(seed.targets, types.Target{Ref: ref, Uses: []types.Use{{Source: "args"}}})
	}
	both := func(im signedImage, ref string, formats ...cosign.Format) {
		for _, f := range formats {
			if err := c.Sign(ctx, im.ref(im.digest), f, len(im.children) > 0); err != nil {
				t.Fatal(err)
			}
			if len(im.children) == 0 {
				if err := c.Attest(ctx, im.ref(im.digest), "slsaprovenance", slsaPredicate, f); err != nil {
					t.Fatal(err)
				}
			}
		}
		norm, _, _ := scan.ParseReference(ref)
		seed.signed[norm], seed.format[norm] = im, formats[len(formats)-1]
		use(ref)
	}
	push := func(repo, tag, content string) signedImage {
		rp, _ := name.NewRepository(h+"/"+repo, name.Insecure)
		d, err := fixture.PushSingle(ctx, rp.Tag(tag).String(), content)
		if err != nil {
			t.Fatal(err)
		}
		return signedImage{repo: rp, digest: d}
	}
	a := push("signed", "v1", "signed v1")
	both(a, h+"/signed:v1", cosign.Legacy, cosign.Bundle)
	old := push("signed", "moving", "moving, first build")
	both(old, old.ref(old.digest), cosign.Legacy, cosign.Bundle)
	push("signed", "moving", "moving, second build")
	use(h + "/signed:moving")
	both(push("bundleonly", "v1", "bundle only"), h+"/bundleonly:v1", cosign.Bundle)
	both(push("legacyonly", "v1", "legacy only"), h+"/legacyonly:v1", cosign.Legacy)
	multiRepo, _ := name.NewRepository(h+"/multi", name.Insecure)
	multi := signedImage{repo: multiRepo}
	multi.digest, multi.children = pushTwoPlatforms(t, multiRepo, "multi")
	both(multi, h+"/multi:v1", cosign.Legacy, cosign.Bundle)
	un := push("unlisted", "v1", "unlisted")
	if err := c.Sign(ctx, un.ref(un.digest), cosign.Bundle, false); err != nil {
		t.Fatal(err)
	}
	seed.unlisted = pushUnlistedReferrer(t, un)
	use(h + "/unlisted:v1")
	for ref, im := range seed.signed {
		set := findArtifacts(t, im)
		for _, q := range kindQueries {
			for _, a := range set.Match(q) {
				if a.Whole {
					seed.whole[ref+" "+string(q.Kind)]++
				}
			}
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	// The referrers tag of unlisted:v1 goes (a tag-retention policy that
	// keeps the newest tags would): its bundle is listed by nothing.
	tags := filepath.Join(r.Root, "docker", "registry", "v2", "repositories", "unlisted", "_manifests", "tags", scan.ReferrersTag(un.digest))
	if err := os.RemoveAll(tags); err != nil {
		t.Fatal(err)
	}
	return seed
}

// pushUnlistedReferrer PUTs an SBOM referrer of im by digest, without
// updating the referrers tag (go-containerregistry and cosign would): as
// it stands on a registry whose referrers API kept it, once migrated.
func pushUnlistedReferrer(t *testing.T, im signedImage) string {
	t.Helper()
	layer := static.NewLayer([]byte(`{"spdxVersion":"SPDX-2.3","name":"unlisted"}`), "application/spdx+json")
	if err := remote.WriteLayer(im.repo, layer); err != nil {
		t.Fatal(err)
	}
	cfg := static.NewLayer([]byte("{}"), "application/vnd.oci.empty.v1+json")
	if err := remote.WriteLayer(im.repo, cfg); err != nil {
		t.Fatal(err)
	}
	ld, _ := layer.Digest()
	cd, _ := cfg.Digest()
	body := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"artifactType":"application/spdx+json",`+
		`"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":%q,"size":2},`+
		`"layers":[{"mediaType":"application/spdx+json","digest":%q,"size":44}],`+
		`"subject":{"mediaType":%q,"digest":%q,"size":1}}`,
		ggcrtypes.OCIManifestSchema1, cd, ld, ggcrtypes.DockerManifestSchema2, im.digest)
	hash, _, _ := v1.SHA256(strings.NewReader(body))
	h := hash.String()
	req, _ := http.NewRequest(http.MethodPut, "http://"+im.repo.RegistryStr()+"/v2/"+im.repo.RepositoryStr()+"/manifests/"+h, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", string(ggcrtypes.OCIManifestSchema1))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT %s: %s", h, resp.Status)
	}
	return h
}

// kindQueries are what cosign verify and verify-attestation --type
// slsaprovenance ask of an image's own digest.
var kindQueries = []artifacts.Query{{Kind: artifacts.Signature}, {Kind: artifacts.Attestation, PredicateType: slsaV02}}

// TestGCReferrersPrediction seeds signed and attested images on each real
// registry, predicts each collector run with gc.Check, runs the real
// garbage-collect on the same storage, and compares digest for digest;
// then holds the predicted artifact losses to cosign verify after the
// run: a signature (attestation) of an in-use image is predicted lost
// exactly when cosign verify (verify-attestation) fails after the run.
func TestGCReferrersPrediction(t *testing.T) {
	c := newCosign(t)
	for _, version := range []string{registry.V3, registry.V2} {
		for _, du := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/delete-untagged=%t", version, du), func(t *testing.T) {
				model := gcresult.Distribution3
				if version == registry.V2 {
					model = gcresult.Distribution28
				}
				r := startEmpty(t, version)
				seed := seedSigned(t, c, r)
				st, err := storage.Open(r.Root)
				if err != nil {
					t.Fatal(err)
				}
				rep, plan, err := gc.Check(st, gc.Options{Model: model, DeleteUntagged: du}, seed.targets)
				if err != nil {
					t.Fatal(err)
				}
				predicted := planTree(plan)
				if du && !predicted["manifest unlisted "+seed.unlisted] {
					t.Errorf("the unlisted referrer %s is not predicted deleted", seed.unlisted)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				before := storageTree(t, r.Root)
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
				diffSets(t, "real GC", predicted, deleted)
				if err := r.Restart(ctx); err != nil {
					t.Fatal(err)
				}
				holdLossesToCosign(t, c, rep, seed)
				t.Logf("%d manifests, %d blobs deleted; %d artifacts of in-use images lost, %d artifact tags orphaned; %d images break",
					len(plan.Manifests), len(plan.Blobs), len(rep.WouldLoseArtifacts), len(rep.WouldOrphanArtifacts), len(rep.WouldBreak))
			})
		}
	}
}

// holdLossesToCosign checks, for each signed in-use image that the run
// does not break (an image that is gone fails verify for another reason),
// that cosign verify fails after the run exactly when every signature it
// had is predicted lost; and the same for attestations. The live finder
// must agree with cosign too.
func holdLossesToCosign(t *testing.T, c *cosign.Cosign, rep *gcresult.Report, seed signedSeed) {
	t.Helper()
	ctx := context.Background()
	broken := map[string]bool{}
	for _, e := range rep.WouldBreak {
		broken[e.Reference] = true
	}
	lost := map[string]int{}
	for _, l := range rep.WouldLoseArtifacts {
		if l.Subject == seed.signed[l.Reference].digest {
			lost[l.Reference+" "+string(l.Kind)]++
		}
	}
	for ref, im := range seed.signed {
		if broken[ref] {
			continue
		}
		set := findArtifacts(t, im)
		for _, q := range kindQueries {
			if q.Kind == artifacts.Attestation && len(im.children) > 0 {
				continue // the index was signed, not attested
			}
			var passed bool
			var out string
			if q.Kind == artifacts.Signature {
				passed, out, _ = c.Verify(ctx, im.ref(im.digest), seed.format[ref])
			} else {
				passed, out, _ = c.VerifyAttestation(ctx, im.ref(im.digest), "slsaprovenance", seed.format[ref])
			}
			key := ref + " " + string(q.Kind)
			if seed.whole[key] == 0 {
				t.Fatalf("%s: no whole %s before the run", ref, q.Kind)
			}
			predictedGone := lost[key] >= seed.whole[key]
			if passed == predictedGone {
				t.Errorf("%s %s: cosign verify passed=%v after the run; gc-check predicted %d of %d lost\n%s",
					ref, q.Kind, passed, lost[key], seed.whole[key], lastLines(out, 2))
			}
			want := artifacts.Missing
			if passed {
				want = artifacts.Present
			}
			if got := set.Presence(q); got != want {
				t.Errorf("%s %s: the finder says %s after the run, cosign verify passed=%v", ref, q.Kind, got, passed)
			}
		}
	}
}
