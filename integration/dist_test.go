//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/hack/sbom"
)

const (
	distVersion  = "v0.99.0-disttest"
	distRevision = "89abcdef0123456789abcdef0123456789abcdef"
	// allPlatforms are make dist's (hack/dist.Platforms).
	allPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64"
)

// runDist runs hack/dist as make dist does, into a new folder, and returns it.
func runDist(t *testing.T, platforms string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dist")
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), "go", "run", "./hack/dist", "-out", out, "-version", distVersion, "-revision", distRevision, "-platform", platforms)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run ./hack/dist: %v\n%s", err, stderr.String())
	}
	t.Logf("hack/dist %s in %s:\n%s", platforms, time.Since(start).Round(100*time.Millisecond), stderr.String())
	return out
}

// TestDist builds the release files as make dist does: linux/amd64, or
// all six platforms with REGCHECK_DIST_ALL=1 (each cross build takes
// minutes on 2 cores). It checks checksums.txt with sha256sum -c, runs the
// linux/amd64 binary's --version, the kubectl-regcheck from its krew
// archive (help reads "kubectl regcheck"), reads the SBOM and the krew
// manifest, and checks each other binary's format and architecture; then
// go install …@version from a clean module cache, offline.
func TestDist(t *testing.T) {
	platforms := "linux/amd64"
	if os.Getenv("REGCHECK_DIST_ALL") == "1" {
		platforms = allPlatforms
	}
	dir := runDist(t, platforms)
	cmd := exec.CommandContext(t.Context(), "sha256sum", "--check", "--strict", "checksums.txt")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c checksums.txt: %v\n%s", err, out)
	} else if n := strings.Count(string(out), ": OK\n"); n != 3*len(strings.Split(platforms, ","))+1 {
		t.Errorf("sha256sum -c checked %d files, want 3 per platform and the krew manifest:\n%s", n, out)
	}
	for _, p := range strings.Split(platforms, ",") {
		goos, goarch, _ := strings.Cut(p, "/")
		exe := map[bool]string{true: ".exe"}[goos == "windows"]
		bin := filepath.Join(dir, "regcheck_"+distVersion+"_"+goos+"_"+goarch+exe)
		st, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.1f MiB", filepath.Base(bin), float64(st.Size())/(1<<20))
		checkFormat(t, bin, goos, goarch)
		checkSBOM(t, strings.TrimSuffix(bin, exe)+".spdx.json")
		plugin := filepath.Join(t.TempDir(), "kubectl-regcheck"+exe)
		archive := filepath.Join(dir, "kubectl-regcheck_"+distVersion+"_"+goos+"_"+goarch+".tar.gz")
		untar(t, archive, filepath.Base(plugin), plugin)
		if a, b := fileSum(t, plugin), fileSum(t, bin); a != b {
			t.Errorf("%s holds another binary than %s", archive, bin)
		}
		checkKrew(t, dir, p, fileSum(t, archive), filepath.Base(archive), filepath.Base(plugin))
		if p != "linux/amd64" {
			continue
		}
		out, err := exec.CommandContext(t.Context(), bin, "--version").CombinedOutput()
		if got := string(out); err != nil || !strings.Contains(got, distVersion) || !strings.Contains(got, distRevision[:12]) {
			t.Errorf("%s --version: %v, printed %q, want %s and %s", bin, err, got, distVersion, distRevision[:12])
		}
		t.Logf("regcheck --version: %s", strings.TrimSpace(string(out)))
		out, err = exec.CommandContext(t.Context(), plugin, "pin", "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "\n  kubectl regcheck pin [PATH...] [flags]\n") {
			t.Errorf("kubectl-regcheck pin --help: %v, printed\n%s", err, out)
		}
	}
	if platforms != allPlatforms {
		t.Logf("built %s only; REGCHECK_DIST_ALL=1 builds all six", platforms)
	}
	t.Run("go install from a clean module cache", func(t *testing.T) { testGoInstall(t) })
}

// checkFormat opens bin as the executable format of goos and checks its
// architecture; an ELF must be static.
func checkFormat(t *testing.T, bin, goos, goarch string) {
	t.Helper()
	var err error
	arch := ""
	switch goos {
	case "linux":
		var f *elf.File
		if f, err = elf.Open(bin); err == nil {
			arch = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s names an interpreter: not static", bin)
				}
			}
			f.Close()
		}
	case "darwin":
		var f *macho.File
		if f, err = macho.Open(bin); err == nil {
			arch = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
			f.Close()
		}
	case "windows":
		var f *pe.File
		if f, err = pe.Open(bin); err == nil {
			arch = map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
			f.Close()
		}
	}
	if err != nil || arch != goarch {
		t.Errorf("%s: %v, architecture %q, want a %s/%s executable", bin, err, arch, goos, goarch)
	}
}

// checkSBOM reads an SPDX document hack/dist wrote: regcheck at the
// stamped version, and its dependencies with purls (cobra among them).
func checkSBOM(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc sbom.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) < 50 || doc.Packages[0].Name != "github.com/regcheck/regcheck" || doc.Packages[0].VersionInfo != distVersion {
		t.Fatalf("%s: %s, %d packages, first %+v", path, doc.SPDXVersion, len(doc.Packages), doc.Packages[0])
	}
	found := false
	for _, p := range doc.Packages {
		found = found || (len(p.ExternalRefs) == 1 && p.ExternalRefs[0].Locator == "pkg:golang/github.com/spf13/cobra@v1.10.2")
	}
	if !found {
		t.Errorf("%s: no package with purl pkg:golang/github.com/spf13/cobra@v1.10.2", path)
	}
}

// checkKrew checks the filled krew manifest's entry for platform p: its
// sha256 is the archive's, its uri names the archive, its bin is in it.
func checkKrew(t *testing.T, dir, p, sum, archive, bin string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "regcheck.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Version   string `yaml:"version"`
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"selector"`
				URI    string `yaml:"uri"`
				SHA256 string `yaml:"sha256"`
				Bin    string `yaml:"bin"`
			} `yaml:"platforms"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Kind != "Plugin" || m.Spec.Version != distVersion || len(m.Spec.Platforms) != 6 {
		t.Fatalf("krew manifest: kind %s, version %s, %d platforms", m.Kind, m.Spec.Version, len(m.Spec.Platforms))
	}
	for _, pl := range m.Spec.Platforms {
		if pl.Selector.MatchLabels["os"]+"/"+pl.Selector.MatchLabels["arch"] != p {
			continue
		}
		if pl.SHA256 != sum || !strings.HasSuffix(pl.URI, "/"+distVersion+"/"+archive) || pl.Bin != bin {
			t.Errorf("krew %s: %+v, want sha256 %s of %s holding %s", p, pl, sum, archive, bin)
		}
		return
	}
	t.Errorf("krew manifest: no platform %s", p)
}

// untar writes the file called name in the tar.gz archive to dst.
func untar(t *testing.T, archive, name, dst string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s holds no %s", archive, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != name {
			continue
		}
		if h.Mode&0o111 == 0 {
			t.Errorf("%s in %s: mode %o, not executable", name, archive, h.Mode)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
}

// fileSum is a file's sha256, hex.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
