//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

// Bounds of TestWatchConfigMapBesideRecord: each of its record loops
// stops after cmRecordRuns runs or cmLoopBudget, whichever comes first.
const (
	cmRecordLoops = 2
	cmRecordRuns  = 15
	cmLoopBudget  = 90 * time.Second
	cmFlush       = 300 * time.Millisecond // the watcher's --flush-interval: many writes to race
)

// recordRun is one `regcheck record -o json` run: the entries it saved.
type recordRun struct {
	Cluster string               `json:"cluster"`
	Time    time.Time            `json:"time"`
	Entries []recordresult.Entry `json:"entries"`
	Trimmed int                  `json:"trimmed"`
	stderr  string
}

// runRecord runs the real binary's `regcheck record` into the rig's
// ConfigMap cm (at most a minute) and returns what it saved.
func (r *watchRig) runRecord(t *testing.T, cm string) (recordRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, r.bin, "record", "-n", r.ns, "--kubeconfig", r.kc.Kubeconfig, "--configmap", r.ns+"/"+cm, "-o", "json")
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	run := recordRun{stderr: errb.String()}
	if err != nil {
		return run, fmt.Errorf("regcheck record: %v\n%s", err, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &run); err != nil {
		return run, fmt.Errorf("regcheck record -o json: %v\n%s", err, out.String())
	}
	return run, nil
}

// recordLoop runs `regcheck record` with a pause of 300–900ms between
// runs, at most runs times and until budget has passed, and sends each run
// (or its error) to out.
func (r *watchRig) recordLoop(t *testing.T, cm string, runs int, budget time.Duration, rng *rand.Rand, out chan<- recordRun, errs chan<- error) {
	begin := time.Now()
	for i := 0; i < runs && time.Since(begin) < budget; i++ {
		time.Sleep(time.Duration(300+rng.IntN(600)) * time.Millisecond)
		run, err := r.runRecord(t, cm)
		if err != nil {
			errs <- err
			return
		}
		out <- run
	}
}

