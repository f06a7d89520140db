package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/regcheck/regcheck/hack/sbom"
)

// target is one platform's build.
type target struct {
	os, arch, version string
}

func parseTarget(s, version string) (target, error) {
	goos, goarch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || goarch == "" || strings.Contains(goarch, "/") {
		return target{}, fmt.Errorf("platform %q: want OS/ARCH", s)
	}
	return target{os: goos, arch: goarch, version: version}, nil
}

func (t target) exe() string {
	if t.os == "windows" {
		return ".exe"
	}
	return ""
}

func (t target) suffix() string { return "_" + t.version + "_" + t.os + "_" + t.arch }

// binary is regcheck_VERSION_OS_ARCH(.exe).
func (t target) binary() string { return "regcheck" + t.suffix() + t.exe() }

// pluginBin is the binary's name inside its krew archive (krew's bin:):
// kubectl runs kubectl-regcheck for kubectl regcheck.
func (t target) pluginBin() string { return "kubectl-regcheck" + t.exe() }

// archive is the krew archive of the plugin.
func (t target) archive() string { return "kubectl-regcheck" + t.suffix() + ".tar.gz" }

func (t target) sbom() string { return "regcheck" + t.suffix() + ".spdx.json" }

// writeArchive writes a tar.gz holding data as name, executable, owned by
// root, dated created: the same bytes for the same binary.
func writeArchive(path, name string, data []byte, created time.Time) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	h := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func writeSBOM(path string, bin []byte, t target, created time.Time) error {
	doc, err := sbom.FromBinary(bin, sbom.Options{Name: strings.TrimSuffix(t.binary(), t.exe()), Version: t.version, Created: created})
	if err != nil {
		return fmt.Errorf("%s: %w", t.binary(), err)
	}
	return os.WriteFile(path, doc, 0o644)
}

// fileSHA256 is the hex sha256 of a file's bytes.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeChecksums writes checksums.txt in dir: "HEX  NAME" for every other
// file, by name, the format sha256sum -c reads.
func writeChecksums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "checksums.txt" {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, e.Name())
	}
	return os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(b.String()), 0o644)
}

// writeKrew fills the krew manifest template: {{VERSION}} and, for each
// platform built, {{SHA256 OS/ARCH}} with its archive's sha256. A platform
// not built keeps its placeholder (krew refuses such a manifest), and is
// named on stderr.
func writeKrew(f flags, built []target) error {
	tmpl, err := os.ReadFile(f.krew)
	if err != nil {
		return fmt.Errorf("the krew manifest template: %w", err)
	}
	out := strings.ReplaceAll(string(tmpl), "{{VERSION}}", f.version)
	for _, t := range built {
		sum, err := fileSHA256(filepath.Join(f.out, t.archive()))
		if err != nil {
			return err
		}
		out = strings.ReplaceAll(out, "{{SHA256 "+t.os+"/"+t.arch+"}}", sum)
	}
	var left []string
	for _, p := range strings.Split(Platforms, ",") {
		if strings.Contains(out, "{{SHA256 "+p+"}}") {
			left = append(left, p)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		fmt.Fprintf(os.Stderr, "dist: regcheck.krew.yaml: no archive built for %s: their sha256 stay placeholders\n", strings.Join(left, ", "))
	}
	return os.WriteFile(filepath.Join(f.out, "regcheck.krew.yaml"), []byte(out), 0o644)
}
