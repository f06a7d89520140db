//go:build integration

package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// chromiumBinary is Debian's chromium (.ci/run installs it). Without it the
// browser test is skipped on a developer's machine and fails in CI.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: .ci/run installs it (apt-get install -y chromium)")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium): the HTML report is not checked in a browser")
	return ""
}

// consoleLine is a message a page wrote to the console, or an uncaught
// exception, as chromium logs them with --enable-logging=stderr.
var consoleLine = regexp.MustCompile(`(?m)^.*:CONSOLE[:(].*$|^.*Uncaught .*$`)

// headless loads url in headless chromium with extra flags (--dump-dom,
// --screenshot=…) and returns what it wrote to stdout and the console
// messages of the page.
func headless(t *testing.T, browser, url string, flags ...string) (stdout string, console []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
		"--enable-logging=stderr", "--v=0", "--user-data-dir=" + t.TempDir()}, flags...)
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", browser, strings.Join(args, " "), err, errb.String())
	}
	return out.String(), consoleLine.FindAllString(errb.String(), -1)
}

// TestHTMLInChromium renders the HTML report of a real scan of a registry
// that docker/distribution 2.8.3's GC broke, loads it in headless
// chromium, and checks that its script ran without a console error, that
// the broken image is there with its missing child marked, that the filter
// in the address filters, and keeps a screenshot.
func TestHTMLInChromium(t *testing.T) {
	browser := chromiumBinary(t)
	r, imgs := startRegistry(t, registry.V2)
	collect(t, r)
	dir := exampleManifests(t, r.Host())

	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
		[]string{"scan", "-o", "html", "--no-cache", "--timeout", "10s", "-f", dir})
	if code != cli.ExitFindings {
		t.Fatalf("scan exit %d, want %d\n%s", code, cli.ExitFindings, errb.String())
	}
	artifacts, err := os.MkdirTemp(os.Getenv("REGCHECK_ARTIFACTS"), "regcheck-html-")
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(artifacts, "report.html")
	if err := os.WriteFile(page, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// The console check catches an error when there is one.
	control := filepath.Join(t.TempDir(), "control.html")
	if err := os.WriteFile(control, []byte(`<!DOCTYPE html><p>x</p><script>notDefined();</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, console := headless(t, browser, "file://"+control, "--dump-dom"); len(console) == 0 {
		t.Fatal("a page with an uncaught error logged nothing: the console check sees nothing")
	}

	dom, console := headless(t, browser, "file://"+page, "--dump-dom")
	if len(console) > 0 {
		t.Errorf("console messages loading the report:\n%s", strings.Join(console, "\n"))
	}
	var missingChild string
	for _, fx := range imgs {
		if fx.Name == "buildx" {
			for _, c := range fx.Children {
				if !c.Attestation {
					missingChild = c.Digest.String()
				}
			}
		}
	}
	for _, want := range []string{
		`<div class="controls" id="controls">`, // the script ran: it shows the controls
		"<h2>What to do</h2>",
		`<li class="t-broken"><span><span class="v v-broken">broken</span></span><b>4</b>`,
		"<h3>Namespace dam-prod</h3>",
		"<h4>Deployment signaling</h4>",
		`<span class="ref">` + r.Host() + `/gc/buildx:v1</span>`,
		`<span class="node gone"><span class="k">manifest</span> <span>linux/amd64</span> <code class="d" title="` + missingChild + `">`,
		`<span class="st st-missing">missing</span> <code>child-missing</code>`,
		`<details class="ok" id="ok">`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page's DOM lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	// The filter in the address hides what does not match and opens the
	// ok images that do.
	dom, console = headless(t, browser, "file://"+page+"#filter=single&sort=name", "--dump-dom")
	if len(console) > 0 {
		t.Errorf("console messages filtering the report:\n%s", strings.Join(console, "\n"))
	}
	hidden := regexp.MustCompile(`<article class="img i-(\w[\w-]*)" data-rank="\d" data-name="([^"]+)" data-search="[^"]*"( hidden="")?>`)
	shown := map[string]bool{}
	for _, m := range hidden.FindAllStringSubmatch(dom, -1) {
		shown[m[2]] = m[3] == ""
	}
	if !shown[r.Host()+"/gc/single:v1"] || shown[r.Host()+"/gc/buildx:v1"] || len(shown) != len(imgs) {
		t.Errorf("filtered on single: shown %v", shown)
	}
	if !strings.Contains(dom, `<details class="ok" id="ok" open="">`) || !strings.Contains(dom, `<section id="act" hidden="">`) {
		t.Error("filtered on an ok image: the ok images are not open, or the broken ones not hidden")
	}

	shot := filepath.Join(artifacts, "report.png")
	if _, console := headless(t, browser, "file://"+page, "--screenshot="+shot, "--window-size=1280,1800", "--hide-scrollbars"); len(console) > 0 {
		t.Errorf("console messages taking the screenshot:\n%s", strings.Join(console, "\n"))
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10<<10 {
		t.Fatalf("screenshot: %v (%v)", err, fi)
	}
	t.Logf("the report and its screenshot: %s, %s", page, shot)
}
