// Command dist builds regcheck's release binaries (what `make dist` runs):
// for each platform a static binary (CGO_ENABLED=0, -trimpath, the
// version and revision stamped), named regcheck_VERSION_OS_ARCH (.exe on
// Windows); the same binary named kubectl-regcheck(.exe), the name kubectl
// runs a plugin by, in kubectl-regcheck_VERSION_OS_ARCH.tar.gz (the archive
// krew installs); an SPDX SBOM from its build
// information, regcheck_VERSION_OS_ARCH.spdx.json; then checksums.txt
// (sha256sum -c reads it) over all of them, and the krew manifest
// (deploy/krew/regcheck.yaml) with the version and the archives' sha256
// filled in, regcheck.krew.yaml.
//
// usage: go run ./hack/dist [-out dist] [-version V] [-revision R] [-platform linux/amd64,…] [-tags T]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Platforms are the release's: linux, darwin and windows on amd64 and arm64.
const Platforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64"

type flags struct {
	out, version, revision, platforms, tags, krew string
}

func main() {
	var f flags
	flag.StringVar(&f.out, "out", "dist", "the folder the files go to (replaced whole)")
	flag.StringVar(&f.version, "version", "dev", "the version regcheck --version prints, and in every file name")
	flag.StringVar(&f.revision, "revision", "", "the VCS revision to stamp (default: git rev-parse HEAD, if it answers)")
	flag.StringVar(&f.platforms, "platform", Platforms, "OS/ARCH pairs, comma-separated")
	flag.StringVar(&f.tags, "tags", "kustomize_disable_go_plugin_support", "build tags")
	flag.StringVar(&f.krew, "krew", "deploy/krew/regcheck.yaml", "the krew manifest template")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) error {
	if f.revision == "" {
		if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
			f.revision = strings.TrimSpace(string(out))
		}
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	if err := os.RemoveAll(f.out); err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	var built []target
	for _, ps := range strings.Split(f.platforms, ",") {
		t, err := parseTarget(strings.TrimSpace(ps), f.version)
		if err != nil {
			return err
		}
		start := time.Now()
		if err := build(ctx, t, f, created); err != nil {
			return err
		}
		st, err := os.Stat(filepath.Join(f.out, t.binary()))
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "dist: %s/%s: %.1f MiB, built in %s\n", t.os, t.arch, float64(st.Size())/(1<<20), time.Since(start).Round(100*time.Millisecond))
		built = append(built, t)
	}
	if err := writeKrew(f, built); err != nil {
		return err
	}
	return writeChecksums(f.out)
}

// build makes t's binary, its krew archive (the kubectl-regcheck copy) and
// its SBOM.
func build(ctx context.Context, t target, f flags, created time.Time) error {
	bin := filepath.Join(f.out, t.binary())
	if err := goBuild(ctx, t, f, bin); err != nil {
		return err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if err := writeArchive(filepath.Join(f.out, t.archive()), t.pluginBin(), data, created); err != nil {
		return err
	}
	return writeSBOM(filepath.Join(f.out, t.sbom()), data, t, created)
}

// goBuild runs go build for t into out: static, no path of this machine
// (-trimpath), no symbol table or DWARF (-s -w), an empty build ID, and no
// VCS stamp whatever GOFLAGS says (the version and revision are stamped
// with -X, as hack/image does, so that a copy without .git builds the same).
func goBuild(ctx context.Context, t target, f flags, out string) error {
	const pkg = "github.com/regcheck/regcheck/internal/version"
	ldflags := "-s -w -buildid= -X " + pkg + ".stamped=" + f.version
	if f.revision != "" {
		ldflags += " -X " + pkg + ".stampedRevision=" + f.revision
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", f.tags, "-ldflags", ldflags, "-o", out, "./cmd/regcheck")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.os, "GOARCH="+t.arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", t.os, t.arch, err)
	}
	return nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (reproducible-builds.org), else
// the Unix epoch: the archives' file times and the SBOMs' creation time.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	var sec int64
	if _, err := fmt.Sscan(s, &sec); err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
