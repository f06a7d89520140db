//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/metrics"
)

// TestWatchMirrorSets: regcheck watch walks through the OpenShift mirror
// sets as scan --cluster does, read again before each walk. The source is
// the 2.8.3 registry after its GC, which lost the image a workload pinned;
// the 3.1.2 mirror still holds it. Before the kinds are served (no CRDs)
// the watcher says so once however many walks follow, and the pin is
// broken; once the schemaless CRDs, the cluster's insecure registries and
// an IDMS naming the mirror exist, the next walk finds the pin through the
// mirror (at-risk) without a restart, and says once that it walks through
// the mirror sets.
func TestWatchMirrorSets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx)
	src := startEmpty(t, registry.V2)
	mirror := startEmpty(t, registry.V3)
	old := pushSingle(t, src.Host()+"/team/app:v1", "app v1, first build")
	if d := pushSingle(t, mirror.Host()+"/team/app:v1", "app v1, first build"); d != old {
		t.Fatalf("the mirror's copy is %s, the source's %s", d, old)
	}
	pushSingle(t, src.Host()+"/team/app:v1", "app v1, rebuilt")
	collect(t, src)
	if serves(t, src.Host(), "team/app", old) {
		t.Fatal("the source still serves the old image after its GC")
	}
	pinned := src.Host() + "/team/app@" + old
	rig := &watchRig{kc: kc, cs: cs, reg: mirror, bin: watchBinary(t), ns: "shop"}
	namespaceWithSA(t, ctx, cs, rig.ns)
	workload(t, ctx, cs, rig.ns, "pinned", pinned, "IfNotPresent", "node-a", pinned)

	w := rig.startWatcher(t, []string{"--out", filepath.Join(t.TempDir(), "history.json")},
		"--insecure-registry", src.Host(), "--interval", "1s", "--walk-debounce", "100ms")
	w.waitReady(t, time.Minute)
	verdict := func(v string) func() bool {
		return func() bool {
			all, _ := w.scrape(t)
			return metric(all, string(metrics.ImageVerdict), map[string]string{"reference": pinned, "verdict": v}) == 1
		}
	}
	waitWatch(t, w, "the pin broken without mirror sets", verdict("broken"))
	twoMoreWalks(t, w)
	if n := logLines(t, w, "mirror set kinds not served"); n != 1 {
		t.Errorf("%q said %d times over several walks, want once:\n%s", "mirror set kinds not served", n, w.tail())
	}

	if err := kubeapi.ApplyCRDs(ctx, kc.Config, filepath.Join("testdata", "openshift", "crds.yaml")); err != nil {
		t.Fatal(err)
	}
	dyn := dynamicFor(t, kc.Config)
	createObject(t, ctx, dyn, schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "images"}, "Image", "cluster",
		map[string]any{"registrySources": map[string]any{"insecureRegistries": []any{src.Host(), mirror.Host()}}})
	createObject(t, ctx, dyn, idmsResource, "ImageDigestMirrorSet", "team",
		map[string]any{"imageDigestMirrors": []any{map[string]any{"source": src.Host() + "/team", "mirrors": []any{mirror.Host() + "/team"}}}})

	waitWatch(t, w, "the pin found through the IDMS mirror", verdict("at-risk"))
	twoMoreWalks(t, w)
	if n := logLines(t, w, "walking as CRI-O through the cluster's mirror sets"); n != 1 {
		t.Errorf("walking through the mirror sets said %d times, want once:\n%s", n, w.tail())
	}
}

// waitWatch polls ok for a minute, failing with the watcher's log.
func waitWatch(t *testing.T, w *watcher, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if w.exited() || time.Now().After(deadline) {
			t.Fatalf("waiting for %s: exited %t\n%s", what, w.exited(), w.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logLines counts the watcher's log lines that hold s.
func logLines(t *testing.T, w *watcher, s string) int {
	t.Helper()
	b, err := os.ReadFile(w.log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), s)
}

// twoMoreWalks waits for two more deep walks: the start time the scan
// timestamp series gives moving on twice.
func twoMoreWalks(t *testing.T, w *watcher) {
	t.Helper()
	started := func() float64 {
		all, _ := w.scrape(t)
		return metric(all, string(metrics.ScanTimestamp), map[string]string{})
	}
	for range 2 {
		last := started()
		waitWatch(t, w, "another walk", func() bool { return started() > last })
	}
}
