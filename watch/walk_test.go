package watch

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/logbuf"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// series returns the value of each series of family name, by the label
// values joined with commas, in the family's label order.
func series(t *testing.T, w *Watcher, name metrics.Name) map[string]float64 {
	t.Helper()
	mfs, err := w.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != string(name) {
			continue
		}
		for _, m := range mf.Metric {
			var vals []string
			for _, l := range m.Label {
				vals = append(vals, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(vals, ",")] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// A tag moves in a real (in-memory) registry and a restart pulls it: the
// walk after the new digest appears reports unplanned-upgrade on the image,
// naming the previous digest as still whole, and the availability series
// says the image pulls.
func TestWalkReportsUnplannedUpgrade(t *testing.T) {
	ctx := context.Background()
	host := memRegistry(t)
	image := host + "/voip/coturn:latest"
	d1, err := fixture.PushSingle(ctx, image, "coturn 4.6")
	if err != nil {
		t.Fatal(err)
	}
	d, rs := deployment(image)
	c := fake.NewClientset(d, rs, pod("app-1-x", image, d1, 0, ""))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	logs := &logbuf.Buffer{}
	w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond,
		Interval: time.Hour, Debounce: 50 * time.Millisecond, HistoryHint: "history.json", Logger: slog.New(slog.NewTextHandler(logs, nil)),
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(http.DefaultTransport)}})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	waitFor(t, "the first walk", func() bool { return len(series(t, w, metrics.ContainerImageAvailable)) == 1 })

	d2, err := fixture.PushSingle(ctx, image, "coturn 4.7")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, pod("app-1-x", image, d2, 1, "CrashLoopBackOff"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var finding *types.Finding
	waitFor(t, "the unplanned-upgrade finding", func() bool {
		w.walks.mu.Lock()
		defer w.walks.mu.Unlock()
		if w.walks.whole[strings.TrimSuffix(image, ":latest")+"@"+d1] == "" {
			return false
		}
		res := w.walks.result
		if res == nil {
			return false
		}
		w.mu.Lock()
		ups := w.st.upgrades()
		w.mu.Unlock()
		for _, im := range withUpgrades(res, ups, w.walks.whole, "history.json").Images {
			for i, f := range im.Findings {
				if f.Code == types.UnplannedUpgrade {
					finding = &im.Findings[i]
				}
			}
		}
		return finding != nil
	})
	for _, want := range []string{d1, "the previous digest is still whole in the registry"} {
		if !strings.Contains(finding.Message, want) {
			t.Errorf("finding %q does not say %q", finding.Message, want)
		}
	}
	if !strings.Contains(finding.Advice, "regcheck pin --from-records history.json") || !strings.Contains(finding.Advice, "@"+d1) {
		t.Errorf("advice %q does not name the pin back", finding.Advice)
	}
	waitFor(t, "the use-findings series of the upgrade", func() bool {
		for k := range series(t, w, metrics.UseFindings) {
			if strings.Contains(k, "code="+string(types.UnplannedUpgrade)) {
				return true
			}
		}
		return false
	})
	avail := series(t, w, metrics.ContainerImageAvailable)
	want := "container=app,image=" + image + ",namespace=web,owner_kind=Deployment,owner_name=app"
	if v, ok := avail[want]; !ok || v != 1 {
		t.Errorf("availability %v, want %s = 1", avail, want)
	}
	// Two more walks publish again: the upgrade was logged once, at its
	// transition, with its advice; the walk of everything sums them up.
	w.walks.once(ctx, false)
	w.walks.once(ctx, true)
	if n := strings.Count(logs.String(), "level=WARN msg=\"unplanned upgrade:"); n != 1 {
		t.Errorf("the upgrade logged %d times at WARN, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "regcheck pin --from-records history.json") {
		t.Errorf("the upgrade's log has no advice:\n%s", logs)
	}
	// The first walk found d1 whole: the transition's log says so (the
	// alert sends people to the log for it).
	if !strings.Contains(logs.String(), "previous_digest=whole") {
		t.Errorf("the upgrade's log does not say its previous digest is whole:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "msg=\"unplanned upgrades stand (see regcheck_unplanned_upgrade)\" count=1 owners=web/Deployment/app[app]") {
		t.Errorf("no summary of the upgrades that stand:\n%s", logs)
	}
}

// bare is a pod of no controller on image at digest.
func bare(name, image, digest string) *corev1.Pod {
	p := pod(name, image, digest, 0, "")
	p.OwnerReferences = nil
	return p
}

// seriesOfPods says which of pods have a series of family name (a bare
// pod is its own owner: owner_name is its name).
func seriesOfPods(t *testing.T, w *Watcher, name metrics.Name, pods ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for k := range series(t, w, name) {
		labels := strings.Split(k, ",")
		for _, p := range pods {
			// workload (use-findings) or owner_name (availability)
			if slices.Contains(labels, "workload="+p) || slices.Contains(labels, "owner_name="+p) {
				out[p] = true
			}
		}
	}
	return out
}

// Two bare pods run relay:latest at D1, the tag moves, a third pod starts
// on D2: the debounced walk of the new digest keeps the series of the two
// others (it walks every use of the image it touches), and all three have
// their availability and use-findings series.
func TestPartialWalkKeepsOtherUses(t *testing.T) {
	ctx := context.Background()
	host := memRegistry(t)
	image := host + "/edge/relay:latest"
	d1, err := fixture.PushSingle(ctx, image, "relay 1")
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientset(bare("relay-a", image, d1), bare("relay-b", image, d1))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond,
		Interval: time.Hour, Debounce: 50 * time.Millisecond,
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(http.DefaultTransport)}})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	all := []string{"relay-a", "relay-b", "relay-c"}
	waitFor(t, "the first walk", func() bool { return len(seriesOfPods(t, w, metrics.UseFindings, all...)) == 2 })

	d2, err := fixture.PushSingle(ctx, image, "relay 2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("web").Create(ctx, bare("relay-c", image, d2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the walk of the new digest", func() bool { return seriesOfPods(t, w, metrics.UseFindings, "relay-c")["relay-c"] })
	for _, fam := range []metrics.Name{metrics.UseFindings, metrics.ContainerImageAvailable} {
		if got := seriesOfPods(t, w, fam, all...); len(got) != 3 {
			t.Errorf("%s after the walk of the new digest: the series of %v, want all of %v", fam, got, all)
		}
	}

	// relay-a goes; the next walk (relay-d, on a new tag) drops its series
	// alone.
	if err := c.CoreV1().Pods("web").Delete(ctx, "relay-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	other := host + "/edge/relay:2"
	if _, err := fixture.PushSingle(ctx, other, "relay 2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("web").Create(ctx, bare("relay-d", other, d2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the walk of relay:2", func() bool { return seriesOfPods(t, w, metrics.UseFindings, "relay-d")["relay-d"] })
	for _, fam := range []metrics.Name{metrics.UseFindings, metrics.ContainerImageAvailable} {
		got := seriesOfPods(t, w, fam, "relay-a", "relay-b", "relay-c", "relay-d")
		if got["relay-a"] || !got["relay-b"] || !got["relay-c"] || !got["relay-d"] {
			t.Errorf("%s after relay-a went: the series of %v, want relay-b, relay-c and relay-d", fam, got)
		}
	}
}

// A walk that fails (here its context ended) puts the references it took
// back: they are walked again, not dropped.
func TestFailedWalkPutsWorkBack(t *testing.T) {
	c := fake.NewClientset(bare("relay-a", "reg.example/edge/relay:latest", dA))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond,
		Interval: time.Hour, Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	waitFor(t, "ready", w.Ready)
	w.walks.mu.Lock()
	before := len(w.walks.fresh)
	w.walks.mu.Unlock()
	if before != 2 {
		t.Fatalf("%d references wait for a walk, want 2 (the tag and the running digest)", before)
	}
	ended, stop := context.WithCancel(context.Background())
	stop()
	w.walks.once(ended, false)
	w.walks.mu.Lock()
	defer w.walks.mu.Unlock()
	if len(w.walks.fresh) != 2 || len(w.walks.walked) != 0 {
		t.Errorf("after a failed walk %d references wait and %d are walked, want 2 and 0", len(w.walks.fresh), len(w.walks.walked))
	}
}

// Two image volumes of one pod on one image each have their series, named
// by their volume, in every family the walk exports: none collides on
// container="".
func TestImageVolumesNamedInSeries(t *testing.T) {
	ctx := context.Background()
	host := memRegistry(t)
	app, models := host+"/ml/app:1", host+"/ml/models:1"
	for _, ref := range []string{app, models} {
		if _, err := fixture.PushSingle(ctx, ref, ref); err != nil {
			t.Fatal(err)
		}
	}
	p := bare("infer", app, dA)
	for _, v := range []string{"weights", "tokenizer"} {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v,
			VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: models}}})
	}
	c := fake.NewClientset(p)
	w, err := New(Config{Client: c, Cluster: "prod", Store: &record.File{Path: filepath.Join(t.TempDir(), "history.json")},
		FlushInterval: 20 * time.Millisecond, Interval: time.Hour, Debounce: 50 * time.Millisecond,
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(http.DefaultTransport)}})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	waitFor(t, "the walk", func() bool { return len(series(t, w, metrics.ContainerImageAvailable)) > 0 })
	for _, fam := range []metrics.Name{metrics.ContainerImageAvailable, metrics.UseFindings} {
		names := map[string]bool{}
		for k := range series(t, w, fam) {
			if !strings.Contains(k, "image="+models) {
				continue
			}
			for _, l := range strings.Split(k, ",") {
				if name, ok := strings.CutPrefix(l, "container="); ok {
					names[name] = true
				}
			}
		}
		if len(names) != 2 || !names["weights"] || !names["tokenizer"] {
			t.Errorf("%s: the image volumes' series are named %v, want weights and tokenizer", fam, names)
		}
	}
}

