package watch

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/internal/testing/logbuf"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

func ctrl(kind, name string) []metav1.OwnerReference {
	t := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &t}}
}

func deployment(image string) (*appsv1.Deployment, *appsv1.ReplicaSet) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "app"}, Spec: appsv1.DeploymentSpec{Template: tmpl}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "app-1", OwnerReferences: ctrl("Deployment", "app")}, Spec: appsv1.ReplicaSetSpec{Template: tmpl}}
}

func pod(name, image, digest string, restarts int32, waiting string) *corev1.Pod {
	st := corev1.ContainerStatus{Name: "app", Image: image, ImageID: "reg.example/app@" + digest, RestartCount: restarts}
	if waiting != "" {
		st.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}
	} else {
		st.State.Running = &corev1.ContainerStateRunning{}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name, OwnerReferences: ctrl("ReplicaSet", "app-1"),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: image, Env: []corev1.EnvVar{{Name: "X", Value: "y"}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{st}}}
}

// countingStore counts the Updates of a store.
type countingStore struct {
	record.Store
	updates atomic.Int32
}

func (c *countingStore) Update(ctx context.Context, fn func(*record.History) error) (recordresult.UpdateResult, error) {
	c.updates.Add(1)
	return c.Store.Update(ctx, fn)
}

// start runs a watcher over c and st (its Config changed by each of
// opts) until the returned stop is called, which returns Run's error.
func start(t *testing.T, c *fake.Clientset, st record.Store, opts ...func(*Config)) (*Watcher, func() error) {
	t.Helper()
	cfg := Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond, Interval: -1}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitFor(t, "ready", w.Ready)
	return w, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return within 10s of its context ending")
			return nil
		}
	}
}

