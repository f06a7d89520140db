//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
)

// Sizes and bounds of BenchmarkWatch (issue 18, point 6).
const (
	watchBenchPods    = 10000
	watchBenchRepos   = 50 // each with two digests under :latest
	watchBenchRate    = 200
	watchBenchWindow  = 60 * time.Second
	watchBenchCreate  = 10 * time.Minute // creation stops there; the bench goes on with what exists
	watchBenchDrain   = time.Minute      // after the window, for the last changes to reach the history
	watchBenchWorkers = 16
	watchBenchNS      = "bench"
	// watchBenchInterval is the watchers' --interval: the periodic deep walk
	// comes once in the bench, after the minute of changes, to be counted.
	watchBenchInterval = 150 * time.Second
	// watchBenchQuiet is the quiet interval after the periodic walk: no
	// change, no walk due; what the watcher asks the registry then.
	watchBenchQuiet = 30 * time.Second
)

// watchBenchChange is one status change: the pod restarted onto digest.
type watchBenchChange struct {
	pod      int
	restarts int32
	shown    time.Time // the API server answered the patch
}

// BenchmarkWatch runs `regcheck watch` (the built binary) over 10,000 pods
// on a real kube-apiserver, 50 images in distribution 3.1.2 behind them
// (two digests each, both in use from the start), while 200 container
// statuses a second change for a minute (each a restart onto the image's
// other digest), and reports: the lag from a status update to its
// transition in the history file (p50, p99, max), the watcher's peak RSS
// (VmHWM, read after the periodic walk) and its live heap after a forced
// GC then (--debug-pprof; $WATCH_BENCH_HEAP_PROFILE names a file for the
// heap profile), the API requests it made by verb (informers: LIST and
// WATCH, no per-pod GET), and the registry requests it made: its first
// deep walk, the minute of changes, one periodic deep walk (--interval
// 150s here) and a quiet interval after it, which give the requests an
// hour of churn and a quiet hour at the default --interval 1h. Nothing is
// asserted on time. The scenario runs once whatever b.N; run it with
// -benchtime 1x. $WATCH_BENCH_FLAGS adds flags to the watcher's (say
// --flush-interval 1s), to weigh a default; $WATCH_BENCH_SCRAPE (say 15s)
// scrapes /metrics that often during the changes, as Prometheus would.
func BenchmarkWatch(b *testing.B) {
	ctx := context.Background()
	bin := watchBinary(b)
	kc, err := kubeapi.Start(ctx, b.TempDir(), kubeapi.DefaultBinDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(kc.Stop)
	cs, err := kubernetes.NewForConfig(kc.BulkConfig())
	if err != nil {
		b.Fatal(err)
	}
	reg, alog := startAccessLogged(b)
	host := reg.Host()
	digests := watchBenchImages(b, host)
	if err := createNamespace(ctx, cs, watchBenchNS); err != nil {
		b.Fatal(err)
	}
	pods := watchBenchPodList(host, digests)
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, watchBenchCreate)
	n, err := kubeapi.CreatePods(cctx, cs, pods, watchBenchWorkers)
	cancel()
	created := time.Since(start)
	b.Logf("created %d pods with their status in %v (%.0f pods/s)", n, created.Round(time.Second), float64(n)/created.Seconds())
	if n == 0 {
		b.Fatal(err)
	}
	pods = pods[:n]
	b.ReportMetric(created.Seconds(), "create-s")

	rig := &watchRig{kc: kc, cs: cs, reg: reg, bin: bin, ns: watchBenchNS}
	out := filepath.Join(b.TempDir(), "history.json")
	before, err := apiRequests(ctx, cs)
	if err != nil {
		b.Fatal(err)
	}
	if err := alog.mark(); err != nil {
		b.Fatal(err)
	}
	flags := append([]string{"--interval", watchBenchInterval.String(), "--debug-pprof"}, strings.Fields(os.Getenv("WATCH_BENCH_FLAGS"))...)
	addr := "127.0.0.1:" + strconv.Itoa(freeLoopbackPort(b))
	w := startWatchProcess(b, rig.bin, addr, append(rig.watchArgs(addr, "--out", out), flags...), watcherGODEBUG()...)
	started := time.Now()
	ready := w.waitReady(b, 5*time.Minute)
	seen := newHistoryPoller(out)
	stopPoll := seen.run()
	defer stopPoll()
	seen.waitFirstSeen(b, len(pods), 5*time.Minute)
	synced := time.Since(started)
	b.Logf("watcher ready %v after start; every pod's digest in the history %v after start", ready.Round(time.Millisecond), synced.Round(time.Millisecond))
	stopWalkHeap := walkHeap(b, w)
	waitFirstWalk(b, w, alog, 5*time.Minute)
	stopWalkHeap()
	walked := time.Since(started)
	b.Logf("first deep walk published %v after start", walked.Round(time.Millisecond))
	b.ReportMetric(walked.Seconds(), "first-walk-s")
	walk, err := alog.since()
	if err != nil {
		b.Fatal(err)
	}
	if err := alog.mark(); err != nil {
		b.Fatal(err)
	}

	cpuBefore := cpuTime(b, w.cmd.Process.Pid)
	profiled := cpuProfile(b, w, watchBenchWindow/2)
	stopScrapes := scrapeEvery(b, w)
	changes, took := watchBenchChanges(b, cs, pods, host, digests)
	stopScrapes()
	profiled()
	churnCPU := cpuTime(b, w.cmd.Process.Pid) - cpuBefore
	lags, missing := seen.lags(b, changes, watchBenchDrain)
	seen.mu.Lock()
	b.Logf("history files read %d, missed %d (a missed file's transitions are stamped with a later file's time)", seen.files, seen.missed)
	b.ReportMetric(float64(seen.missed), "history-files-missed")
	seen.mu.Unlock()
	steady, err := alog.since()
	if err != nil {
		b.Fatal(err)
	}
	if err := alog.mark(); err != nil {
		b.Fatal(err)
	}
	// Each unplanned transition asks for a walk of its previous digest,
	// debounced: it comes once the changes stop, before the periodic walk.
	due := started.Add(watchBenchInterval)
	time.Sleep(time.Until(due.Add(-2 * time.Second)))
	prevWalk, err := alog.since()
	if err != nil {
		b.Fatal(err)
	}
	if err := alog.mark(); err != nil {
		b.Fatal(err)
	}
	rewalk := waitRewalk(b, alog, due)
	if b.Failed() {
		w.diagnose(b)
	}
	// A quiet interval: no status changes, no walk due.
	if err := alog.mark(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(watchBenchQuiet)
	quiet, err := alog.since()
	if err != nil {
		b.Fatal(err)
	}
	var historySize int64
	if fi, err := os.Stat(out); err == nil {
		historySize = fi.Size()
	}
	rss := vmHWM(b, w.cmd.Process.Pid)
	rssAnon, rssFile := procStatus(b, w.cmd.Process.Pid, "RssAnon"), procStatus(b, w.cmd.Process.Pid, "RssFile")
	saveSmaps(b, w.cmd.Process.Pid)
	defer saveLog(b, w)
	live := liveHeap(b, w)
	families, scrape := scrapeFamilies(b, w)
	if code, took := w.stop(b, syscall.SIGTERM, 30*time.Second); code != 0 {
		b.Errorf("exit %d after SIGTERM (%v):\n%s", code, took, w.tail())
	}
	after, err := apiRequests(ctx, cs)
	if err != nil {
		b.Fatal(err)
	}
	reportWatchBench(b, watchBenchFigures{
		changes: len(changes), rate: float64(len(changes)) / took.Seconds(), lags: lags, missing: missing, rss: rss, live: live, quiet: quiet,
		ready: ready, synced: synced, walk: walk, prevWalk: prevWalk, rewalk: rewalk, steady: steady, historySize: historySize, window: took,
		api: diffRequests(before, after), families: families, scrape: scrape, churnCPU: churnCPU, rssAnon: rssAnon, rssFile: rssFile,
	})
	if walk.Total()+steady.Total()+prevWalk.Total()+rewalk.Total() == 0 {
		b.Logf("the watcher sent the registry nothing; its log ends:\n%s", w.tail())
	}
}

// waitFirstWalk waits (at most timeout) until the watcher publishes
// availability series, its first deep walk done, and the registry's access
// log has settled.
func waitFirstWalk(b *testing.B, w *watcher, alog *accessLog, timeout time.Duration) {
	start := time.Now()
	for watcherFamilies(b, w)["regcheck_container_image_available"] == 0 {
		if time.Since(start) > timeout {
			b.Fatalf("no regcheck_container_image_available series %v after start; the log ends:\n%s", timeout, w.tail())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := alog.settled(); err != nil {
		b.Fatal(err)
	}
}

// waitRewalk waits until the periodic deep walk, due at due, has ended
// (requests logged since mark, and no more for a few seconds; at most 3
// minutes past due) and returns how many requests it sent.
func waitRewalk(b *testing.B, alog *accessLog, due time.Time) requestCounts {
	time.Sleep(time.Until(due))
	prev, still := -1, 0
	var c requestCounts
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var err error
		if c, err = alog.since(); err != nil {
			b.Fatal(err)
		}
		n := c.Total()
		if n > 0 && n == prev {
			if still++; still >= 3 {
				return c
			}
		} else {
			still = 0
		}
		prev = n
	}
	b.Errorf("the periodic deep walk due at %v did not end within 3 minutes (%d requests so far)", due.Format(time.TimeOnly), prev)
	return c
}

// liveHeap is the watcher's heap after a forced GC (HeapAlloc of the
// heap profile's MemStats, /debug/pprof/heap?gc=1); the profile itself is
// saved to $WATCH_BENCH_HEAP_PROFILE when set, for go tool pprof.
// cpuProfile, when $WATCH_BENCH_CPU_PROFILE names a file, starts taking
// the watcher's CPU profile for d (from --debug-pprof) and returns what
// waits for it and writes it there; else it does nothing.
func cpuProfile(b *testing.B, w *watcher, d time.Duration) (wait func()) {
	path := os.Getenv("WATCH_BENCH_CPU_PROFILE")
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hc := http.Client{Timeout: d + 30*time.Second}
		resp, err := hc.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", w.addr, int(d.Seconds())))
		if err != nil {
			b.Errorf("GET /debug/pprof/profile: %v", err)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			b.Errorf("GET /debug/pprof/profile: %d %v", resp.StatusCode, err)
			return
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			b.Error(err)
		}
	}()
	return func() { <-done }
}

func liveHeap(b *testing.B, w *watcher) int64 {
	if path := os.Getenv("WATCH_BENCH_HEAP_PROFILE"); path != "" {
		code, body, err := w.get("/debug/pprof/heap?gc=1")
		if err != nil || code != 200 {
			b.Fatalf("GET /debug/pprof/heap: %d %v", code, err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	code, body, err := w.get("/debug/pprof/heap?gc=1&debug=1")
	if err != nil || code != 200 {
		b.Fatalf("GET /debug/pprof/heap?debug=1: %d %v", code, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no HeapAlloc in the heap profile")
	return 0
}

// diagnose keeps what shows why a watcher stopped answering: its
// goroutines (from /debug/pprof, else SIGQUIT's dump into its log) and its
// log, copied out of the benchmark's folders, which are removed.
func (w *watcher) diagnose(b *testing.B) {
	dir, err := os.MkdirTemp("", "regcheck-watch-diag-")
	if err != nil {
		b.Log(err)
		return
	}
	hc := http.Client{Timeout: 30 * time.Second}
	if resp, err := hc.Get("http://" + w.addr + "/debug/pprof/goroutine?debug=2"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = os.WriteFile(filepath.Join(dir, "goroutines.txt"), body, 0o644)
	} else if !w.exited() {
		b.Logf("goroutines: %v; sending SIGQUIT for the runtime's dump", err)
		_ = w.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
		}
	}
	if data, err := os.ReadFile(w.log); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "watch.log"), data, 0o644)
	}
	b.Logf("the watcher's goroutines and log are in %s", dir)
}

// watcherFamilies counts the series of each family the watcher serves.
// A scrape waits as long as Prometheus's largest usual scrape_timeout.
func watcherFamilies(b *testing.B, w *watcher) map[string]int {
	families, _ := scrapeFamilies(b, w)
	return families
}

// scrapeFamilies counts the series of each family the watcher serves, and
// says how long the scrape took.
func scrapeFamilies(b *testing.B, w *watcher) (map[string]int, time.Duration) {
	start := time.Now()
	hc := http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Get("http://" + w.addr + "/metrics")
	var body []byte
	code := 0
	if err == nil {
		code = resp.StatusCode
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	took := time.Since(start)
	if err != nil || code != 200 {
		w.diagnose(b)
		b.Fatalf("GET /metrics: %d %v (after %v)", code, err, took)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for name, mf := range mfs {
		out[name] = len(mf.Metric)
	}
	return out, took
}

// watchBenchImages pushes two images to each of watchBenchRepos repositories
// under :latest (the tag ends on the second) and returns their digests.
func watchBenchImages(b *testing.B, host string) [][2]string {
	var out [][2]string
	for i := range watchBenchRepos {
		ref := fmt.Sprintf("%s/bench/r%02d:latest", host, i)
		out = append(out, [2]string{pushSingle(b, ref, fmt.Sprintf("r%02d a", i)), pushSingle(b, ref, fmt.Sprintf("r%02d b", i))})
	}
	return out
}

// watchBenchPod is pod i's spec and status after restarts restarts: the
// first digest of its image at an even count, the second at an odd one.
func watchBenchPod(host string, digests [][2]string, i int, restarts int32) *corev1.Pod {
	repo := fmt.Sprintf("%s/bench/r%02d", host, i%watchBenchRepos)
	image := repo + ":latest"
	// Pods of one image start on either digest, so that every reference
	// the changes use is in use (and walked) before they begin.
	first := int32(i / watchBenchRepos % 2)
	st := restartedStatus("app", image, repo+"@"+digests[i%watchBenchRepos][(first+restarts)%2], restarts, "Error", 1)
	if restarts == 0 {
		st.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: watchBenchNS, Name: watchBenchPodName(i)},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%20),
			Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullAlways}}},
		Status: st,
	}
}