// memRegistry starts go-containerregistry's in-memory registry on
// loopback for the test and returns its host.
func memRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestMergePartialWalk: a walk of new references replaces, in the last
// whole walk's answer, each image it walked again (one entry a reference,
// its new verdict), adds the images it walked first, and keeps the others;
// a walk of everything replaces the answer.
func TestMergePartialWalk(t *testing.T) {
	image := func(ref string, v types.Verdict) *types.Image { return &types.Image{Reference: ref, Verdict: v} }
	for _, tc := range []struct {
		name    string
		partial []*types.Image
		all     bool
		want    string // reference=verdict, in order
		counts  map[types.Verdict]int
	}{
		{"a broken image walked again, now whole, and a new one", []*types.Image{image("reg/a:1", types.OK), image("reg/c:1", types.OK)}, false,
			"reg/a:1=ok reg/b:1=ok reg/c:1=ok", map[types.Verdict]int{types.OK: 3}},
		{"a new image only", []*types.Image{image("reg/c:1", types.AtRisk)}, false,
			"reg/a:1=broken reg/b:1=ok reg/c:1=at-risk", map[types.Verdict]int{types.Broken: 1, types.OK: 1, types.AtRisk: 1}},
		{"a walk of everything", []*types.Image{image("reg/c:1", types.OK)}, true,
			"reg/c:1=ok", map[types.Verdict]int{types.OK: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newWalker(nil)
			k.merge(&types.Result{Images: []*types.Image{image("reg/a:1", types.Broken), image("reg/b:1", types.OK)}}, true, &inventory.Inventory{})
			k.merge(&types.Result{Images: tc.partial}, tc.all, &inventory.Inventory{})
			var got []string
			for _, im := range k.result.Images {
				got = append(got, im.Reference+"="+string(im.Verdict))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("merged %q, want %q", got, tc.want)
			}
			counts := k.result.Count()
			maps.DeleteFunc(counts, func(_ types.Verdict, n int) bool { return n == 0 })
			if !maps.Equal(counts, tc.counts) {
				t.Errorf("images by verdict %v, want %v", counts, tc.counts)
			}
		})
	}
}

