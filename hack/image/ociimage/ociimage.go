package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds and runs as. The Dockerfile at the top of the
// repository builds the same layout (a test holds it to these).
const (
	// UID and GID of the user the image runs as: distroless's nonroot.
	UID = 65532
	GID = 65532
	// User is the config's User: numeric, so that Kubernetes'
	// runAsNonRoot can check it without reading /etc/passwd.
	User = "65532:65532"
	// Home is the user's home, the only folder it owns; mount an emptyDir
	// there (or set HOME) under a read-only root filesystem.
	Home = "/home/nonroot"
	// Binary is the entrypoint.
	Binary = "/usr/local/bin/regcheck"
	// CABundle is where Go's crypto/x509 looks first on Linux.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// Source names the repository in the image's labels.
	Source = "https://github.com/regcheck/regcheck"
)

// Spec is everything an image is made of: the same Spec gives the same
// digest.
type Spec struct {
	// Platform is the binary's; OS must be linux.
	Platform v1.Platform
	// Binary is a statically linked regcheck for Platform.
	Binary []byte
	// CABundle is a PEM bundle of the roots the image trusts.
	CABundle []byte
	// Version and Revision go into the labels (Revision may be empty).
	Version, Revision string
	// Created is every timestamp in the image: the config's, its
	// history's and every file's. The zero Time means the Unix epoch.
	Created time.Time
}

// file is one entry of a layer.
type file struct {
	name     string // without a leading slash; a folder ends in /
	mode     int64
	uid, gid int
	data     []byte
}

// baseFiles are the files every image holds besides the binary.
func baseFiles(caBundle []byte) []file {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, GID, Home)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		// Go's resolver reads it; "files dns" is what a cluster's pods expect.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(CABundle, "/"), mode: 0o644, data: caBundle},
		{name: "home/", mode: 0o755},
		{name: strings.TrimPrefix(Home, "/") + "/", mode: 0o700, uid: UID, gid: GID},
		{name: "tmp/", mode: 0o1777},
	}
}

// binaryFiles is the binary's layer.
func binaryFiles(bin []byte) []file {
	return []file{
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: strings.TrimPrefix(Binary, "/"), mode: 0o755, data: bin},
	}
}

// Image assembles the image for s: two layers (the base files, then the
// binary, so that a new binary reuses the first), OCI media types.
func Image(s Spec) (v1.Image, error) {
	if s.Platform.OS != "linux" || s.Platform.Architecture == "" {
		return nil, fmt.Errorf("platform %s: want linux/ARCH", s.Platform.String())
	}
	if len(s.Binary) == 0 {
		return nil, fmt.Errorf("no binary")
	}
	if len(s.CABundle) == 0 || !bytes.Contains(s.CABundle, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("the CA bundle holds no PEM certificate")
	}
	created := s.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()

	base, err := layer(baseFiles(s.CABundle), created)
	if err != nil {
		return nil, err
	}
	bin, err := layer(binaryFiles(s.Binary), created)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":   "regcheck",
		"org.opencontainers.image.source":  Source,
		"org.opencontainers.image.version": s.Version,
	}
	if s.Revision != "" {
		labels["org.opencontainers.image.revision"] = s.Revision
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: s.Platform.Architecture,
		OS:           s.Platform.OS,
		Variant:      s.Platform.Variant,
		Created:      v1.Time{Time: created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{Binary},
			Env:        []string{"PATH=/usr/local/bin", "HOME=" + Home},
			Labels:     labels,
		},
	})
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "ociimage: passwd and group (nonroot 65532), nsswitch.conf, CA bundle, " + Home + ", /tmp"}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "ociimage: " + Binary + " " + s.Version}},
	)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// Index is an OCI index of images for several platforms, in the order
// given; each image's platform is read from its config.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := cf.Platform()
		if p == nil {
			return nil, fmt.Errorf("an image has no platform")
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// layer writes files as a gzipped tar: folders before what they hold,
// entries sorted, every timestamp created, no user or group names.
func layer(files []file, created time.Time) (v1.Layer, error) {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b file) int {
		return slices.Compare(strings.Split(a.name, "/"), strings.Split(b.name, "/"))
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: created,
			Format:  tar.FormatUSTAR,
		}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if d := path.Dir(strings.TrimSuffix(f.name, "/")); d != "." && !slices.ContainsFunc(files, func(g file) bool { return g.name == d+"/" }) {
			return nil, fmt.Errorf("%s: its folder %s/ is not in the layer", f.name, d)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
