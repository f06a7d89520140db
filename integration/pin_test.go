//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

// runCLI runs regcheck with args and returns the exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	return code, out.String(), errb.String()
}

// exampleManifests copies examples/manifests into a new folder with their
// references pointing at the fixtures on host.
func exampleManifests(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob("../examples/manifests/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example manifests: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("127.0.0.1:5055/demo/"), []byte(host+"/gc/"))
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot reads every file under dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func deployment(name, image, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  template:
    spec:
      containers:
        - name: app
          image: %s
%s`, name, image, extra)
}

func fixtureDigests(imgs []fixture.Image) map[string]string {
	out := map[string]string{}
	for _, im := range imgs {
		out[im.Name] = im.Digest.String()
	}
	return out
}

// TestPinExamples: the default prints a diff and changes nothing, --write
// pins every reference to its tag's digest (the index digest for indexes),
// a second --write is a no-op, and --check passes after.
func TestPinExamples(t *testing.T) {
	r, imgs := startRegistry(t, registry.V3)
	dir := exampleManifests(t, r.Host())
	before := snapshot(t, dir)
	digests := fixtureDigests(imgs)

	code, out, errs := runCLI(t, "pin", dir)
	if code != cli.ExitClean {
		t.Fatalf("pin: exit %d\n%s%s", code, out, errs)
	}
	if got := snapshot(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatal("pin without --write changed files")
	}
	for _, n := range []string{"app-a", "app-b", "single", "multiarch", "manifestlist", "partial", "buildx"} {
		want := fmt.Sprintf("%s/gc/%s:v1@%s", r.Host(), n, digests[n])
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %s:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "--- a/"+filepath.Join(dir, "apps.yaml")) || !strings.Contains(out, "@@ -") {
		t.Errorf("not a unified diff:\n%s", out)
	}
	if !regexp.MustCompile(`would pin 8 references in 5 of 5 files; \d+ registry requests`).MatchString(errs) {
		t.Errorf("summary: %s", errs)
	}

	code, out, errs = runCLI(t, "pin", "--write", dir)
	if code != cli.ExitClean {
		t.Fatalf("pin --write: exit %d\n%s%s", code, out, errs)
	}
	if n := strings.Count(out, "→"); n != 8 {
		t.Errorf("--write listed %d changes, want 8:\n%s", n, out)
	}
	apps := readFile(t, filepath.Join(dir, "apps.yaml"))
	if want := fmt.Sprintf(`- {name: app, image: '%s/gc/app-b:v1@%s'}`, r.Host(), digests["app-b"]); !strings.Contains(apps, want) {
		t.Errorf("apps.yaml lacks %s:\n%s", want, apps)
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "jobs.yaml")), "multiarch:v1@"+digests["multiarch"]+" # linux/amd64 + linux/arm64") {
		t.Error("jobs.yaml: multiarch not pinned to its index digest, or its comment lost")
	}
	pinned := snapshot(t, dir)

	code, out, errs = runCLI(t, "pin", "--write", dir)
	if code != cli.ExitClean || out != "" {
		t.Fatalf("second --write: exit %d, stdout %q\n%s", code, out, errs)
	}
	if got := snapshot(t, dir); fmt.Sprint(got) != fmt.Sprint(pinned) {
		t.Fatal("second --write changed files")
	}
	if code, out, errs = runCLI(t, "pin", "--check", dir); code != cli.ExitClean || out != "" {
		t.Fatalf("--check after --write: exit %d\n%s%s", code, out, errs)
	}
}

// TestPinCheck: --check asks no registry, lists every unpinned reference
// with file:line in each format, and exits 1.
func TestPinCheck(t *testing.T) {
	dir := exampleManifests(t, "127.0.0.1:1") // nothing listens: --check must not ask
	apps := filepath.Join(dir, "apps.yaml")
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"text", []string{apps + ":16: unpinned: 127.0.0.1:1/gc/app-a:v1 is not pinned", apps + ":37: unpinned:"}},
		{"github", []string{"::warning file=" + apps + ",line=16,title=unpinned::127.0.0.1:1/gc/app-a:v1", "::warning file=" + apps + ",line=37,"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			code, out, errs := runCLI(t, "pin", "--check", "-o", tc.format, dir)
			if code != cli.ExitFindings {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
			}
			if n := strings.Count(out, "\n"); n != 8 {
				t.Errorf("%d lines, want 8:\n%s", n, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		code, out, _ := runCLI(t, "pin", "--check", "-o", "json", dir)
		var doc struct {
			Files    int
			Findings []struct {
				Kind, File, Ref string
				Line            int
			}
		}
		if code != cli.ExitFindings || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if doc.Files != 5 || len(doc.Findings) != 8 || doc.Findings[0].File != apps || doc.Findings[0].Line != 16 || doc.Findings[0].Kind != "unpinned" {
			t.Errorf("%+v", doc)
		}
	})
	t.Run("sarif", func(t *testing.T) {
		code, out, _ := runCLI(t, "pin", "--check", "-o", "sarif", dir)
		var doc struct {
			Version string
			Runs    []struct {
				Tool struct {
					Driver struct{ Rules []struct{ ID string } }
				}
				Results []struct {
					RuleID    string
					Level     string
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string }
							Region           struct{ StartLine int }
						}
					}
				}
			}
		}
		if code != cli.ExitFindings || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("exit %d\n%s", code, out)
		}
		run := doc.Runs[0]
		if doc.Version != "2.1.0" || len(run.Results) != 8 || len(run.Tool.Driver.Rules) == 0 {
			t.Fatalf("%s", out)
		}
		loc := run.Results[0].Locations[0].PhysicalLocation
		if run.Results[0].RuleID != "unpinned" || loc.ArtifactLocation.URI != filepath.ToSlash(apps) || loc.Region.StartLine != 16 {
			t.Errorf("first result %+v", run.Results[0])
		}
	})
}

// TestPinUpdateAndUntagged: after a tag moves, an existing pin is reported
// as exposed to GC (no tag points at it), and --update moves it, old → new.
func TestPinUpdateAndUntagged(t *testing.T) {
	r, _ := startRegistry(t, registry.V3)
	ref := r.Host() + "/moving/app:v1"
	old := pushSingle(t, ref, "first build")
	pushSingle(t, r.Host()+"/moving/app:other", "unrelated")
	dir := t.TempDir()
	p := writeFile(t, dir, "app.yaml", deployment("app", ref, ""))
	if code, out, errs := runCLI(t, "pin", "--write", dir); code != cli.ExitClean || !strings.Contains(readFile(t, p), ref+"@"+old) {
		t.Fatalf("pin --write: exit %d\n%s%s", code, out, errs)
	}

	// The tag still points at the pin: no warning, and no tags listed.
	code, out, errs := runCLI(t, "pin", dir)
	if code != cli.ExitClean || out != "" || strings.Contains(errs, "untagged") || strings.Contains(errs, "tags-list") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}

	moved := pushSingle(t, ref, "second build")
	code, out, errs = runCLI(t, "pin", dir)
	if code != cli.ExitClean || out != "" {
		t.Fatalf("after the tag moved: exit %d\n%s%s", code, out, errs)
	}
	if want := p + ":10: untagged-digest: no tag points at " + old; !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	if !strings.Contains(errs, "tags-list 1") {
		t.Errorf("tags not listed once:\n%s", errs)
	}

	code, out, errs = runCLI(t, "pin", "--update", dir)
	if code != cli.ExitClean {
		t.Fatalf("--update: exit %d\n%s%s", code, out, errs)
	}
	if want := fmt.Sprintf("%s:10: %s %s → %s", p, ref, old, moved); !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	if !strings.Contains(out, "-          image: "+ref+"@"+old) || !strings.Contains(out, "+          image: "+ref+"@"+moved) {
		t.Errorf("diff:\n%s", out)
	}
	if code, out, errs = runCLI(t, "pin", "--update", "--write", dir); code != cli.ExitClean || !strings.Contains(readFile(t, p), ref+"@"+moved) {
		t.Fatalf("--update --write: exit %d\n%s%s", code, out, errs)
	}
}

// TestPinPullPolicy: --pull-policy IfNotPresent rewrites Always on the
// containers pinned.
func TestPinPullPolicy(t *testing.T) {
	r, imgs := startRegistry(t, registry.V3)
	dir := exampleManifests(t, r.Host())
	code, out, errs := runCLI(t, "pin", "--write", "--pull-policy", "IfNotPresent", dir)
	if code != cli.ExitClean {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	got := readFile(t, filepath.Join(dir, "coturn.yaml"))
	want := fmt.Sprintf("image: \"%s/gc/single:v1@%s\"\n          imagePullPolicy: IfNotPresent\n", r.Host(), fixtureDigests(imgs)["single"])
	if !strings.Contains(got, want) {
		t.Errorf("coturn.yaml lacks %q:\n%s", want, got)
	}
	if !strings.Contains(out, "coturn.yaml:20: imagePullPolicy Always → IfNotPresent") {
		t.Errorf("changes:\n%s", out)
	}
}

// TestPinBrokenYAML: a file that does not parse is reported with
// file:line and left as is; the others are pinned; exit 3.
func TestPinBrokenYAML(t *testing.T) {
	r, _ := startRegistry(t, registry.V3)
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", deployment("good", r.Host()+"/gc/single:v1", ""))
	badText := "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - image: " + r.Host() + "/gc/single:v1\n   bad: [\n"
	bad := writeFile(t, dir, "bad.yaml", badText)
	code, out, errs := runCLI(t, "pin", "--write", dir)
	if code != cli.ExitIncomplete {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errs)
	}
	if !regexp.MustCompile(regexp.QuoteMeta(bad) + `:\d+: unparseable: skipped, left as is`).MatchString(errs) {
		t.Errorf("stderr:\n%s", errs)
	}
	if readFile(t, bad) != badText {
		t.Error("bad.yaml changed")
	}
	if !strings.Contains(readFile(t, good), "single:v1@sha256:") {
		t.Error("good.yaml not pinned")
	}
}

// TestPinRefusesBroken: after docker/distribution 2.8.3's GC, buildx:v1's
// platform child is gone: pin refuses it (the file stays byte-identical)
// unless --allow-broken.
func TestPinRefusesBroken(t *testing.T) {
	r, imgs := startRegistry(t, registry.V2)
	collect(t, r)
	dir := exampleManifests(t, r.Host())
	sig := filepath.Join(dir, "signaling.yaml")
	before := readFile(t, sig)
	code, out, errs := runCLI(t, "pin", "--write", dir)
	if code != cli.ExitFindings {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	if want := sig + ":19: broken: refusing to pin " + r.Host() + "/gc/buildx:v1 to " + fixtureDigests(imgs)["buildx"]; !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	if readFile(t, sig) != before {
		t.Error("signaling.yaml changed")
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "coturn.yaml")), "single:v1@sha256:") {
		t.Error("the intact single:v1 was not pinned")
	}
	if !regexp.MustCompile(`registry requests \(blob-head \d+, (manifest-get \d+, )?manifest-head \d+`).MatchString(errs) { // no GET when the manifests are cached
		t.Errorf("requests not reported:\n%s", errs)
	}

	code, out, errs = runCLI(t, "pin", "--write", "--allow-broken", dir)
	if code != cli.ExitClean {
		t.Fatalf("--allow-broken: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(readFile(t, sig), "buildx:v1@"+fixtureDigests(imgs)["buildx"]) {
		t.Error("--allow-broken did not pin buildx")
	}
}

// TestPinFromRecordsPlatformAndClusters: with a history recorded by a
// runtime that reports platform manifests (CRI-O), --from-records pins the
// index the tag points at, never the child; two clusters that ran different
// digests pin nothing until --records-cluster picks one.
func TestPinFromRecordsPlatformAndClusters(t *testing.T) {
	r, imgs := startRegistry(t, registry.V3)
	var multi fixture.Image
	for _, im := range imgs {
		if im.Name == "multiarch" {
			multi = im
		}
	}
	child := multi.Children[0].Digest.String()
	ref := r.Host() + "/gc/multiarch:v1"
	other := pushSingle(t, r.Host()+"/gc/multiarch:single", "another build")

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := record.NewHistory()
	entry := func(digest string) []recordresult.Entry {
		return []recordresult.Entry{{Namespace: "default", OwnerKind: "Deployment", OwnerName: "app", Pod: "app-1", Container: "app",
			Image: ref, Digest: digest}}
	}
	h.Merge(recordresult.Snapshot{Cluster: "crio", Time: at, Entries: entry(child)})
	h.Merge(recordresult.Snapshot{Cluster: "other", Time: at.Add(time.Hour), Entries: entry(other)})
	data, err := record.Encode(h, true)
	if err != nil {
		t.Fatal(err)
	}
	history := writeFile(t, t.TempDir(), "history.json", string(data))

	dir := t.TempDir()
	p := writeFile(t, dir, "app.yaml", deployment("app", ref, ""))
	code, out, errs := runCLI(t, "pin", "--write", "--from-records", history, dir)
	if code != cli.ExitIncomplete || readFile(t, p) != deployment("app", ref, "") {
		t.Fatalf("clusters disagree: exit %d, want 3 and the file as is\n%s%s", code, out, errs)
	}
	if want := p + ":10: ambiguous-record:"; !strings.Contains(errs, want) || !strings.Contains(errs, "crio runs "+child) || !strings.Contains(errs, "--records-cluster") {
		t.Errorf("stderr lacks %q naming both clusters and --records-cluster:\n%s", want, errs)
	}

	code, out, errs = runCLI(t, "pin", "--write", "--from-records", history, "--records-cluster", "crio", dir)
	if code != cli.ExitClean {
		t.Fatalf("--records-cluster crio: exit %d\n%s%s", code, out, errs)
	}
	if got, want := readFile(t, p), deployment("app", ref+"@"+multi.Digest.String(), ""); got != want {
		t.Errorf("pinned:\n%s\nwant the index digest:\n%s", got, want)
	}
}