// TestWatchConfigMapBesideRecord runs `regcheck watch --configmap` while
// statuses change every 200–500ms and two loops of `regcheck record
// --configmap` write the same ConfigMap: every state the API server showed
// while the watcher ran is a transition in the ConfigMap, every record a
// record run saved is there (its key, seen at least until that run), the
// watcher's writes never failed (conflicts retried), and every read of the
// ConfigMap parses.
func TestWatchConfigMapBesideRecord(t *testing.T) {
	r := newWatchRig(t)
	ch := &statusChanger{r: r, owners: []string{"api", "cart", "mail"}, digests: map[string][]string{}, current: map[string]int{}}
	for _, o := range ch.owners {
		for i := range 4 {
			ch.digests[o] = append(ch.digests[o], pushSingle(t, r.ref(o, "latest"), fmt.Sprintf("%s v%d", o, i)))
		}
		r.deploy(t, o, "latest", ch.digests[o][0])
		ch.current[o] = len(ch.states)
		ch.states = append(ch.states, podState{owner: o, digest: ch.digests[o][0], from: time.Now()})
	}
	const cm = "regcheck-history"
	src := configMapHistory(r.cs, r.ns, cm)
	// Nothing lost beside record's writes, not retention: every
	// transition is kept (--history-limit 0).
	w := r.startWatcher(t, []string{"--configmap", r.ns + "/" + cm}, "--flush-interval", cmFlush.String(), "--history-limit", "0")
	w.waitReady(t, time.Minute)
	readyAt := time.Now()

	stop := make(chan struct{})
	var bg sync.WaitGroup
	reads := 0
	bg.Add(2)
	go func() { defer bg.Done(); ch.run(t, stop, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))) }()
	go func() { defer bg.Done(); historyReader(t, src, stop, &reads) }()

	runs := make(chan recordRun, cmRecordLoops*cmRecordRuns)
	errs := make(chan error, cmRecordLoops)
	var loops sync.WaitGroup
	for i := range cmRecordLoops {
		loops.Add(1)
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
		go func() { defer loops.Done(); r.recordLoop(t, cm, cmRecordRuns, cmLoopBudget, rng, runs, errs) }()
	}
	loops.Wait()
	close(stop)
	bg.Wait()
	close(runs)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var saved []recordRun
	for run := range runs {
		saved = append(saved, run)
	}
	end := time.Now()
	if len(saved) < cmRecordLoops*2 {
		t.Fatalf("only %d record runs succeeded", len(saved))
	}

	// The last state of each owner reaches the ConfigMap; SIGTERM flushes.
	for _, o := range ch.owners {
		waitTransition(t, src, 30*time.Second, ch.states[ch.current[o]].matches)
	}
	all, _ := w.scrape(t)
	if v := metric(all, "regcheck_watch_write_errors_total", nil); v != 0 {
		t.Errorf("regcheck_watch_write_errors_total = %v, want 0 (conflicts are retried):\n%s", v, w.tail())
	}
	writes := metric(all, "regcheck_watch_writes_total", nil)
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
	h, err := src()
	if err != nil {
		t.Fatal(err)
	}
	shown := ch.shownDuring(readyAt, end)
	for _, s := range shown {
		if !slices.ContainsFunc(h.Transitions, s.matches) {
			t.Errorf("%s at %s after %d restarts, shown from %v to %v, is not in the ConfigMap", s.owner, short(s.digest), s.restarts,
				s.from.Format(time.StampMilli), s.to.Format(time.StampMilli))
		}
	}
	checked := 0
	for _, run := range saved {
		for _, e := range run.Entries {
			checked++
			if !slices.ContainsFunc(h.Records, func(rc record.Record) bool {
				return rc.Cluster == run.Cluster && rc.Namespace == e.Namespace && rc.OwnerKind == e.OwnerKind && rc.OwnerName == e.OwnerName &&
					rc.Container == e.Container && rc.Volume == e.Volume && rc.Digest == e.Digest &&
					!rc.FirstSeen.After(e.Time) && !rc.LastSeen.Before(e.Time)
			}) {
				t.Errorf("record run at %v saved %s/%s[%s] %s; the ConfigMap has no record of it seen then", run.Time.Format(time.StampMilli),
					e.OwnerKind, e.OwnerName, e.Container, short(e.Digest))
			}
		}
	}
	t.Logf("%d record runs (%d entries) beside %v watcher writes; %d states shown, %d status changes, %d reads of the ConfigMap; %d records, %d transitions in it",
		len(saved), checked, writes, len(shown), len(ch.states)-len(ch.owners), reads, len(h.Records), len(h.Transitions))
}

// Sizes of TestWatchConfigMapSplitsAtLimit: more pods than one ConfigMap
// holds (a record and a first sighting each, under a kilobyte together),
// then cmTrimChanges restarts onto the other digest.
const (
	cmTrimPods    = 1500
	cmTrimChanges = 100
)

