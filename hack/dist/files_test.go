package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in      string
		binary  string
		archive string
		bin     string
		bad     bool
	}{
		{"linux/amd64", "regcheck_v1_linux_amd64", "kubectl-regcheck_v1_linux_amd64.tar.gz", "kubectl-regcheck", false},
		{"windows/arm64", "regcheck_v1_windows_arm64.exe", "kubectl-regcheck_v1_windows_arm64.tar.gz", "kubectl-regcheck.exe", false},
		{"linux", "", "", "", true},
		{"linux/arm/v7", "", "", "", true},
		{"/amd64", "", "", "", true},
	} {
		tg, err := parseTarget(tc.in, "v1")
		if (err != nil) != tc.bad {
			t.Errorf("%s: error %v", tc.in, err)
			continue
		}
		if !tc.bad && (tg.binary() != tc.binary || tg.archive() != tc.archive || tg.pluginBin() != tc.bin) {
			t.Errorf("%s: %s, %s, %s", tc.in, tg.binary(), tg.archive(), tg.pluginBin())
		}
	}
}

// TestKrewAndChecksums: the template's placeholders of the platforms built
// are filled with their archives' sha256, the others kept; checksums.txt
// passes sha256sum -c.
func TestKrewAndChecksums(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(t.TempDir(), "regcheck.yaml")
	os.WriteFile(tmpl, []byte("version: \"{{VERSION}}\"\na: \"{{SHA256 linux/amd64}}\"\nb: \"{{SHA256 darwin/arm64}}\"\n"), 0o644)
	tg := target{os: "linux", arch: "amd64", version: "v1"}
	if err := writeArchive(filepath.Join(dir, tg.archive()), tg.pluginBin(), []byte("binary"), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := writeKrew(flags{out: dir, version: "v1", krew: tmpl}, []target{tg}); err != nil {
		t.Fatal(err)
	}
	sum, err := fileSHA256(filepath.Join(dir, tg.archive()))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "regcheck.krew.yaml"))
	if want := "version: \"v1\"\na: \"" + sum + "\"\nb: \"{{SHA256 darwin/arm64}}\"\n"; string(got) != want {
		t.Errorf("krew manifest:\n%s\nwant\n%s", got, want)
	}
	if err := writeChecksums(dir); err != nil {
		t.Fatal(err)
	}
	sums, _ := os.ReadFile(filepath.Join(dir, "checksums.txt"))
	if !strings.Contains(string(sums), sum+"  "+tg.archive()+"\n") || strings.Count(string(sums), "\n") != 2 {
		t.Errorf("checksums.txt:\n%s", sums)
	}
	cmd := exec.Command("sha256sum", "--check", "--strict", "checksums.txt")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
}