func watchBenchPodName(i int) string { return fmt.Sprintf("p-%05d", i) }

func watchBenchPodList(host string, digests [][2]string) []*corev1.Pod {
	pods := make([]*corev1.Pod, watchBenchPods)
	for i := range pods {
		pods[i] = watchBenchPod(host, digests, i, 0)
	}
	return pods
}

// watchBenchChanges changes watchBenchRate statuses a second for
// watchBenchWindow, pod after pod, each a restart onto the image's other
// digest, watchBenchWorkers patches at a time; a tick finding every worker
// busy is skipped (the rate achieved is reported). It returns the changes
// the API server accepted and how long the window lasted.
func watchBenchChanges(b *testing.B, cs kubernetes.Interface, pods []*corev1.Pod, host string, digests [][2]string) ([]watchBenchChange, time.Duration) {
	return newChurn(len(pods)).run(b, cs, host, digests, watchBenchWindow, watchBenchRate)
}

// churn is where a run of status changes stands: each pod's restart
// count and the next pod to change, so that runs follow one another.
type churn struct {
	restarts []int32
	next     int
}

func newChurn(pods int) *churn { return &churn{restarts: make([]int32, pods)} }

// run changes rate statuses a second for window (see watchBenchChanges).
func (ch *churn) run(b *testing.B, cs kubernetes.Interface, host string, digests [][2]string, window time.Duration, rate int) ([]watchBenchChange, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	todo := make(chan watchBenchChange)
	var (
		mu   sync.Mutex
		done []watchBenchChange
		errs int
		wg   sync.WaitGroup
	)
	for range watchBenchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range todo {
				p := watchBenchPod(host, digests, c.pod, c.restarts)
				err := kubeapi.PatchStatus(context.Background(), cs, watchBenchNS, p.Name, p.Status)
				c.shown = time.Now()
				mu.Lock()
				if err != nil {
					errs++
				} else {
					done = append(done, c)
				}
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	restarts := ch.restarts
	skipped := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
		i := ch.next % len(restarts)
		select {
		case todo <- watchBenchChange{pod: i, restarts: restarts[i] + 1}:
			restarts[i]++
			ch.next++
		default:
			skipped++
		}
	}
	close(todo)
	wg.Wait()
	took := time.Since(start)
	b.Logf("%d status changes in %v (%.0f/s), %d ticks skipped with every worker busy, %d patches failed", len(done), took.Round(time.Millisecond), float64(len(done))/took.Seconds(), skipped, errs)
	return done, took
}

