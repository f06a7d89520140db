// Command image builds regcheck's container image without a Docker engine
// (what `make image` runs): a static binary (CGO_ENABLED=0, -trimpath) per
// platform, the build machine's CA bundle and a non-root user, assembled by
// hack/image/ociimage with fixed timestamps, so that the same sources, Go
// toolchain and CA bundle give the same digest. It pushes the image (an
// index for several platforms) to -push, with an SPDX SBOM of each
// platform's binary as an OCI referrer of that platform's image (see
// hack/sbom), or writes an OCI layout to -layout (without SBOM), and prints
// REF@DIGEST.
//
// usage: go run ./hack/image [-push REF | -layout DIR] [-version V] [-platform linux/amd64,linux/arm64] [-ca-bundle FILE]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/hack/image/ociimage"
	"github.com/regcheck/regcheck/hack/sbom"
)

type flags struct {
	push, layout, version, revision, platforms, caBundle string
}

func main() {
	var f flags
	flag.StringVar(&f.push, "push", "", "push the image to this reference (REGISTRY/REPO:TAG), with the credentials of ~/.docker/config.json")
	flag.StringVar(&f.layout, "layout", "", "write the image to an OCI layout in this folder instead (replaced whole)")
	flag.StringVar(&f.version, "version", "dev", "the version regcheck --version prints, also a label")
	flag.StringVar(&f.revision, "revision", "", "the VCS revision for the label (default: git rev-parse HEAD, if it answers)")
	flag.StringVar(&f.platforms, "platform", "linux/"+runtime.GOARCH, "platforms, comma-separated (several make an index)")
	flag.StringVar(&f.caBundle, "ca-bundle", ociimage.CABundle, "the PEM bundle of root certificates the image trusts")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) error {
	if (f.push == "") == (f.layout == "") {
		return errors.New("give one of -push REF and -layout DIR")
	}
	var ref name.Reference
	if f.push != "" {
		var err error
		if ref, err = name.ParseReference(f.push); err != nil {
			return err
		}
	}
	ca, err := os.ReadFile(f.caBundle)
	if err != nil {
		return fmt.Errorf("reading the CA bundle: %w (pass -ca-bundle)", err)
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	if f.revision == "" {
		if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
			f.revision = strings.TrimSpace(string(out))
		}
	}

	start := time.Now()
	imgs, bins, err := buildAll(ctx, f, ca, created)
	if err != nil {
		return err
	}

	// One platform is an image; several, an index of them.
	var what interface{ Digest() (v1.Hash, error) } = imgs[0]
	if len(imgs) > 1 {
		if what, err = ociimage.Index(imgs...); err != nil {
			return err
		}
	}
	digest, err := what.Digest()
	if err != nil {
		return err
	}
	var size int64
	for _, img := range imgs {
		n, err := imageSize(img)
		if err != nil {
			return err
		}
		size += n
	}

	dest := f.layout
	switch {
	case f.push != "":
		opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
		if idx, ok := what.(v1.ImageIndex); ok {
			err = remote.WriteIndex(ref, idx, opts...)
		} else {
			err = remote.Write(ref, what.(v1.Image), opts...)
		}
		if err != nil {
			return fmt.Errorf("pushing %s: %w", ref, err)
		}
		if err := attachSBOMs(ref.Context(), imgs, bins, f.version, created, opts); err != nil {
			return err
		}
		dest = ref.Context().String()
	default:
		if err := writeLayout(f.layout, what, f.version); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "image: %s, %d platform(s), %.1f MiB compressed, built in %s\n", f.platforms, len(imgs), float64(size)/(1<<20), time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("%s@%s\n", dest, digest)
	return nil
}

// buildAll builds regcheck and its image for each of f's platforms, and
// returns the images with their binaries.
func buildAll(ctx context.Context, f flags, ca []byte, created time.Time) ([]v1.Image, [][]byte, error) {
	tmp, err := os.MkdirTemp("", "regcheck-image-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	var imgs []v1.Image
	var bins [][]byte
	for _, ps := range strings.Split(f.platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(ps))
		if err != nil {
			return nil, nil, err
		}
		bin, err := goBuild(ctx, *p, f.version, f.revision, filepath.Join(tmp, "regcheck-"+strings.ReplaceAll(p.String(), "/", "-")))
		if err != nil {
			return nil, nil, err
		}
		img, err := ociimage.Image(ociimage.Spec{Platform: *p, Binary: bin, CABundle: ca, Version: f.version, Revision: f.revision, Created: created})
		if err != nil {
			return nil, nil, err
		}
		imgs = append(imgs, img)
		bins = append(bins, bin)
	}
	return imgs, bins, nil
}

// attachSBOMs pushes to repo, as a referrer of each image, the SPDX SBOM
// of its binary, and names each on stderr.
func attachSBOMs(repo name.Repository, imgs []v1.Image, bins [][]byte, version string, created time.Time, opts []remote.Option) error {
	for i, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		raw, err := img.RawManifest()
		if err != nil {
			return err
		}
		mt, err := img.MediaType()
		if err != nil {
			return err
		}
		o := sbom.Options{Name: "regcheck-" + version + "-" + cf.OS + "-" + cf.Architecture, Version: version, Created: created}
		sd, err := pushSBOM(repo, bins[i], o, v1.Descriptor{MediaType: mt, Digest: d, Size: int64(len(raw))}, opts)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "image: SPDX SBOM %s@%s, a referrer of %s (%s/%s)\n", repo, sd, d, cf.OS, cf.Architecture)
	}
	return nil
}

// goBuild builds a static regcheck for p into out and returns its bytes.
// -trimpath and an empty build ID leave no path or time of this machine in
// it; -s -w drop the symbol table and DWARF (a third of the size). No VCS
// stamp, whatever GOFLAGS says, as in the Dockerfile (whose context may have
// no .git): the version and revision are stamped (-X) and labelled.
func goBuild(ctx context.Context, p v1.Platform, version, revision, out string) ([]byte, error) {
	const pkg = "github.com/regcheck/regcheck/internal/version"
	ldflags := "-s -w -buildid= -X " + pkg + ".stamped=" + version
	if revision != "" {
		ldflags += " -X " + pkg + ".stampedRevision=" + revision
	}
	// kustomize's Go-plugin loader links the plugin package; regcheck
	// never loads plugins (about 20 MB less without it).
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", "kustomize_disable_go_plugin_support", "-ldflags", ldflags, "-o", out, "./cmd/regcheck")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Architecture == "arm" && p.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build for %s: %w", p.String(), err)
	}
	return os.ReadFile(out)
}

// writeLayout replaces dir with an OCI layout holding what, named version.
func writeLayout(dir string, what any, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	opt := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})
	if idx, ok := what.(v1.ImageIndex); ok {
		return lp.AppendIndex(idx, opt)
	}
	return lp.AppendImage(what.(v1.Image), opt)
}

// imageSize is the compressed size of an image's manifest, config and layers.
func imageSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	n := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (reproducible-builds.org), else
// the Unix epoch: the image's every timestamp.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
