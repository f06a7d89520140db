//go:build integration

package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/hack/sbom"
)

// imageReferrers lists the referrers of repo@d: through the registry's
// referrers API (GET /v2/REPO/referrers/DIGEST) when it answers 200, else
// from the referrers tag (sha256-HEX), the OCI fallback a registry without
// the API gets; it says which it read.
func imageReferrers(t *testing.T, host, repo string, d v1.Hash) (*v1.IndexManifest, string) {
	t.Helper()
	resp, err := http.Get("http://" + host + "/v2/" + repo + "/referrers/" + d.String())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		var idx v1.IndexManifest
		if err := json.Unmarshal(body, &idx); err != nil {
			t.Fatalf("the referrers API's answer: %v\n%s", err, body)
		}
		return &idx, "the referrers API"
	}
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET referrers: %s\n%s", resp.Status, body)
	}
	tag, err := name.NewTag(host+"/"+repo+":"+d.Algorithm+"-"+d.Hex, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(tag, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatalf("no referrers API (404) and no referrers tag: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return m, "the referrers tag " + tag.TagStr() + " (the registry's referrers API answered 404)"
}

// checkImageSBOM finds the SPDX SBOM hack/image attached to repo@d, reads
// it back, and checks it: one referrer of artifactType
// application/spdx+json whose subject is d, its layer an SPDX 2.3 document
// naming regcheck at version and its dependencies.
func checkImageSBOM(t *testing.T, host, repo string, d v1.Hash, version string) {
	idx, via := imageReferrers(t, host, repo, d)
	var sboms []v1.Descriptor
	for _, m := range idx.Manifests {
		if m.ArtifactType == sbom.MediaType {
			sboms = append(sboms, m)
		}
	}
	t.Logf("%d referrer(s) of %s through %s, %d SBOM", len(idx.Manifests), d, via, len(sboms))
	if len(sboms) != 1 {
		t.Fatalf("referrers %+v: want one of artifactType %s", idx.Manifests, sbom.MediaType)
	}
	ref, err := name.NewDigest(host+"/"+repo+"@"+sboms[0].Digest.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != sbom.MediaType || m.Subject == nil || m.Subject.Digest != d || len(m.Layers) != 1 || m.Layers[0].MediaType != sbom.MediaType {
		t.Fatalf("the SBOM's manifest: %+v", m)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var doc sbom.Document
	if err := json.NewDecoder(rc).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	cobra := false
	for _, p := range doc.Packages {
		cobra = cobra || len(p.ExternalRefs) == 1 && p.ExternalRefs[0].Locator == "pkg:golang/github.com/spf13/cobra@v1.10.2"
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.Packages[0].Name != "github.com/regcheck/regcheck" || doc.Packages[0].VersionInfo != version || !cobra || !strings.HasSuffix(doc.Name, "-linux-amd64") {
		t.Errorf("SBOM %s: %s, %d packages, first %+v, cobra's purl found: %v", doc.Name, doc.SPDXVersion, len(doc.Packages), doc.Packages[0], cobra)
	}
	t.Logf("SBOM %s: %d packages, %d relationships", doc.Name, len(doc.Packages), len(doc.Relationships))
}