// A previous digest found whole is not walked again before the next
// periodic walk: status changes back and forth between two digests ask
// the registry nothing more. One not whole, or unknown, is asked again.
func TestPreviousWalkedWholeOncePerPeriod(t *testing.T) {
	t.Parallel()
	tr := record.Transition{Image: "registry.example/app:latest", From: dA, To: dB}
	ref := imageref.RunningOf(tr.Image, tr.From)
	for _, tc := range []struct {
		name    string
		found   string
		nextGen bool
		walked  bool
	}{
		{"never walked", "", false, true},
		{"whole in this period", "whole", false, false},
		{"whole in the last period", "whole", true, true},
		{"not whole", "not whole", false, true},
		{"unknown: a fault to retry", "unknown", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newWalker(nil)
			if tc.found != "" {
				k.whole[ref], k.wholeIn[ref] = tc.found, k.gen
			}
			if tc.nextGen {
				k.take(true)
			}
			k.previous(tr)
			if _, ok := k.prevs[ref]; ok != tc.walked {
				t.Errorf("walk asked %v, want %v", ok, tc.walked)
			}
		})
	}
}

// The admission check (Config.Admission) applies to each walk's result,
// with the walk's Scanner: what it finds is in the series, as in scan
// --cluster's; one that fails fails the walk, whose references are then
// walked again. The policies are read at the periodic walk (here the
// first, and its retry) and not again by the walk of a new reference.
func TestWalkAppliesAdmission(t *testing.T) {
	ctx := context.Background()
	host := memRegistry(t)
	image := host + "/shop/web:1"
	d1, err := fixture.PushSingle(ctx, image, "web 1")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	admit := func(_ context.Context, s *scan.Scanner, res *types.Result) error {
		if s == nil {
			t.Error("no scanner given to the admission check")
		}
		if calls.Add(1) == 1 {
			return errors.New("policies unreadable")
		}
		for _, im := range res.Images {
			im.Findings = append(im.Findings, types.NewFinding(types.SignatureMissing, "", "", "no signature"))
			im.UpdateVerdict()
		}
		return nil
	}
	c := fake.NewClientset(bare("web", image, d1))
	logs := &logbuf.Buffer{}
	var reads atomic.Int32
	w, err := New(Config{Client: c, Cluster: "prod", Store: &record.File{Path: filepath.Join(t.TempDir(), "history.json")},
		FlushInterval: 20 * time.Millisecond, Interval: time.Hour, Debounce: 50 * time.Millisecond,
		Admission: func(context.Context) (cluster.Then, []types.InputError, error) {
			reads.Add(1)
			return admit, nil, nil
		},
		Logger:      slog.New(slog.NewTextHandler(logs, nil)),
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(http.DefaultTransport)}})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	waitFor(t, "the admission finding in the series", func() bool {
		for k := range series(t, w, metrics.UseFindings) {
			if strings.Contains(k, "code="+string(types.SignatureMissing)) {
				return true
			}
		}
		return false
	})
	if !strings.Contains(logs.String(), "applying the image policies: policies unreadable") {
		t.Errorf("the failed admission check is not logged:\n%s", logs.String())
	}

	before := reads.Load()
	api := host + "/shop/api:1"
	d2, err := fixture.PushSingle(ctx, api, "api 1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("web").Create(ctx, bare("api", api, d2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new image's admission finding", func() bool {
		for k := range series(t, w, metrics.UseFindings) {
			if strings.Contains(k, "shop/api") && strings.Contains(k, "code="+string(types.SignatureMissing)) {
				return true
			}
		}
		return false
	})
	if n := reads.Load(); n != before {
		t.Errorf("the walk of a new reference read the policies again (%d reads, %d before it)", n, before)
	}
}

