//go:build integration

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPinBack: a tag moved from A to B and a restart pulled B while the
// Deployment's image string stayed coturn:latest (the seeds' outage). The
// real watcher records it on the real apiserver and advises a command; that
// command, run as a user would (bash, the PATH placeholder filled in), pins
// the manifest to coturn:latest@A, a second run changes nothing, and once
// A's tree is broken in the registry the same command refuses to pin it.
func TestPinBack(t *testing.T) {
	r := newWatchRig(t)
	coturn := r.ref("coturn", "latest")
	a := pushSingle(t, coturn, "coturn 4.6")
	pod := r.deploy(t, "coturn", "latest", a)
	hist := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(hist)
	w := r.startWatcher(t, []string{"--out", hist}, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	waitTransition(t, src, 30*time.Second, firstSeen("coturn", a))
	b := pushSingle(t, coturn, "coturn 4.7") // the tag moved
	r.restart(t, pod, "coturn", coturn, b, 1, "Error", 1)
	up, _ := waitTransition(t, src, 30*time.Second, changed("coturn", a, b, 1))
	if up.TemplateChanged {
		t.Fatalf("the transition %v is not an unplanned upgrade", up)
	}
	command := adviceCommand(t, w, 60*time.Second)
	t.Logf("the advice: %s", command)
	if code, took := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM (%v):\n%s", code, took, w.tail())
	}

	dir := t.TempDir()
	manifest := filepath.Join(dir, "coturn.yaml")
	unpinned := coturnManifest(r.ns, coturn)
	write := func() {
		if err := os.WriteFile(manifest, []byte(unpinned), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(cmdline string) (int, string) {
		t.Helper()
		return runShell(t, r.bin, strings.Replace(cmdline, " --write PATH", " --write "+dir, 1)+" --insecure-registry "+r.reg.Host())
	}
	read := func() string {
		got, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}

	// Without --records-at, pin --from-records pins to what runs now: B.
	write()
	latest := regexp.MustCompile(` --records-at \S+`).ReplaceAllString(command, "")
	if code, out := run(latest); code != 0 || read() != coturnManifest(r.ns, coturn+"@"+b) {
		t.Fatalf("without --records-at: exit %d, manifest\n%s\nwant it pinned to B %s\n%s", code, read(), b, out)
	}

	// The advice pins back to A, and a second run changes nothing.
	write()
	if code, out := run(command); code != 0 || read() != coturnManifest(r.ns, coturn+"@"+a) {
		t.Fatalf("the advice: exit %d, manifest\n%s\nwant it pinned to A %s\n%s", code, read(), a, out)
	}
	pinned := read()
	if code, out := run(command); code != 0 || read() != pinned || !strings.Contains(out, "pinned 0 references") {
		t.Errorf("a second run: exit %d, changed %v\n%s", code, read() != pinned, out)
	}

	// A's tree is broken: the same command refuses it and leaves the file.
	removeBlobData(t, r.reg, layerOf(t, r.reg.Host()+"/watch/coturn@"+a))
	write()
	code, out := run(command)
	if code != 1 || read() != unpinned || !strings.Contains(out, "broken: refusing to pin "+coturn+" to "+a) {
		t.Errorf("A broken: exit %d (want 1), manifest changed %v\n%s", code, read() != unpinned, out)
	}
}

// adviceCommand waits for the watcher's unplanned-upgrade warning and
// returns the pin command its advice gives.
func adviceCommand(t *testing.T, w *watcher, timeout time.Duration) string {
	t.Helper()
	re := regexp.MustCompile(`regcheck pin .*? --write PATH`)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(w.log)
		for _, line := range strings.Split(string(data), "\n") {
			_, v, ok := strings.Cut(line, " advice=")
			if !ok || !strings.Contains(v, "--records-at") {
				continue
			}
			if q, err := strconv.QuotedPrefix(v); err == nil {
				v, _ = strconv.Unquote(q)
			}
			if m := re.FindString(v); m != "" {
				return m
			}
			t.Fatalf("the advice names no pin command: %s", v)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no unplanned-upgrade advice in the watcher's log after %v:\n%s", timeout, w.tail())
	return ""
}

// runShell runs cmdline with bash, regcheck being bin, with a cache and
// state of its own; it returns the exit code and stdout+stderr.
func runShell(t *testing.T, bin, cmdline string) (int, string) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("bash", "-c", "regcheck() { \"$REGCHECK\" \"$@\"; }; "+cmdline)
	cmd.Env = append(os.Environ(), "REGCHECK="+bin, "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_STATE_HOME="+filepath.Join(home, "state"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// coturnManifest is Deployment coturn as its repository holds it.
func coturnManifest(ns, image string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: coturn\n  namespace: " + ns + "\nspec:\n  template:\n    spec:\n      containers:\n        - name: coturn # the TURN server\n          image: " + image + "\n          imagePullPolicy: Always\n"
}

// layerOf is the first layer of the image at ref.
func layerOf(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil || len(ls) == 0 {
		t.Fatalf("layers of %s: %d, %v", ref, len(ls), err)
	}
	d, err := ls[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
