//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/hack/image/ociimage"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// imageRevision is the commit the test's builds say they are: fixed, so that a
// commit landing between the two builds leaves their digests equal.
const imageRevision = "0123456789abcdef0123456789abcdef01234567"

// buildImage runs hack/image as make image does, pushing to ref, and
// returns the digest it printed.
func buildImage(t *testing.T, ref, version string) v1.Hash {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), "go", "run", "./hack/image", "-push", ref, "-version", version, "-revision", imageRevision)
	cmd.Dir = ".."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run ./hack/image -push %s: %v\n%s", ref, err, stderr.String())
	}
	out := strings.TrimSpace(stdout.String())
	_, dig, ok := strings.Cut(out, "@")
	h, err := v1.NewHash(dig)
	if !ok || err != nil {
		t.Fatalf("hack/image printed %q, want REPOSITORY@DIGEST", out)
	}
	t.Logf("built and pushed %s in %s: %s", ref, time.Since(start).Round(100*time.Millisecond), strings.TrimSpace(stderr.String()))
	return h
}

// TestImage builds regcheck's image as make image does (twice: the same
// digest both times), pushes it to distribution 3.1.2, reads it back,
// checks its config, runs the binary from its layer, and reads back the
// SPDX SBOM attached as its referrer.
func TestImage(t *testing.T) {
	reg := startEmpty(t, registry.V3)
	const version = "v0.0.0-imagetest"
	first := buildImage(t, reg.Host()+"/tools/regcheck:first", version)
	second := buildImage(t, reg.Host()+"/tools/regcheck:second", version)
	if first != second {
		t.Errorf("two builds of the same sources: %s and %s, want one digest", first, second)
	}

	ref, err := name.ParseReference(reg.Host() + "/tools/regcheck:first")
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d != first {
		t.Errorf("the registry serves %s for :first, hack/image said %s", d, first)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	size := int64(0)
	m, _ := img.Manifest()
	for _, l := range m.Layers {
		size += l.Size
	}
	t.Logf("%s: %d layers, %.1f MiB compressed, user %s, entrypoint %q", first, len(m.Layers), float64(size)/(1<<20), cf.Config.User, cf.Config.Entrypoint)

	t.Run("config", func(t *testing.T) {
		uid, gid, ok := strings.Cut(cf.Config.User, ":")
		if n, err := strconv.Atoi(uid); !ok || err != nil || n == 0 || gid == "0" {
			t.Errorf("user %q, want a numeric non-root uid:gid (runAsNonRoot checks it)", cf.Config.User)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{ociimage.Binary}) {
			t.Errorf("entrypoint %q, want [%s]", cf.Config.Entrypoint, ociimage.Binary)
		}
		secretish := regexp.MustCompile(`(?i)token|passw|secret|key|auth|credential|cookie`)
		for _, e := range cf.Config.Env {
			if secretish.MatchString(e) {
				t.Errorf("the image's environment holds %q", e)
			}
		}
		if cf.OS != "linux" || cf.Created.Unix() != 0 || cf.Config.Labels["org.opencontainers.image.version"] != version {
			t.Errorf("os %s, created %v, labels %v", cf.OS, cf.Created, cf.Config.Labels)
		}
	})

	t.Run("the binary from its layer runs", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "regcheck")
		extract(t, img, strings.TrimPrefix(ociimage.Binary, "/"), bin)
		// Static: no interpreter, no shared library (the image has none).
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		libs, _ := f.ImportedLibraries()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("the binary names an interpreter: it is not static")
			}
		}
		f.Close()
		if len(libs) > 0 {
			t.Errorf("the binary needs %v", libs)
		}
		// The version and the revision hack/image stamped in.
		for _, args := range [][]string{{"version"}, {"--version"}} {
			out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
			got := strings.TrimSpace(string(out))
			t.Logf("regcheck %s: %s", strings.Join(args, " "), got)
			if err != nil || !strings.Contains(got, version) || !strings.Contains(got, imageRevision[:12]) {
				t.Errorf("regcheck %s: %v, printed %q, want %s and revision %s", strings.Join(args, " "), err, got, version, imageRevision[:12])
			}
		}
	})

	t.Run("its SBOM is a referrer", func(t *testing.T) {
		checkImageSBOM(t, reg.Host(), "tools/regcheck", first, version)
	})

	t.Run("regcheck scans its own image", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "scan", reg.Host()+"/tools/regcheck:first")
		if code != 0 || !strings.Contains(stdout, "ok") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})
}

// extract writes the file named name of img's flattened filesystem to dst.
func extract(t *testing.T, img v1.Image, name, dst string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range slices.Backward(layers) {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name != name {
				continue
			}
			if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 || h.Uid != 0 {
				t.Errorf("%s: type %c, mode %o, uid %d: want a root-owned executable", name, h.Typeflag, h.Mode, h.Uid)
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		rc.Close()
	}
	t.Fatalf("no %s in any layer", name)
}