// TestWatchConfigMapSplitsAtLimit: with more pods than one ConfigMap
// holds, the watcher's writes move the older part of the history to the
// archive ConfigMaps and trim nothing (regcheck_record_trimmed stays 0):
// every first sighting is in the head or an archive, every pod's newest
// record and every unplanned upgrade in the head; a record run beside it
// loses nothing either. Every ConfigMap stays under its 1 MiB limit.
func TestWatchConfigMapSplitsAtLimit(t *testing.T) {
	r := newWatchRig(t)
	bulk, err := kubernetes.NewForConfig(r.kc.BulkConfig())
	if err != nil {
		t.Fatal(err)
	}
	image := r.ref("bulk", "latest")
	digests := [2]string{pushSingle(t, image, "bulk a"), pushSingle(t, image, "bulk b")}
	pods := make([]*corev1.Pod, cmTrimPods)
	var first []podState
	for i := range pods {
		pods[i] = r.bulkPod(i, image, digests[i%2], 0)
		first = append(first, podState{owner: pods[i].Name, digest: digests[i%2]})
	}
	cctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	n, err := kubeapi.CreatePods(cctx, bulk, pods, 8)
	cancel()
	if n != len(pods) {
		t.Fatalf("created %d of %d pods: %v", n, len(pods), err)
	}
	const cm = "regcheck-history"
	src, head := splitConfigMapHistory(r.cs, r.ns, cm), configMapHistory(r.cs, r.ns, cm)
	w := r.startWatcher(t, []string{"--configmap", r.ns + "/" + cm}, "--flush-interval", "500ms")
	w.waitReady(t, 2*time.Minute)
	waitAll(t, src, first, time.Minute)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
	var changed []podState
	for _, i := range rng.Perm(cmTrimPods)[:cmTrimChanges] {
		p := r.bulkPod(i, image, digests[(i+1)%2], 1)
		if err := kubeapi.PatchStatus(t.Context(), bulk, r.ns, p.Name, p.Status); err != nil {
			t.Fatal(err)
		}
		changed = append(changed, podState{owner: p.Name, digest: digests[(i+1)%2], restarts: 1, from: time.Now()})
	}
	waitAll(t, head, changed, time.Minute) // unplanned upgrades: in the head
	h := waitAll(t, src, first, time.Second)
	all, _ := w.scrape(t)
	if v := metric(all, "regcheck_record_trimmed", nil); v != 0 {
		t.Errorf("regcheck_record_trimmed = %v, want 0 (the archives hold the rest)", v)
	}
	if v := metric(all, "regcheck_watch_write_errors_total", nil); v != 0 {
		t.Errorf("regcheck_watch_write_errors_total = %v, want 0:\n%s", v, w.tail())
	}
	arc, err := configMapHistory(r.cs, r.ns, record.ArchiveName(cm, 1))()
	if err != nil {
		t.Fatal(err)
	}
	if len(arc.Records)+len(arc.Transitions) == 0 {
		t.Errorf("archive %s is empty: the history never outgrew the head", record.ArchiveName(cm, 1))
	}
	hh, err := head()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if !slices.ContainsFunc(hh.Records, func(rc record.Record) bool { return rc.OwnerName == p.Name }) {
			t.Errorf("the head has no record of %s", p.Name)
		}
	}
	checkSizes(t, r.cs, r.ns, cm)
	t.Logf("%d pods: head %d bytes (%d records, %d transitions); archive 1 %d records, %d transitions",
		cmTrimPods, configMapBytes(t, r.cs, r.ns, cm), len(hh.Records), len(hh.Transitions), len(arc.Records), len(arc.Transitions))

	// A record run beside it splits the same way: nothing is lost.
	run, err := r.runRecord(t, cm)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // a watcher write or two after it
	after, err := src()
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range h.Transitions {
		if !slices.ContainsFunc(after.Transitions, func(o watchTransition) bool {
			return o.OwnerName == tr.OwnerName && o.From == tr.From && o.To == tr.To && o.Time.Equal(tr.Time)
		}) {
			t.Errorf("transition %s was lost after the record run", tr)
		}
	}
	if run.Trimmed != 0 {
		t.Errorf("the record run trimmed %d", run.Trimmed)
	}
	checkSizes(t, r.cs, r.ns, cm)
	t.Logf("record run (%d entries); the ConfigMaps then held %d records and %d transitions", len(run.Entries), len(after.Records), len(after.Transitions))
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
}

// bulkPod is bare pod i of the rig's namespace running image at digest
// after restarts restarts.
func (r *watchRig) bulkPod(i int, image, digest string, restarts int32) *corev1.Pod {
	name := fmt.Sprintf("b-%04d", i)
	st := restartedStatus("app", image, r.imageID("bulk", digest), restarts, "Error", 1)
	if restarts == 0 {
		st.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%10),
			Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullAlways}}},
		Status: st,
	}
}

// waitAll polls the history (at most timeout) until it holds a transition
// for every state of want, and returns it.
func waitAll(t *testing.T, src historySource, want []podState, timeout time.Duration) *watchHistory {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h, err := src()
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, s := range want {
			if !slices.ContainsFunc(h.Transitions, s.matches) {
				missing = append(missing, s.owner)
			}
		}
		if len(missing) == 0 {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d newest transitions are not in the history after %v (%d records, %d transitions in it): %s",
				len(missing), len(want), timeout, len(h.Records), len(h.Transitions), strings.Join(missing, " "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// configMapBytes is the size of the serialized history in the ConfigMap.
func configMapBytes(t *testing.T, cs kubernetes.Interface, ns, name string) int {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(cm.Data[record.ConfigMapKey])
}