// runWatcher runs w until the test ends, and waits for Run to return then.
func runWatcher(t *testing.T, w *Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func load(t *testing.T, st record.Store) *record.History {
	t.Helper()
	h, err := st.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func transitionsTo(h *record.History, to string) []record.Transition {
	var out []record.Transition
	for _, tr := range h.Transitions {
		if tr.To == to {
			out = append(out, tr)
		}
	}
	return out
}

// The watcher records the first sighting, then an unplanned upgrade with
// its restart count and last termination, exports it, and flags the crash
// loop that follows; a restarted watcher reconciles what changed while it
// was down.
func TestWatcherRecordsTransitions(t *testing.T) {
	ctx := context.Background()
	d, rs := deployment("reg.example/app:latest")
	c := fake.NewClientset(d, rs, pod("app-1-x", "reg.example/app:latest", dA, 0, ""))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	logs := &logbuf.Buffer{}
	w, stop := start(t, c, st, func(cfg *Config) { cfg.Logger = slog.New(slog.NewTextHandler(logs, nil)) })

	waitFor(t, "the first sighting", func() bool { return len(transitionsTo(load(t, st), dA)) == 1 })
	first := transitionsTo(load(t, st), dA)[0]
	if !first.FirstSeen() || first.OwnerKind != "Deployment" || first.OwnerName != "app" || first.Container != "app" || !first.TemplateChanged {
		t.Errorf("first sighting %+v", first)
	}

	p := pod("app-1-x", "reg.example/app:latest", dB, 1, "CrashLoopBackOff")
	if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the transition", func() bool { return len(transitionsTo(load(t, st), dB)) == 1 })
	tr := transitionsTo(load(t, st), dB)[0]
	if tr.From != dA || tr.TemplateChanged || tr.RestartCount != 1 || tr.LastTerminationReason != "Error" || tr.LastExitCode == nil || *tr.LastExitCode != 1 ||
		tr.Image != "reg.example/app:latest" || tr.PreviousImage != "reg.example/app:latest" || tr.Pod != "app-1-x" || tr.Node != "n1" {
		t.Errorf("transition %+v", tr)
	}
	p = pod("app-1-x", "reg.example/app:latest", dB, 2, "CrashLoopBackOff")
	if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unplanned-upgrade series", func() bool {
		mfs, _ := w.Metrics().Gather()
		for _, mf := range mfs {
			if mf.GetName() == string(metrics.UnplannedUpgrade) && len(mf.Metric) == 1 {
				return true
			}
		}
		return false
	})
	var u Upgrade
	waitFor(t, "the crash loop", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		u = w.st.upgrades()[slot{"web", "Deployment", "app", "app", ""}]
		return u.CrashLoop
	})
	if !u.CrashLoop || !strings.Contains(upgradeMessage(u, "whole"), "the crash loop began with this image change") {
		t.Errorf("upgrade %+v: %s", u, upgradeMessage(u, "whole"))
	}
	// Said once in the log, where the alert sends people.
	if n := strings.Count(logs.String(), "the crash loop began with this image change"); n != 1 {
		t.Errorf("the crash loop logged %d times, want once:\n%s", n, logs)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// Changed while no watcher ran: the next one reconciles it at start.
	p = pod("app-1-x", "reg.example/app:latest", dC, 3, "")
	if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, stop = start(t, c, st)
	waitFor(t, "the reconciled transition", func() bool { return len(transitionsTo(load(t, st), dC)) == 1 })
	if tr := transitionsTo(load(t, st), dC)[0]; tr.From != dB {
		t.Errorf("reconciled %+v, want from %s", tr, dB)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h := load(t, st)
	if len(h.Transitions) != 3 {
		t.Errorf("history holds %d transitions, want 3: %+v", len(h.Transitions), h.Transitions)
	}
	if r, ok := h.Running(record.Query{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Container: "app"}); !ok || r.Digest != dC {
		t.Errorf("running record %+v, want %s", r, dC)
	}
}

// A change is written at once; the many that follow within one flush
// interval wait for the next write, here the one at stop: what is pending
// when Run's context ends is written before Run returns.
func TestWatcherBatchesAndFlushesOnStop(t *testing.T) {
	ctx := context.Background()
	d, rs := deployment("reg.example/app:latest")
	c := fake.NewClientset(d, rs)
	st := &countingStore{Store: &record.File{Path: filepath.Join(t.TempDir(), "history.json")}}
	w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: time.Hour, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	waitFor(t, "ready", w.Ready)
	create := func(name, digest string) {
		if _, err := c.CoreV1().Pods("web").Create(ctx, pod(name, "reg.example/app:latest", digest, 0, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("app-1-first", dA)
	waitFor(t, "the first write", func() bool { return st.updates.Load() == 1 })
	const pods = 49
	for i := range pods {
		create(fmt.Sprintf("app-1-%02d", i), dA)
	}
	create("app-1-other", dB) // a new pod pulling other bits
	waitFor(t, "the pods observed", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.batch.entries) == pods+1
	})
	if n := st.updates.Load(); n != 1 {
		t.Errorf("%d history writes within the flush interval, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := st.updates.Load(); n != 2 {
		t.Errorf("%d history writes, want 2 (the first change, then the flush at stop)", n)
	}
	h := load(t, st)
	if len(h.Records) != 2 || len(h.Transitions) != 2 {
		t.Errorf("history: %d records, %d transitions; want 2 and 2 (first seen, then a to b)", len(h.Records), len(h.Transitions))
	}
}

// The informer caches hold slim pods: no managed fields, no env.
func TestSlim(t *testing.T) {
	p := pod("x", "reg.example/app:latest", dA, 0, "")
	if _, err := slim(p); err != nil {
		t.Fatal(err)
	}
	if p.ManagedFields != nil || p.Spec.Containers[0].Env != nil || p.Spec.Containers[0].Image == "" || p.Status.ContainerStatuses[0].ImageID == "" {
		t.Errorf("slim pod %+v", p)
	}
}

// A pod of an Argo Rollout's ReplicaSet is the Rollout's, as record and
// List say: one history under Rollout/ro, whose next revision (another
// ReplicaSet) is a transition of the same slot, not a new one.
func TestWatcherRolloutOwner(t *testing.T) {
	ctx := context.Background()
	rs := func(name string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name, OwnerReferences: ctrl("Rollout", "ro")}}
	}
	p1 := pod("ro-6c9f8d7b5-x", "reg.example/app:latest", dA, 0, "")
	p1.OwnerReferences = ctrl("ReplicaSet", "ro-6c9f8d7b5")
	c := fake.NewClientset(rs("ro-6c9f8d7b5"), p1)
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	_, stop := start(t, c, st)
	defer stop()
	waitFor(t, "the first sighting", func() bool { return len(transitionsTo(load(t, st), dA)) == 1 })

	if _, err := c.AppsV1().ReplicaSets("web").Create(ctx, rs("ro-7d8e9f0a1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p2 := pod("ro-7d8e9f0a1-y", "reg.example/app:latest", dB, 0, "")
	p2.OwnerReferences = ctrl("ReplicaSet", "ro-7d8e9f0a1")
	if _, err := c.CoreV1().Pods("web").Create(ctx, p2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods("web").Delete(ctx, p1.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next revision", func() bool { return len(transitionsTo(load(t, st), dB)) == 1 })
	h := load(t, st)
	for _, tr := range h.Transitions {
		if tr.OwnerKind != "Rollout" || tr.OwnerName != "ro" {
			t.Errorf("transition under %s/%s, want Rollout/ro", tr.OwnerKind, tr.OwnerName)
		}
	}
	for _, r := range h.Records {
		if r.OwnerKind != "Rollout" || r.OwnerName != "ro" {
			t.Errorf("record under %s/%s, want Rollout/ro", r.OwnerKind, r.OwnerName)
		}
	}
	if tr := transitionsTo(h, dB)[0]; tr.From != dA {
		t.Errorf("the next revision's transition is from %q, want %s (one slot)", tr.From, dA)
	}
}

// With a history limit, a container that keeps changing keeps only its
// newest transitions and records in the history, its last one always.
func TestWatcherHistoryLimit(t *testing.T) {
	ctx := context.Background()
	d, rs := deployment("reg.example/app:latest")
	c := fake.NewClientset(d, rs, pod("app-1-x", "reg.example/app:latest", dA, 0, ""))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	_, stop := start(t, c, st, func(cfg *Config) { cfg.HistoryLimit = 2 })
	waitFor(t, "the first sighting", func() bool { return len(transitionsTo(load(t, st), dA)) == 1 })
	digests := []string{dB, dC, dA, dB}
	for i, dg := range digests {
		p := pod("app-1-x", "reg.example/app:latest", dg, int32(i+1), "")
		if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "transition "+dg, func() bool {
			h := load(t, st)
			return len(h.Transitions) > 0 && h.Transitions[len(h.Transitions)-1].To == dg && h.Transitions[len(h.Transitions)-1].RestartCount == int32(i+1)
		})
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h := load(t, st)
	q := record.Query{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Container: "app"}
	ts := h.TransitionsOf(q) // newest first
	if len(ts) != 2 || ts[0].From != dA || ts[0].To != dB || ts[1].From != dC || ts[1].To != dA {
		t.Errorf("transitions kept %+v, want the newest two (%s→%s, %s→%s)", ts, dA, dB, dC, dA)
	}
	if len(h.Records) > 2 {
		t.Errorf("%d records kept, want at most 2: %+v", len(h.Records), h.Records)
	}
	if r, ok := h.Running(q); !ok || r.Digest != dB {
		t.Errorf("running record %+v, want %s", r, dB)
	}
}