// historyPoller opens the history file every 50ms and, for each file the
// watcher wrote (a new inode: each write is renamed into place), notes
// when each (pod, restart count) transition first appeared: the file's
// change time, which the rename sets once the write is whole. The file is
// held open as soon as it is seen and decoded after, in order, so that a
// decode slower than the watcher's writes (20 MiB of JSON while the
// machine's two cores run everything) misses no write: a missed write
// would stamp its transitions with the next write's time, a flush
// interval late.
type historyPoller struct {
	path  string
	mu    sync.Mutex
	seen  map[string]time.Time // pod/restarts → first seen in the file
	pods  map[string]bool      // pods with a first-seen transition
	errs  []error
	files int // history files read
	// missed counts the files not read: the queue of files waiting to be
	// decoded was full. Their transitions are stamped with a later file's
	// time.
	missed int
}

// polledFile is one file the watcher wrote, open, with its inode and
// change time.
type polledFile struct {
	f        *os.File
	dev, ino uint64
	at       time.Time
}

func newHistoryPoller(path string) *historyPoller {
	return &historyPoller{path: path, seen: map[string]time.Time{}, pods: map[string]bool{}}
}

func (p *historyPoller) run() (stop func()) {
	done := make(chan struct{})
	queue := make(chan polledFile, 64)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(queue)
		var last polledFile
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			pf, ok := p.open(last)
			if !ok {
				continue
			}
			last = pf
			select {
			case queue <- pf:
			default:
				pf.f.Close()
				p.mu.Lock()
				p.missed++
				p.mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for pf := range queue {
			p.read(pf)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// open opens the history file when it is another than last (another
// inode or change time), with its change time: fstat of the file opened,
// so that a write that replaces it meanwhile is not taken for it.
func (p *historyPoller) open(last polledFile) (polledFile, bool) {
	f, err := os.Open(p.path)
	if err != nil {
		return polledFile{}, false
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return polledFile{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		f.Close()
		return polledFile{}, false
	}
	pf := polledFile{f: f, dev: st.Dev, ino: st.Ino, at: time.Unix(st.Ctim.Sec, st.Ctim.Nsec)}
	if pf.dev == last.dev && pf.ino == last.ino && pf.at.Equal(last.at) {
		f.Close()
		return polledFile{}, false
	}
	return pf, true
}

// read decodes one file the watcher wrote, and closes it.
func (p *historyPoller) read(pf polledFile) {
	defer pf.f.Close()
	data, err := io.ReadAll(pf.f)
	var h *watchHistory
	if err == nil {
		h, err = decodeWatchHistory(data)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s: %w", p.path, err))
		return
	}
	p.files++
	for _, tr := range h.Transitions {
		k := tr.Pod + "/" + strconv.Itoa(int(tr.RestartCount))
		if _, ok := p.seen[k]; !ok {
			p.seen[k] = pf.at
		}
		if tr.From == "" {
			p.pods[tr.Pod] = true
		}
	}
}

// waitFirstSeen waits until n pods have their first-seen transition.
func (p *historyPoller) waitFirstSeen(b *testing.B, n int, timeout time.Duration) {
	start := time.Now()
	for time.Since(start) < timeout {
		p.mu.Lock()
		got, errs := len(p.pods), p.errs
		p.mu.Unlock()
		if len(errs) > 0 {
			b.Fatal(errs[0])
		}
		if got >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b.Fatalf("%d of %d pods in the history after %v", len(p.pods), n, timeout)
}

// lags waits (at most drain) until every change is in the history and
// returns the lags of those that are, and how many are not.
func (p *historyPoller) lags(b *testing.B, changes []watchBenchChange, drain time.Duration) ([]time.Duration, int) {
	deadline := time.Now().Add(drain)
	for {
		var lags []time.Duration
		p.mu.Lock()
		for _, c := range changes {
			if at, ok := p.seen[watchBenchPodName(c.pod)+"/"+strconv.Itoa(int(c.restarts))]; ok {
				lags = append(lags, max(at.Sub(c.shown), 0))
			}
		}
		errs := p.errs
		p.mu.Unlock()
		if len(errs) > 0 {
			b.Errorf("reading the history: %v", errs[0])
		}
		if len(lags) == len(changes) || time.Now().After(deadline) {
			slices.Sort(lags)
			return lags, len(changes) - len(lags)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// saveSmaps copies the watcher's /proc/PID/smaps to $WATCH_BENCH_SMAPS
// when it names a file: what each mapping (the binary's text, its
// read-only data, the heap) holds resident.
func saveSmaps(b *testing.B, pid int) {
	path := os.Getenv("WATCH_BENCH_SMAPS")
	if path == "" {
		return
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		b.Errorf("saving smaps: %v", err)
	}
}

// walkHeap, when $WATCH_BENCH_WALK_HEAP names a file, reads the watcher's
// heap profile (/debug/pprof/heap) every 200 ms until
// stopped, and saves there the one whose heap was largest: what the first
// deep walk holds at its height. Else it does nothing.
func walkHeap(b *testing.B, w *watcher) (stop func()) {
	path := os.Getenv("WATCH_BENCH_WALK_HEAP")
	if path == "" {
		return func() {}
	}
	gc := "" // as of the last GC; with $WATCH_BENCH_WALK_HEAP_GC set, a GC first (exact, but it moves the watcher's collections)
	if os.Getenv("WATCH_BENCH_WALK_HEAP_GC") != "" {
		gc = "&gc=1"
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var best []byte
		var most int64
		for {
			select {
			case <-done:
				if err := os.WriteFile(path, best, 0o644); err != nil {
					b.Error(err)
				}
				return
			case <-time.After(200 * time.Millisecond):
			}
			code, body, err := w.get("/debug/pprof/heap?debug=1" + gc)
			if err != nil || code != 200 {
				continue
			}
			// "heap profile: OBJECTS: BYTES [ALLOCS: BYTES] @ heap/RATE"
			var objects, inuse int64
			if _, err := fmt.Sscanf(string(body), "heap profile: %d: %d", &objects, &inuse); err != nil {
				continue
			}
			if inuse > most {
				best, most = body, inuse
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// scrapeEvery, when $WATCH_BENCH_SCRAPE is a duration, scrapes /metrics
// that often until stopped, as a Prometheus would (the bench's own scrapes
// otherwise come only before the churn and at the end, after its peak RSS
// is read), and logs how many and the slowest. Else it does nothing.
func scrapeEvery(b *testing.B, w *watcher) (stop func()) {
	v := os.Getenv("WATCH_BENCH_SCRAPE")
	if v == "" {
		return func() {}
	}
	every, err := time.ParseDuration(v)
	if err != nil || every < time.Second {
		b.Fatalf("WATCH_BENCH_SCRAPE=%q: a duration of at least 1s", v)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		n, slowest := 0, time.Duration(0)
		defer func() {
			b.Logf("scraped /metrics %d times during the changes, every %v; the slowest took %v", n, every, slowest)
		}()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			_, took := scrapeFamilies(b, w)
			n, slowest = n+1, max(slowest, took)
		}
	}()
	return func() { close(done); <-stopped }
}

// watcherGODEBUG is the watcher's GODEBUG when $WATCH_BENCH_GODEBUG sets
// one (say gctrace=1, for each GC's heap sizes in its log): set there, and
// not in the bench's environment, it does not reach the go commands that
// build the watcher, whose cached output would replay it.
func watcherGODEBUG() []string {
	if v := os.Getenv("WATCH_BENCH_GODEBUG"); v != "" {
		return []string{"GODEBUG=" + v}
	}
	return nil
}

// saveLog copies the watcher's log to $WATCH_BENCH_LOG when it names a
// file (with $WATCH_BENCH_GODEBUG=gctrace=1, each GC's heap sizes are in
// it).
func saveLog(b *testing.B, w *watcher) {
	path := os.Getenv("WATCH_BENCH_LOG")
	if path == "" {
		return
	}
	data, err := os.ReadFile(w.log)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		b.Errorf("saving the log: %v", err)
	}
}

// vmHWM is a process's peak resident set size, from /proc/PID/status.
func vmHWM(b *testing.B, pid int) int64 {
	return procStatus(b, pid, "VmHWM")
}

// procStatus is one size field of /proc/PID/status (VmHWM, RssAnon,
// RssFile), in bytes.
func procStatus(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == field+":" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cpuTime is the CPU time a process has used (user and system, from
// /proc/PID/stat, in clock ticks of 1/100 s as Linux reports them).
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th of them.
	rest := string(data[bytes.LastIndexByte(data, ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	var ticks int64
	for _, x := range f[11:13] {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// apiRequests reads apiserver_request_total from the API server's
// /metrics, summed by verb and resource ("LIST pods", ...).
func apiRequests(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	mf := mfs["apiserver_request_total"]
	if mf == nil {
		return nil, fmt.Errorf("no apiserver_request_total in the API server's metrics")
	}
	for _, m := range mf.Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if l["resource"] == "" {
			continue // /metrics, /readyz and the like
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		out[l["verb"]+" "+res] += m.GetCounter().GetValue()
	}
	return out, nil
}

func diffRequests(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// watchBenchFigures are what BenchmarkWatch measured.
type watchBenchFigures struct {
	changes       int
	rate          float64
	lags          []time.Duration
	missing       int
	rss           int64
	live          int64         // heap after a forced GC, at the end
	quiet         requestCounts // registry requests in watchBenchQuiet with nothing changing
	ready, synced time.Duration
	walk, steady  requestCounts
	prevWalk      requestCounts // after the changes, before the periodic walk
	rewalk        requestCounts // the periodic deep walk's requests
	historySize   int64
	window        time.Duration
	api           map[string]float64 // by "VERB resource", over the watcher's life
	families      map[string]int     // series the watcher served at the end, by family
	scrape        time.Duration      // the last GET /metrics
	churnCPU      time.Duration      // the watcher's CPU time in the window of changes
	// rssAnon and rssFile split the resident set at the end: the heap and
	// the rest of the process's own memory, and the binary's pages.
	rssAnon, rssFile int64
}

func lagAt(lags []time.Duration, p float64) time.Duration {
	if len(lags) == 0 {
		return -1
	}
	return lags[min(int(float64(len(lags))*p), len(lags)-1)]
}

func reportWatchBench(b *testing.B, f watchBenchFigures) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(f.rate, "changes/s")
	b.ReportMetric(ms(lagAt(f.lags, 0.5)), "lag-p50-ms")
	b.ReportMetric(ms(lagAt(f.lags, 0.99)), "lag-p99-ms")
	b.ReportMetric(ms(lagAt(f.lags, 1)), "lag-max-ms")
	b.ReportMetric(float64(f.missing), "changes-missing")
	b.ReportMetric(float64(f.rss)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(ms(f.synced), "first-history-ms")
	// An hour of churn holds one periodic walk (--interval 1h by default)
	// and an hour of what the minute of changes sent; a quiet hour one
	// periodic walk and an hour of what the quiet interval sent.
	perHour := float64(f.steady.Total())*float64(time.Hour)/float64(f.window) + float64(f.rewalk.Total())
	quietHour := float64(f.quiet.Total())*float64(time.Hour)/float64(watchBenchQuiet) + float64(f.rewalk.Total())
	b.ReportMetric(float64(f.walk.Total()), "registry-req-first-walk")
	b.ReportMetric(float64(f.rewalk.Total()), "registry-req-rewalk")
	b.ReportMetric(float64(f.steady.Total()), "registry-req-churn-minute")
	b.ReportMetric(perHour, "registry-req/h-churn")
	b.ReportMetric(quietHour, "registry-req/h-quiet")
	b.ReportMetric(float64(f.live)/(1<<20), "live-heap-MiB")
	var list, watch, get, podGets float64
	var keys []string
	for k, v := range f.api {
		verb, res, _ := strings.Cut(k, " ")
		switch verb {
		case "LIST":
			list += v
		case "WATCH":
			watch += v
		case "GET":
			get += v
			if res == "pods" {
				podGets += v
			}
		default:
			continue // the bench's own CREATE and PATCH
		}
		keys = append(keys, fmt.Sprintf("%s=%.0f", k, v))
	}
	slices.Sort(keys)
	b.ReportMetric(float64(f.families["regcheck_container_image_available"]), "availability-series")
	b.ReportMetric(ms(f.scrape), "scrape-ms")
	b.ReportMetric(list, "api-LIST")
	b.ReportMetric(watch, "api-WATCH")
	b.ReportMetric(get, "api-GET")
	b.ReportMetric(podGets, "api-GET-pods")
	b.Logf("%d changes at %.0f/s; lag status update → history: p50 %v, p99 %v, max %v; %d never reached the history",
		f.changes, f.rate, lagAt(f.lags, 0.5), lagAt(f.lags, 0.99), lagAt(f.lags, 1), f.missing)
	b.Logf("peak RSS %.0f MiB (goal < 200 MiB), live heap after GC %.0f MiB at the end; ready %v, every pod in the history %v after start",
		float64(f.rss)/(1<<20), float64(f.live)/(1<<20), f.ready.Round(time.Millisecond), f.synced.Round(time.Millisecond))
	b.ReportMetric(f.churnCPU.Seconds()/f.window.Seconds(), "cpu-cores-churn")
	b.Logf("the watcher used %v of CPU in the %v of changes (%.2f cores); resident at the end: %.0f MiB anonymous, %.0f MiB of files (its binary's pages)",
		f.churnCPU.Round(10*time.Millisecond), f.window.Round(time.Second), f.churnCPU.Seconds()/f.window.Seconds(), float64(f.rssAnon)/(1<<20), float64(f.rssFile)/(1<<20))
	b.ReportMetric(float64(f.prevWalk.Total()), "registry-req-after-changes")
	b.ReportMetric(float64(f.historySize)/(1<<20), "history-MiB")
	b.Logf("registry requests: %d for the first deep walk (%+v), %d in %v of changes (%+v), %d after them, before the periodic walk (%+v), %d for the periodic deep walk (%+v), %d in %v of quiet (%+v): %.0f/h in churn, %.0f/h quiet, at --interval 1h",
		f.walk.Total(), f.walk, f.steady.Total(), f.window.Round(time.Second), f.steady, f.prevWalk.Total(), f.prevWalk, f.rewalk.Total(), f.rewalk,
		f.quiet.Total(), watchBenchQuiet, f.quiet, perHour, quietHour)
	b.Logf("history file %.1f MiB at the end", float64(f.historySize)/(1<<20))
	b.Logf("API server requests (LIST/WATCH/GET, the watcher's life; the bench itself only creates and patches): %s", strings.Join(keys, " "))
}
