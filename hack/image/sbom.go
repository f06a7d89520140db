package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/hack/sbom"
)

// emptyConfig is the OCI empty descriptor's media type and bytes: an
// artifact's config when it has none.
const emptyConfig types.MediaType = "application/vnd.oci.empty.v1+json"

// rawManifest is a manifest pushed as its bytes.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// sbomManifest is the OCI artifact carrying doc (SPDX JSON) whose subject
// is subject: artifactType application/spdx+json, an empty config, one
// layer. Its blobs are returned with it, to push first.
func sbomManifest(doc []byte, title string, subject v1.Descriptor, created time.Time) (rawManifest, []v1.Layer, error) {
	cfg := static.NewLayer([]byte("{}"), emptyConfig)
	layer := static.NewLayer(doc, sbom.MediaType)
	var descs []v1.Descriptor
	for _, l := range []v1.Layer{cfg, layer} {
		d, err := l.Digest()
		if err != nil {
			return rawManifest{}, nil, err
		}
		n, err := l.Size()
		if err != nil {
			return rawManifest{}, nil, err
		}
		mt, _ := l.MediaType()
		descs = append(descs, v1.Descriptor{MediaType: mt, Digest: d, Size: n})
	}
	descs[0].Data = []byte("{}")
	descs[1].Annotations = map[string]string{"org.opencontainers.image.title": title}
	// The subject as the registry lists it: its media type, digest, size.
	subject = v1.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  sbom.MediaType,
		Config:        descs[0],
		Layers:        descs[1:],
		Subject:       &subject,
		Annotations:   map[string]string{"org.opencontainers.image.created": created.UTC().Format(time.RFC3339)},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return rawManifest{}, nil, err
	}
	return rawManifest{raw: raw, mt: types.OCIManifestSchema1}, []v1.Layer{cfg, layer}, nil
}

// pushSBOM pushes the SBOM of bin (a platform's regcheck binary) to repo
// as a referrer of subject (that platform's image): on a registry with the
// referrers API it lists it; on one without, go-containerregistry adds it
// to the referrers tag's index (sha256-HEX), the OCI fallback. It returns
// the SBOM manifest's digest.
func pushSBOM(repo name.Repository, bin []byte, o sbom.Options, subject v1.Descriptor, opts []remote.Option) (v1.Hash, error) {
	doc, err := sbom.FromBinary(bin, o)
	if err != nil {
		return v1.Hash{}, err
	}
	m, blobs, err := sbomManifest(doc, o.Name+".spdx.json", subject, o.Created)
	if err != nil {
		return v1.Hash{}, err
	}
	for _, b := range blobs {
		if err := remote.WriteLayer(repo, b, opts...); err != nil {
			return v1.Hash{}, fmt.Errorf("pushing the SBOM's blobs: %w", err)
		}
	}
	d, _, err := v1.SHA256(bytes.NewReader(m.raw))
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Put(repo.Digest(d.String()), m, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing the SBOM of %s: %w", subject.Digest, err)
	}
	return d, nil
}
