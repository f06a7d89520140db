package ociimage

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func spec() Spec {
	return Spec{
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Binary:   []byte("\x7fELF not really a binary"),
		CABundle: []byte(pem),
		Version:  "v1.2.3",
		Revision: "0123456789abcdef",
	}
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var ds []v1.Hash
	for _, l := range m.Layers {
		ds = append(ds, l.Digest)
	}
	return ds
}

// TestImageReproducible: the same Spec gives the same digest; each input
// changes it; a new binary leaves the base layer as it was.
func TestImageReproducible(t *testing.T) {
	build := func(s Spec) v1.Image {
		t.Helper()
		img, err := Image(s)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	a, b := build(spec()), build(spec())
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Fatalf("two builds of one spec: %s and %s", da, db)
	}
	changes := map[string]func(*Spec){
		"binary":   func(s *Spec) { s.Binary = append(s.Binary, '!') },
		"CA":       func(s *Spec) { s.CABundle = append(s.CABundle, pem...) },
		"version":  func(s *Spec) { s.Version = "v1.2.4" },
		"revision": func(s *Spec) { s.Revision = "fedcba" },
		"created":  func(s *Spec) { s.Created = time.Unix(1_700_000_000, 0) },
		"platform": func(s *Spec) { s.Platform.Architecture = "arm64" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			s := spec()
			change(&s)
			c := build(s)
			if digest(t, c) == digest(t, a) {
				t.Errorf("changing the %s kept the digest", name)
			}
			base := layerDigests(t, a)[0]
			if got := layerDigests(t, c)[0]; (got == base) != (name == "binary" || name == "version" || name == "revision" || name == "platform") {
				t.Errorf("changing the %s: base layer %s, was %s", name, got, base)
			}
		})
	}
}

// TestImageConfig: non-root, the entrypoint, OCI media types, no secret in
// the environment, every timestamp the one given.
func TestImageConfig(t *testing.T) {
	s := spec()
	s.Created = time.Unix(1_700_000_000, 0)
	img, err := Image(s)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/usr/local/bin/regcheck"}) || len(cf.Config.Cmd) != 0 {
		t.Errorf("user %q, entrypoint %q, cmd %q", cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if !slices.Equal(cf.Config.Env, []string{"PATH=/usr/local/bin", "HOME=/home/nonroot"}) {
		t.Errorf("env %q", cf.Config.Env)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || cf.RootFS.Type != "layers" || len(cf.RootFS.DiffIDs) != 2 || len(cf.History) != 2 {
		t.Errorf("config %+v", cf)
	}
	if cf.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cf.Config.Labels["org.opencontainers.image.revision"] != "0123456789abcdef" {
		t.Errorf("labels %v", cf.Config.Labels)
	}
	for _, tm := range []v1.Time{cf.Created, cf.History[0].Created, cf.History[1].Created} {
		if !tm.Equal(s.Created) {
			t.Errorf("timestamp %v, want %v", tm, s.Created.UTC())
		}
	}
	mt, _ := img.MediaType()
	m, _ := img.Manifest()
	if mt != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || m.Layers[0].MediaType != types.OCILayer || m.Layers[1].MediaType != types.OCILayer {
		t.Errorf("media types: manifest %s, config %s, layers %s %s", mt, m.Config.MediaType, m.Layers[0].MediaType, m.Layers[1].MediaType)
	}
}

type entry struct {
	name     string
	mode     int64
	uid, gid int
	size     int64
}

// TestImageFiles: the layers hold exactly the files, folders first and
// sorted, owned by root but for the home, timed s.Created.
func TestImageFiles(t *testing.T) {
	s := spec()
	img, err := Image(s)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]entry
	var passwd string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var es []entry
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uname != "" || h.Gname != "" || len(h.PAXRecords) != 0 {
				t.Errorf("%s: time %v, names %q %q, PAX %v", h.Name, h.ModTime, h.Uname, h.Gname, h.PAXRecords)
			}
			es = append(es, entry{h.Name, h.Mode, h.Uid, h.Gid, h.Size})
			if h.Name == "etc/passwd" {
				b, _ := io.ReadAll(tr)
				passwd = string(b)
			}
		}
		rc.Close()
		got = append(got, es)
	}
	want := [][]entry{{
		{"etc/", 0o755, 0, 0, 0},
		{"etc/group", 0o644, 0, 0, 27},
		{"etc/nsswitch.conf", 0o644, 0, 0, 17},
		{"etc/passwd", 0o644, 0, 0, 94},
		{"etc/ssl/", 0o755, 0, 0, 0},
		{"etc/ssl/certs/", 0o755, 0, 0, 0},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0, 0, int64(len(pem))},
		{"home/", 0o755, 0, 0, 0},
		{"home/nonroot/", 0o700, 65532, 65532, 0},
		{"tmp/", 0o1777, 0, 0, 0},
	}, {
		{"usr/", 0o755, 0, 0, 0},
		{"usr/local/", 0o755, 0, 0, 0},
		{"usr/local/bin/", 0o755, 0, 0, 0},
		{"usr/local/bin/regcheck", 0o755, 0, 0, int64(len(s.Binary))},
	}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("layers:\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(passwd, "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n") {
		t.Errorf("passwd:\n%s", passwd)
	}
}