// With PullSecrets the walk reads each pod's pull secrets, as scan
// --cluster --pull-secrets does: a pod whose secret is gone has its image
// unknown, credentials-error in its series, and no availability series.
func TestWalkWithPullSecrets(t *testing.T) {
	ctx := context.Background()
	host := memRegistry(t)
	image := host + "/shop/web:1"
	d1, err := fixture.PushSingle(ctx, image, "web 1")
	if err != nil {
		t.Fatal(err)
	}
	p := bare("web", image, d1)
	p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "gone"}}
	w, err := New(Config{Client: fake.NewClientset(p), Cluster: "prod", Store: &record.File{Path: filepath.Join(t.TempDir(), "history.json")},
		FlushInterval: 20 * time.Millisecond, Interval: time.Hour, Debounce: 50 * time.Millisecond, PullSecrets: true,
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(http.DefaultTransport)}})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	waitFor(t, "credentials-error in the series", func() bool {
		for k := range series(t, w, metrics.UseFindings) {
			if strings.Contains(k, "code="+string(types.CredentialsError)) {
				return true
			}
		}
		return false
	})
	if a := series(t, w, metrics.ContainerImageAvailable); len(a) != 0 {
		t.Errorf("availability series of an unknown image: %v", a)
	}
}

// The deep walk walks every running digest; the watcher keeps how whole
// each was, so that a container moving off one asks no walk of it before
// the next periodic walk (during churn between digests in use, the
// registry is asked nothing).
func TestDeepWalkKnowsRunningDigestsWhole(t *testing.T) {
	ctx := context.Background()
	host := memRegistry(t)
	image := host + "/voip/coturn:latest"
	d1, err := fixture.PushSingle(ctx, image, "coturn 4.6")
	if err != nil {
		t.Fatal(err)
	}
	d, rs := deployment(image)
	c := fake.NewClientset(d, rs, pod("app-1-x", image, d1, 0, ""))
	w, err := New(Config{Client: c, Cluster: "prod", Store: &record.File{Path: filepath.Join(t.TempDir(), "history.json")},
		FlushInterval: 20 * time.Millisecond, Interval: time.Hour, Debounce: 50 * time.Millisecond,
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(http.DefaultTransport)}})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	waitFor(t, "the first walk", func() bool { return len(series(t, w, metrics.ContainerImageAvailable)) == 1 })

	ref := imageref.RunningOf(image, d1)
	k := w.walks
	k.mu.Lock()
	found, in, gen := k.whole[ref], k.wholeIn[ref], k.gen
	k.mu.Unlock()
	if found != "whole" || in != gen {
		t.Fatalf("after the deep walk, %s is %q in period %d (now %d), want whole in this period", ref, found, in, gen)
	}
	k.previous(record.Transition{Image: image, From: d1, To: dB})
	k.mu.Lock()
	_, asked := k.prevs[ref]
	k.mu.Unlock()
	if asked {
		t.Errorf("a move off %s asks a walk of it again", ref)
	}
}