func TestImageRejects(t *testing.T) {
	for name, change := range map[string]func(*Spec){
		"no binary":   func(s *Spec) { s.Binary = nil },
		"not linux":   func(s *Spec) { s.Platform.OS = "windows" },
		"no CA":       func(s *Spec) { s.CABundle = nil },
		"CA not PEM":  func(s *Spec) { s.CABundle = []byte("hello") },
		"no platform": func(s *Spec) { s.Platform = v1.Platform{} },
	} {
		t.Run(name, func(t *testing.T) {
			s := spec()
			change(&s)
			if _, err := Image(s); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestIndex: several platforms make an OCI index naming each.
func TestIndex(t *testing.T) {
	var imgs []v1.Image
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}} {
		s := spec()
		s.Platform = p
		img, err := Image(s)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	idx, err := Index(imgs...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 2 {
		t.Fatalf("index %+v", m)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.Architecture != arch || d.Digest != digest(t, imgs[i]) || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: %+v", i, d)
		}
	}
}

// TestDockerfile: the Dockerfile's final image runs as the same user, with
// the same entrypoint, environment and files as the one this package makes.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	// The last stage, joined across line continuations.
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	stages := strings.Split(text, "\nFROM ")
	last := stages[len(stages)-1]
	if !strings.HasPrefix(last, "scratch AS regcheck") {
		t.Fatalf("the last stage is %q, want scratch AS regcheck", strings.SplitN(last, "\n", 2)[0])
	}
	has := func(doc, line string) {
		t.Helper()
		if !slices.Contains(strings.Split(doc, "\n"), line) {
			t.Errorf("the Dockerfile has no line %q", line)
		}
	}
	has(last, "USER "+User)
	has(last, `ENTRYPOINT ["`+Binary+`"]`)
	has(last, "ENV PATH=/usr/local/bin HOME="+Home)
	has(last, "COPY --from=build /out/regcheck "+Binary)
	has(last, "COPY --from=build --chown=65532:65532 /rootfs"+Home+" "+Home)
	// The build stage writes the base layer's files with the same bytes.
	for _, f := range baseFiles([]byte(pem)) {
		if f.data == nil || f.name == "etc/ssl/certs/ca-certificates.crt" {
			continue
		}
		printf := "printf '" + strings.ReplaceAll(string(f.data), "\n", `\n`) + "' > /rootfs/" + f.name
		if !strings.Contains(text, printf) {
			t.Errorf("the Dockerfile does not write /%s as %s does: want %q", f.name, "ociimage", printf)
		}
	}
	for _, s := range []string{"cp /etc/ssl/certs/ca-certificates.crt /rootfs" + CABundle, "chmod 0700 /rootfs" + Home, "chmod 1777 /rootfs/tmp", "CGO_ENABLED=0 go build -trimpath"} {
		if !strings.Contains(text, s) {
			t.Errorf("the Dockerfile has no %q", s)
		}
	}
}
