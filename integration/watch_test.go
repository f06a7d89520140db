//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
)

// The watcher's history as the contract between `regcheck watch` and its
// readers spells it in JSON (record's schema 1 plus transitions), read
// with a struct of the test's own so that a renamed field fails here.
type watchHistory struct {
	SchemaVersion int               `json:"schemaVersion"`
	Records       []record.Record   `json:"records"`
	Transitions   []watchTransition `json:"transitions"`
}

// watchTransition is one change of the running digest of one owner's
// container.
type watchTransition struct {
	Cluster               string    `json:"cluster"`
	Namespace             string    `json:"namespace"`
	OwnerKind             string    `json:"ownerKind"`
	OwnerName             string    `json:"ownerName"`
	Container             string    `json:"container"`
	Volume                string    `json:"volume"`
	Pod                   string    `json:"pod"`
	Node                  string    `json:"node"`
	Image                 string    `json:"image"`
	PreviousImage         string    `json:"previousImage"`
	From                  string    `json:"from"`
	To                    string    `json:"to"`
	Time                  time.Time `json:"time"`
	RestartCount          int32     `json:"restartCount"`
	LastTerminationReason string    `json:"lastTerminationReason"`
	LastExitCode          *int32    `json:"lastExitCode"`
	TemplateChanged       bool      `json:"templateChanged"`
}

func (tr watchTransition) String() string {
	return fmt.Sprintf("%s/%s %s/%s[%s] %s→%s restarts=%d", tr.Namespace, tr.Pod, tr.OwnerKind, tr.OwnerName, tr.Container, short(tr.From), short(tr.To), tr.RestartCount)
}

// short is a digest's first hex characters, for messages.
func short(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// decodeWatchHistory reads a history as regcheck's own reader does (it
// must accept it) and as the contract spells it.
func decodeWatchHistory(data []byte) (*watchHistory, error) {
	if _, err := record.Decode(data); err != nil {
		return nil, err
	}
	var h watchHistory
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// historySource reads the watcher's history: a file or a ConfigMap.
type historySource func() (*watchHistory, error)

func fileHistory(path string) historySource {
	return func() (*watchHistory, error) {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return &watchHistory{}, nil
		}
		if err != nil {
			return nil, err
		}
		h, err := decodeWatchHistory(data)
		if err != nil {
			return nil, fmt.Errorf("history %s (%d bytes) does not parse: %w", path, len(data), err)
		}
		return h, nil
	}
}

func configMapHistory(cs kubernetes.Interface, ns, name string) historySource {
	return func() (*watchHistory, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "not found") {
				return &watchHistory{}, nil
			}
			return nil, err
		}
		data, ok := cm.Data[record.ConfigMapKey]
		if !ok {
			return &watchHistory{}, nil
		}
		h, err := decodeWatchHistory([]byte(data))
		if err != nil {
			return nil, fmt.Errorf("configmap %s/%s does not parse: %w", ns, name, err)
		}
		return h, nil
	}
}

// waitTransition polls the history (every 20ms, at most timeout) until it
// holds a transition match accepts, and returns it with the time it was
// first seen.
func waitTransition(t *testing.T, src historySource, timeout time.Duration, match func(watchTransition) bool) (watchTransition, time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *watchHistory
	for {
		h, err := src()
		if err != nil {
			t.Fatal(err)
		}
		last = h
		for _, tr := range h.Transitions {
			if match(tr) {
				return tr, time.Now()
			}
		}
		if time.Now().After(deadline) {
			var have []string
			for _, tr := range last.Transitions {
				have = append(have, tr.String())
			}
			t.Fatalf("no matching transition in the history after %v; it has %d records and these transitions:\n%s", timeout, len(last.Records), strings.Join(have, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchBin is the regcheck binary, built once per test run.
var watchBin struct {
	sync.Once
	path string
	err  error
}

func watchBinary(t testing.TB) string {
	t.Helper()
	watchBin.Do(func() {
		dir, err := os.MkdirTemp("", "regcheck-watch-bin-")
		if err != nil {
			watchBin.err = err
			return
		}
		watchBin.path = filepath.Join(dir, "regcheck")
		if out, err := releaseBuild(watchBin.path).CombinedOutput(); err != nil {
			watchBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if watchBin.err != nil {
		t.Fatal(watchBin.err)
	}
	return watchBin.path
}

// watchRig is a real kube-apiserver and distribution 3.1.2 with one
// namespace of workloads whose images live in that registry.
type watchRig struct {
	kc  *kubeapi.Cluster
	cs  kubernetes.Interface
	reg *registry.Registry
	bin string
	ns  string
}

func newWatchRig(t *testing.T) *watchRig {
	t.Helper()
	r := &watchRig{bin: watchBinary(t), ns: "shop"}
	r.kc = startCluster(t)
	r.cs = clientFor(t, r.kc.Config)
	r.reg = startEmpty(t, registry.V3)
	if err := createNamespace(t.Context(), r.cs, r.ns); err != nil {
		t.Fatal(err)
	}
	return r
}

// createNamespace creates a namespace and its default ServiceAccount (no
// controller-manager runs to create it, and pods need it).
func createNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	return err
}

// ref is the registry's reference of repository watch/name at tag.
func (r *watchRig) ref(name, tag string) string { return r.reg.Host() + "/watch/" + name + ":" + tag }

// imageID is what containerd reports as a container status's imageID.
func (r *watchRig) imageID(name, digest string) string {
	return r.reg.Host() + "/watch/" + name + "@" + digest
}

// deploy creates Deployment name → ReplicaSet → one Pod on node-a running
// image name:tag (pull policy Always) at digest, and returns the pod's name.
func (r *watchRig) deploy(t *testing.T, name, tag, digest string) string {
	t.Helper()
	workload(t, t.Context(), r.cs, r.ns, name, r.ref(name, tag), "Always", "node-a", r.imageID(name, digest))
	return name + "-5d9c8-x7k2p"
}

// restart writes the status a kubelet writes after a container restarted
// running digest: restarts, the last termination's reason and exit code.
// It returns when the API server has answered (the time the change became
// visible to watchers).
func (r *watchRig) restart(t *testing.T, pod, container, image, digest string, restarts int32, reason string, exitCode int32) time.Time {
	t.Helper()
	if err := kubeapi.PatchStatus(t.Context(), r.cs, r.ns, pod, restartedStatus(container, image, r.imageID(repoName(image), digest), restarts, reason, exitCode)); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// restartedStatus is a running pod's status after restarts restarts, the
// last one ending with reason and exitCode.
func restartedStatus(container, image, imageID string, restarts int32, reason string, exitCode int32) corev1.PodStatus {
	started := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: container, Image: image, ImageID: imageID, Ready: true, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: reason, ExitCode: exitCode, StartedAt: started, FinishedAt: started,
		}},
	}}}
}

// repoName is the last path element of a reference's repository.
func repoName(image string) string {
	repo, _, _ := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	repo, _, _ = strings.Cut(repo, "@")
	return repo
}

// watcher is one `regcheck watch` process.
type watcher struct {
	cmd  *exec.Cmd
	addr string // metrics, health and readiness on loopback
	log  string
	done chan struct{}
}

// freeLoopbackPort picks a free port on 127.0.0.1.
func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// watchArgs are the flags every watcher of the rig gets: the namespace,
// the kubeconfig, the registry as plain HTTP, metrics on a loopback port.
func (r *watchRig) watchArgs(addr string, store ...string) []string {
	return append([]string{"watch", "-n", r.ns, "--kubeconfig", r.kc.Kubeconfig,
		"--metrics-bind-address", addr, "--insecure-registry", r.reg.Host(), "--log-level", "info"}, store...)
}

// startWatcher starts `regcheck watch` with the rig's flags, store (say
// --out FILE) and extra flags (startWatchProcess).
func (r *watchRig) startWatcher(t testing.TB, store []string, extra ...string) *watcher {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freeLoopbackPort(t))
	return startWatchProcess(t, r.bin, addr, append(r.watchArgs(addr, store...), extra...))
}

// startWatchProcess starts bin with args (a regcheck watch serving on
// addr) and env, with its own cache and state folders. Its log goes to a
// file in the test's folder; Cleanup kills it.
func startWatchProcess(t testing.TB, bin, addr string, args []string, env ...string) *watcher {
	t.Helper()
	w := &watcher{addr: addr, done: make(chan struct{})}
	dir := t.TempDir()
	w.log = filepath.Join(dir, "watch.log")
	logf, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(bin, args...)
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	w.cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir), env...)
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread() // Pdeathsig follows the thread that forked
	err = w.cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() {
		w.cmd.Wait()
		logf.Close()
		close(w.done)
	}()
	t.Cleanup(func() {
		if !w.exited() {
			w.cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

func (w *watcher) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// tail is the end of the watcher's log.
func (w *watcher) tail() string {
	data, _ := os.ReadFile(w.log)
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	return string(data)
}

// get fetches path from the watcher's HTTP server.
func (w *watcher) get(path string) (int, []byte, error) {
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + w.addr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waitReady waits until /readyz answers 200 (informers synced), failing
// the test with the log if the process exits first or timeout passes.
func (w *watcher) waitReady(t testing.TB, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < timeout {
		if w.exited() {
			t.Fatalf("regcheck watch exited (%v) before it was ready:\n%s", w.cmd.ProcessState, w.tail())
		}
		code, body, err := w.get("/readyz")
		if err == nil && code == http.StatusOK {
			return time.Since(start)
		}
		last = fmt.Sprintf("%d %s %v", code, body, err)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("regcheck watch not ready after %v (last /readyz: %s):\n%s", timeout, last, w.tail())
	return 0
}

// scrape reads /metrics.
func (w *watcher) scrape(t *testing.T) ([]series, []byte) {
	t.Helper()
	code, body, err := w.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v\n%s", code, err, w.tail())
	}
	return parseText(t, body), body
}

// metric is the value of the one series of name with labels (-1 if none).
func metric(all []series, name string, labels map[string]string) float64 {
	got := find(all, name, labels)
	if len(got) == 0 {
		return -1
	}
	var sum float64
	for _, s := range got {
		sum += s.value
	}
	return sum
}

// stop sends sig and waits (at most timeout) for the process to exit; it
// returns the exit code (-1 if killed by a signal) and how long it took.
func (w *watcher) stop(t testing.TB, sig os.Signal, timeout time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := w.cmd.Process.Signal(sig); err != nil && !w.exited() {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(timeout):
		w.cmd.Process.Kill()
		<-w.done
		t.Fatalf("regcheck watch still running %v after %v:\n%s", timeout, sig, w.tail())
	}
	return w.cmd.ProcessState.ExitCode(), time.Since(start)
}

// firstSeen matches the history's first sighting of digest for an owner.
func firstSeen(owner, digest string) func(watchTransition) bool {
	return func(tr watchTransition) bool { return tr.OwnerName == owner && tr.From == "" && tr.To == digest }
}

// changed matches a transition of owner to digest after restarts.
func changed(owner, from, to string, restarts int32) func(watchTransition) bool {
	return func(tr watchTransition) bool {
		return tr.OwnerName == owner && tr.From == from && tr.To == to && tr.RestartCount == restarts
	}
}

// TestWatchTransitions: each restart onto another digest under the same
// tag (the tag moved in the registry) is recorded as a transition with the
// restart count and the last termination, seconds after the API server
// shows it; the lag is logged.
func TestWatchTransitions(t *testing.T) {
	r := newWatchRig(t)
	image := r.ref("api", "latest")
	digests := []string{pushSingle(t, image, "api v1")}
	pod := r.deploy(t, "api", "latest", digests[0])
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	w := r.startWatcher(t, []string{"--out", out})
	t.Logf("ready in %v", w.waitReady(t, time.Minute).Round(time.Millisecond))
	first, _ := waitTransition(t, src, 30*time.Second, firstSeen("api", digests[0]))
	if first.OwnerKind != "Deployment" || first.Container != "api" || first.Pod != pod || first.Image != image {
		t.Errorf("first seen = %+v; want Deployment api, container api, pod %s, image %s", first, pod, image)
	}

	var lags []time.Duration
	for i := 1; i <= 5; i++ {
		digests = append(digests, pushSingle(t, image, fmt.Sprintf("api v%d", i+1)))
		reason, code := "Error", int32(i)
		shown := r.restart(t, pod, "api", image, digests[i], int32(i), reason, code)
		tr, seen := waitTransition(t, src, 30*time.Second, changed("api", digests[i-1], digests[i], int32(i)))
		lags = append(lags, seen.Sub(shown))
		want := watchTransition{Cluster: tr.Cluster, Namespace: r.ns, OwnerKind: "Deployment", OwnerName: "api", Container: "api",
			Pod: pod, Node: "node-a", Image: image, PreviousImage: image, From: digests[i-1], To: digests[i], Time: tr.Time,
			RestartCount: int32(i), LastTerminationReason: reason, LastExitCode: &code, TemplateChanged: false}
		if tr.LastExitCode == nil || *tr.LastExitCode != code {
			t.Errorf("transition %d: lastExitCode = %v, want %d", i, tr.LastExitCode, code)
		}
		tr.LastExitCode, want.LastExitCode = nil, nil
		if tr != want {
			t.Errorf("transition %d:\n got %+v\nwant %+v", i, tr, want)
		}
		if tr.Time.Before(shown.Add(-time.Second)) || tr.Time.After(seen.Add(time.Second)) {
			t.Errorf("transition %d: time %v is not between the status update (%v) and its sighting (%v)", i, tr.Time, shown, seen)
		}
	}
	h, err := src()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range digests {
		if !slices.ContainsFunc(h.Records, func(rc record.Record) bool { return rc.OwnerName == "api" && rc.Digest == d }) {
			t.Errorf("no record of digest %s for Deployment api", short(d))
		}
	}
	if n := len(h.Transitions); n != len(digests) {
		t.Errorf("%d transitions in the history, want %d (first seen + %d changes)", n, len(digests), len(digests)-1)
	}
	slices.Sort(lags)
	t.Logf("lag status update → in the history (default --flush-interval), %d changes: min %v, median %v, max %v",
		len(lags), lags[0].Round(time.Millisecond), lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	if code, took := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM (%v):\n%s", code, took, w.tail())
	}
}

// rollout does what the Deployment controller and a kubelet do when the
// template of Deployment name moves to tag: the template changes, a new
// ReplicaSet's pod runs digest, the old pod goes. It returns the new pod.
func (r *watchRig) rollout(t *testing.T, name, tag, digest string) string {
	t.Helper()
	pod := r.rolloutBegun(t, name, tag, digest)
	if err := r.cs.CoreV1().Pods(r.ns).Delete(t.Context(), name+"-5d9c8-x7k2p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return pod
}

// rolloutBegun is rollout half done: the new ReplicaSet's pod runs digest
// on node-b while the old pod still runs. It returns the new pod.
func (r *watchRig) rolloutBegun(t *testing.T, name, tag, digest string) string {
	t.Helper()
	ctx := t.Context()
	image := r.ref(name, tag)
	dep, err := r.cs.AppsV1().Deployments(r.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = image
	if dep, err = r.cs.AppsV1().Deployments(r.ns).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	isTrue := true
	rs, err := r.cs.AppsV1().ReplicaSets(r.ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-6f7a8", Namespace: r.ns, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: &isTrue}}},
		Spec: appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	spec.NodeName = "node-b"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rs.Name + "-q2w3e", Namespace: r.ns, Labels: dep.Spec.Template.Labels, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &isTrue}}},
		Spec:   spec,
		Status: restartedStatus(name, image, r.imageID(name, digest), 0, "", 0),
	}
	pod.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{}
	if _, err := kubeapi.CreatePods(ctx, r.cs, []*corev1.Pod{pod}, 1); err != nil {
		t.Fatal(err)
	}
	return pod.Name
}

// TestWatchUnplannedUpgradeExported: a restart that pulled a moved tag
// (coturn/coturn:latest, the seeds' outage) is exported as
// regcheck_unplanned_upgrade with its namespace, owner and container; a
// rollout that changed the template (web) is a planned transition and
// raises nothing. Over the series the watcher served, the real promtool
// fires RegcheckUnplannedUpgrade for coturn alone, naming the command to run.
func TestWatchUnplannedUpgradeExported(t *testing.T) {
	r := newWatchRig(t)
	coturn := r.ref("coturn", "latest")
	c1 := pushSingle(t, coturn, "coturn 4.6")
	w1 := pushSingle(t, r.ref("web", "1.0"), "web 1.0")
	cpod := r.deploy(t, "coturn", "latest", c1)
	r.deploy(t, "web", "1.0", w1)
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	w := r.startWatcher(t, []string{"--out", out}, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	waitTransition(t, src, 30*time.Second, firstSeen("coturn", c1))
	waitTransition(t, src, 30*time.Second, firstSeen("web", w1))
	all, text := w.scrape(t)
	if n := len(find(all, "regcheck_unplanned_upgrade", nil)); n != 0 {
		t.Errorf("%d regcheck_unplanned_upgrade series before any change:\n%s", n, text)
	}

	c2 := pushSingle(t, coturn, "coturn 4.7") // the tag moved
	r.restart(t, cpod, "coturn", coturn, c2, 1, "Error", 1)
	w2 := pushSingle(t, r.ref("web", "2.0"), "web 2.0")
	r.rollout(t, "web", "2.0", w2)
	unplanned, _ := waitTransition(t, src, 30*time.Second, changed("coturn", c1, c2, 1))
	planned, _ := waitTransition(t, src, 30*time.Second, func(tr watchTransition) bool {
		return tr.OwnerName == "web" && tr.From == w1 && tr.To == w2
	})
	if unplanned.TemplateChanged || !planned.TemplateChanged {
		t.Errorf("templateChanged: coturn %v (want false), web %v (want true)", unplanned.TemplateChanged, planned.TemplateChanged)
	}
	if planned.PreviousImage != r.ref("web", "1.0") || planned.Image != r.ref("web", "2.0") {
		t.Errorf("planned transition images %q → %q, want web:1.0 → web:2.0", planned.PreviousImage, planned.Image)
	}

	labels := map[string]string{"namespace": r.ns, "owner_kind": "Deployment", "owner_name": "coturn", "container": "coturn", "from": c1, "to": c2}
	var got []series
	deadline := time.Now().Add(20 * time.Second)
	for {
		all, text = w.scrape(t)
		got = find(all, "regcheck_unplanned_upgrade", labels)
		if len(got) == 1 && got[0].value == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got) != 1 || got[0].value != 1 {
		t.Fatalf("regcheck_unplanned_upgrade%v = %v, want one series of value 1:\n%s", labels, got, text)
	}
	for _, s := range find(all, "regcheck_unplanned_upgrade", nil) {
		if s.labels["owner_name"] != "coturn" && s.value != 0 {
			t.Errorf("unplanned upgrade raised for a planned rollout: %v", s)
		}
	}
	if v := metric(all, "regcheck_watch_transitions_total", map[string]string{"planned": "false"}); v < 1 {
		t.Errorf(`regcheck_watch_transitions_total{planned="false"} = %v, want ≥ 1`, v)
	}
	if v := metric(all, "regcheck_watch_transitions_total", map[string]string{"planned": "true"}); v < 1 {
		t.Errorf(`regcheck_watch_transitions_total{planned="true"} = %v, want ≥ 1`, v)
	}
	for _, name := range []string{"regcheck_watch_last_sync_timestamp_seconds", "regcheck_watch_writes_total", "regcheck_watch_leader"} {
		if v := metric(all, name, nil); v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	// The new reference web:2.0 is walked soon after it appeared: it pulls.
	avail := map[string]string{"namespace": r.ns, "owner_kind": "Deployment", "owner_name": "web", "container": "web", "image": r.ref("web", "2.0")}
	deadline = time.Now().Add(30 * time.Second)
	for metric(all, "regcheck_container_image_available", avail) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("regcheck_container_image_available%v not 1 within 30s of the rollout (--walk-debounce 1s):\n%s\n%s", avail, text, w.tail())
		}
		time.Sleep(200 * time.Millisecond)
		all, text = w.scrape(t)
	}
	unplannedAlert(t, all, got[0])
	if code, took := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM (%v):\n%s", code, took, w.tail())
	}
}

// unplannedAlert runs promtool test rules on deploy/prometheus's rules over
// every series the watcher served (held for hours at one sample a minute,
// timestamps moved to the test's time 0): RegcheckUnplannedUpgrade fires
// for the one series, with the labels and the text the rule renders, and
// that text names the command that pins the workload back.
func unplannedAlert(t *testing.T, all []series, raised series) {
	t.Helper()
	var rule *metrics.Rule
	for _, g := range metrics.Rules() {
		for i := range g.Rules {
			if g.Rules[i].Alert == "RegcheckUnplannedUpgrade" {
				rule = &g.Rules[i]
			}
		}
	}
	if rule == nil {
		t.Fatalf("metrics.Rules has no RegcheckUnplannedUpgrade alert (have %v)", metrics.Alerts())
	}
	wait := time.Duration(0)
	if rule.For != "" {
		d, err := model.ParseDuration(rule.For)
		if err != nil {
			t.Fatal(err)
		}
		wait = time.Duration(d)
	}
	evalAt := wait + 2*time.Minute
	now := float64(time.Now().Unix())
	samples := int(evalAt/time.Minute) + 10
	var input []map[string]string
	for _, s := range all {
		v := s.value
		if strings.HasSuffix(s.name, "_timestamp_seconds") {
			v -= now
		}
		input = append(input, map[string]string{"series": s.String(), "values": fmt.Sprintf("%sx%d", strconv.FormatFloat(v, 'f', -1, 64), samples)})
	}
	want := map[string]string{}
	for k, v := range raised.labels {
		want[k] = v
	}
	for k, v := range rule.Labels {
		want[k] = v
	}
	annotations := map[string]string{}
	for k, text := range rule.Annotations {
		got, err := metrics.Render(text, raised.labels, raised.value)
		if err != nil {
			t.Fatal(err)
		}
		annotations[k] = got
	}
	text := strings.Join(slices.Collect(maps.Values(annotations)), "\n")
	t.Logf("RegcheckUnplannedUpgrade renders:\n%s", text)
	for _, must := range []string{"regcheck pin --from-records", raised.labels["owner_name"], raised.labels["namespace"]} {
		if !strings.Contains(text, must) {
			t.Errorf("RegcheckUnplannedUpgrade's text does not name %q:\n%s", must, text)
		}
	}
	abs, err := filepath.Abs(filepath.Join(rulesDir, "regcheck.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"rule_files":          []string{abs},
		"evaluation_interval": "1m",
		"tests": []map[string]any{{
			"interval":     "1m",
			"input_series": input,
			"alert_rule_test": []map[string]any{
				{"eval_time": model.Duration(evalAt).String(), "alertname": "RegcheckUnplannedUpgrade",
					"exp_alerts": []map[string]any{{"exp_labels": want, "exp_annotations": annotations}}},
			},
		}},
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "unplanned.test.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, "test", "rules", path)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: %s", out)
	}
	t.Logf("promtool test rules over %d served series, RegcheckUnplannedUpgrade at %v: %s", len(input), model.Duration(evalAt), strings.TrimSpace(out))
}

// TestWatchHistoryAcrossRestart: a change made while no watcher runs is
// recorded by the reconcile of the next one at start, the first run's
// records are kept, and a start with nothing changed adds no transition.
func TestWatchHistoryAcrossRestart(t *testing.T) {
	r := newWatchRig(t)
	image := r.ref("api", "latest")
	d1 := pushSingle(t, image, "api v1")
	pod := r.deploy(t, "api", "latest", d1)
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	store := []string{"--out", out}

	w := r.startWatcher(t, store)
	w.waitReady(t, time.Minute)
	waitTransition(t, src, 30*time.Second, firstSeen("api", d1))
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
	before, err := src()
	if err != nil {
		t.Fatal(err)
	}

	d2 := pushSingle(t, image, "api v2")
	r.restart(t, pod, "api", image, d2, 3, "OOMKilled", 137)
	w = r.startWatcher(t, store)
	w.waitReady(t, time.Minute)
	tr, _ := waitTransition(t, src, 30*time.Second, changed("api", d1, d2, 3))
	if tr.LastTerminationReason != "OOMKilled" || tr.LastExitCode == nil || *tr.LastExitCode != 137 || tr.TemplateChanged {
		t.Errorf("reconciled transition %+v; want OOMKilled, exit 137, template unchanged", tr)
	}
	after, err := src()
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range before.Records {
		if !slices.ContainsFunc(after.Records, func(a record.Record) bool { return a.Key == rc.Key && !a.FirstSeen.After(rc.FirstSeen) }) {
			t.Errorf("record %+v of the first run is gone or its firstSeen moved", rc.Key)
		}
	}
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, w.tail())
	}

	// Nothing changed: a third start records no new transition.
	settled, err := src()
	if err != nil {
		t.Fatal(err)
	}
	w = r.startWatcher(t, store)
	w.waitReady(t, time.Minute)
	time.Sleep(5 * time.Second) // longer than the default flush interval
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
	last, err := src()
	if err != nil {
		t.Fatal(err)
	}
	if len(last.Transitions) != len(settled.Transitions) {
		t.Errorf("a restart with nothing changed went from %d to %d transitions: %v", len(settled.Transitions), len(last.Transitions), last.Transitions)
	}
}

// TestWatchSIGTERMFlushes: with a flush interval far longer than the
// test, a transition the watcher has seen is still pending when SIGTERM
// comes; the watcher writes it and exits 0 within seconds.
func TestWatchSIGTERMFlushes(t *testing.T) {
	r := newWatchRig(t)
	image := r.ref("api", "latest")
	d1 := pushSingle(t, image, "api v1")
	pod := r.deploy(t, "api", "latest", d1)
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	w := r.startWatcher(t, []string{"--out", out}, "--flush-interval", "10m")
	w.waitReady(t, time.Minute)
	d2 := pushSingle(t, image, "api v2")
	r.restart(t, pod, "api", image, d2, 1, "Error", 2)
	// The watcher has seen it once it counts the transition.
	deadline := time.Now().Add(20 * time.Second)
	for {
		all, text := w.scrape(t)
		if metric(all, "regcheck_watch_transitions_total", map[string]string{"planned": "false"}) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never counted the transition:\n%s", text)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// At most one write per flush interval, and the first came at start:
	// the transition is pending, only SIGTERM's flush can write it.
	if h, err := src(); err != nil {
		t.Fatal(err)
	} else if slices.ContainsFunc(h.Transitions, changed("api", d1, d2, 1)) {
		t.Fatalf("the transition was written before SIGTERM despite --flush-interval 10m; this test cannot see the flush")
	}
	code, took := w.stop(t, syscall.SIGTERM, 30*time.Second)
	t.Logf("SIGTERM → exit %d in %v", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0:\n%s", code, w.tail())
	}
	if took > 10*time.Second {
		t.Errorf("SIGTERM took %v to exit; want a few seconds (a pod's grace period is 30s)", took)
	}
	waitTransition(t, src, time.Second, changed("api", d1, d2, 1))
}

// TestWatchRelist: the API server restarts mid-run (every watch is cut;
// the informers must reconnect or relist); a change made right after it
// is back is recorded, and the watcher never exits.
func TestWatchRelist(t *testing.T) {
	r := newWatchRig(t)
	image := r.ref("api", "latest")
	d1 := pushSingle(t, image, "api v1")
	pod := r.deploy(t, "api", "latest", d1)
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	w := r.startWatcher(t, []string{"--out", out})
	w.waitReady(t, time.Minute)
	d2 := pushSingle(t, image, "api v2")
	r.restart(t, pod, "api", image, d2, 1, "Error", 1)
	waitTransition(t, src, 30*time.Second, changed("api", d1, d2, 1))

	start := time.Now()
	if err := r.kc.RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted in %v", time.Since(start).Round(time.Millisecond))
	d3 := pushSingle(t, image, "api v3")
	shown := r.restart(t, pod, "api", image, d3, 2, "Error", 1)
	_, seen := waitTransition(t, src, 90*time.Second, changed("api", d2, d3, 2))
	t.Logf("a change made as the API server came back was in the history %v later", seen.Sub(shown).Round(time.Millisecond))
	if served, err := apiRequests(t.Context(), r.cs); err == nil {
		t.Logf("the restarted API server served: LIST pods %v, WATCH pods %v", served["LIST pods"], served["WATCH pods"])
	}
	if w.exited() {
		t.Fatalf("the watcher exited during the API server's restart:\n%s", w.tail())
	}
	// And it keeps watching: one more change after the reconnect.
	d4 := pushSingle(t, image, "api v4")
	r.restart(t, pod, "api", image, d4, 3, "Error", 1)
	waitTransition(t, src, 30*time.Second, changed("api", d3, d4, 3))
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
}

// waitLeader waits until the watcher's regcheck_watch_leader gauge is want.
func (w *watcher) waitLeader(t *testing.T, want float64, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		all, text := w.scrape(t)
		if metric(all, "regcheck_watch_leader", nil) == want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("regcheck_watch_leader never %v in %v:\n%s\n%s", want, timeout, text, w.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWatchFailover: two watchers with --leader-elect keep one history in
// a ConfigMap, as deploy/ runs them. Only the leader writes; SIGKILL the
// leader (its Lease is not released) and the other takes over within the
// lease duration and records the change made during the failover.
func TestWatchFailover(t *testing.T) {
	r := newWatchRig(t)
	ctx := t.Context()
	image := r.ref("api", "latest")
	d1 := pushSingle(t, image, "api v1")
	pod := r.deploy(t, "api", "latest", d1)
	src := configMapHistory(r.cs, r.ns, "regcheck-history")
	store := []string{"--configmap", r.ns + "/regcheck-history"}
	const lease, retry = 6 * time.Second, time.Second
	le := []string{"--leader-elect", "--leader-election-namespace", r.ns, "--leader-election-id", "regcheck-watch",
		"--lease-duration", lease.String(), "--renew-deadline", "4s", "--retry-period", retry.String()}

	a := r.startWatcher(t, store, le...)
	a.waitReady(t, time.Minute)
	a.waitLeader(t, 1, 30*time.Second)
	b := r.startWatcher(t, store, le...)
	b.waitReady(t, time.Minute)
	waitTransition(t, src, 30*time.Second, firstSeen("api", d1))
	d2 := pushSingle(t, image, "api v2")
	r.restart(t, pod, "api", image, d2, 1, "Error", 1)
	waitTransition(t, src, 30*time.Second, changed("api", d1, d2, 1))
	time.Sleep(3 * time.Second) // b has had time to write, were it to
	aAll, _ := a.scrape(t)
	bAll, bText := b.scrape(t)
	if v := metric(bAll, "regcheck_watch_leader", nil); v != 0 {
		t.Errorf("the second replica's regcheck_watch_leader = %v while the first leads, want 0", v)
	}
	if v := metric(aAll, "regcheck_watch_writes_total", nil); v < 1 {
		t.Errorf("leader's regcheck_watch_writes_total = %v, want ≥ 1", v)
	}
	if v := metric(bAll, "regcheck_watch_writes_total", nil); v > 0 {
		t.Errorf("follower's regcheck_watch_writes_total = %v, want 0 (only the leader writes):\n%s", v, bText)
	}
	l, err := r.cs.CoordinationV1().Leases(r.ns).Get(ctx, "regcheck-watch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ptrString(l.Spec.HolderIdentity)

	a.stop(t, syscall.SIGKILL, 10*time.Second)
	killed := time.Now()
	d3 := pushSingle(t, image, "api v3")
	r.restart(t, pod, "api", image, d3, 2, "Error", 1)
	b.waitLeader(t, 1, lease+retry+20*time.Second)
	took := time.Since(killed)
	t.Logf("leader killed; the other replica led %v later (lease %v, retry %v)", took.Round(time.Millisecond), lease, retry)
	// The Lease expires at most lease after the kill; client-go's elector
	// retries every retry period with up to 1.2 of it as jitter; 3s slack
	// for a loaded machine.
	if limit := lease + retry*22/10 + 3*time.Second; took > limit {
		t.Errorf("takeover took %v, want within the lease duration (%v) plus a jittered retry period (limit %v)", took, lease, limit)
	}
	_, seen := waitTransition(t, src, 30*time.Second, changed("api", d2, d3, 2))
	t.Logf("the change made during the failover was in the ConfigMap %v after the kill", seen.Sub(killed).Round(time.Millisecond))
	if l, err = r.cs.CoordinationV1().Leases(r.ns).Get(ctx, "regcheck-watch", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if now := ptrString(l.Spec.HolderIdentity); now == holder || now == "" {
		t.Errorf("Lease holder %q after the failover, was %q", now, holder)
	}
	if bAll, _ = b.scrape(t); metric(bAll, "regcheck_watch_writes_total", nil) < 1 {
		t.Errorf("the new leader wrote nothing")
	}
	if code, _ := b.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, b.tail())
	}
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Bounds of TestWatchSIGKILL's loop: it stops after killRounds kills or
// killLoopBudget, whichever comes first.
const (
	killRounds     = 20
	killLoopBudget = 5 * time.Minute
	killFlush      = time.Second // the watchers' --flush-interval
	killSettle     = killFlush + 2*time.Second
)

// podState is what the API server showed for one owner's container from
// a moment on: the digest running after restarts restarts.
type podState struct {
	owner    string
	digest   string
	restarts int32
	from, to time.Time // shown from; replaced at (zero while current)
}

func (s podState) matches(tr watchTransition) bool {
	return tr.OwnerName == s.owner && tr.To == s.digest && tr.RestartCount == s.restarts
}

// statusChanger restarts a random owner's container onto its next digest
// every 200–500ms, keeping every state the API server showed.
type statusChanger struct {
	r       *watchRig
	owners  []string
	digests map[string][]string
	mu      sync.Mutex
	states  []podState
	current map[string]int // owner → index in states
}

func (c *statusChanger) run(t *testing.T, stop <-chan struct{}, rng *rand.Rand) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(200+rng.IntN(300)) * time.Millisecond):
		}
		owner := c.owners[rng.IntN(len(c.owners))]
		c.mu.Lock()
		prev := c.states[c.current[owner]]
		c.mu.Unlock()
		restarts := prev.restarts + 1
		digest := c.digests[owner][int(restarts)%len(c.digests[owner])]
		if err := kubeapi.PatchStatus(context.Background(), c.r.cs, c.r.ns, owner+"-5d9c8-x7k2p",
			restartedStatus(owner, c.r.ref(owner, "latest"), c.r.imageID(owner, digest), restarts, "Error", 1)); err != nil {
			t.Error(err)
			return
		}
		now := time.Now()
		c.mu.Lock()
		c.states[c.current[owner]].to = now
		c.states = append(c.states, podState{owner: owner, digest: digest, restarts: restarts, from: now})
		c.current[owner] = len(c.states) - 1
		c.mu.Unlock()
	}
}

// shownDuring are the states the API server showed at some time in
// [from, to].
func (c *statusChanger) shownDuring(from, to time.Time) []podState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []podState
	for _, s := range c.states {
		if !s.from.After(to) && (s.to.IsZero() || !s.to.Before(from)) {
			out = append(out, s)
		}
	}
	return out
}

// transitionKeys are a history's transitions as comparable strings.
func transitionKeys(h *watchHistory) map[string]bool {
	keys := map[string]bool{}
	for _, tr := range h.Transitions {
		keys[tr.String()+" "+tr.Time.String()] = true
	}
	return keys
}

// historyReader reads the history every 10ms while the loop runs: every
// read must parse (a write is never seen half done).
func historyReader(t *testing.T, src historySource, stop <-chan struct{}, reads *int) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if _, err := src(); err != nil {
			t.Errorf("a read during the kill loop: %v", err)
			return
		}
		*reads++
	}
}

// TestWatchSIGKILL kills the watcher with SIGKILL at random moments while
// statuses change, 20 times: the history always parses and never loses
// a transition or record it held; every state the API server showed while
// a watcher was ready, longer than a flush interval and a margin before the
// kill, is in the history after the kill; and once a last watcher runs,
// what runs now is recorded.
func TestWatchSIGKILL(t *testing.T) {
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -kill-seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 18))
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
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	store := []string{"--out", out}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	reads := 0
	wg.Add(2)
	go func() { defer wg.Done(); ch.run(t, stop, rng) }()
	go func() { defer wg.Done(); historyReader(t, src, stop, &reads) }()

	prev := &watchHistory{}
	kills, due := 0, 0
	begin := time.Now()
	for kills < killRounds && time.Since(begin) < killLoopBudget && !t.Failed() {
		// Durability, not retention: every transition is kept
		// (--history-limit 0), so that "never loses one it held" is exact.
		w := r.startWatcher(t, store, "--flush-interval", killFlush.String(), "--history-limit", "0")
		readyAt := waitReadyFor(w, time.Duration(rng.IntN(6000))*time.Millisecond)
		if w.exited() {
			t.Fatalf("the watcher exited by itself: %v\n%s", w.cmd.ProcessState, w.tail())
		}
		w.stop(t, syscall.SIGKILL, 10*time.Second)
		killedAt := time.Now()
		kills++
		h, err := src()
		if err != nil {
			t.Fatalf("after kill %d: %v", kills, err)
		}
		checkKept(t, kills, prev, h)
		if !readyAt.IsZero() && killedAt.Sub(readyAt) > killSettle {
			for _, s := range ch.shownDuring(readyAt, killedAt.Add(-killSettle)) {
				due++
				if !slices.ContainsFunc(h.Transitions, s.matches) {
					t.Errorf("kill %d: %s at %s after %d restarts was shown from %v to %v, the watcher ready since %v, killed at %v; not in the history",
						kills, s.owner, short(s.digest), s.restarts, s.from.Format(time.StampMilli), s.to.Format(time.StampMilli), readyAt.Format(time.StampMilli), killedAt.Format(time.StampMilli))
				}
			}
		}
		prev = h
	}
	close(stop)
	wg.Wait()
	t.Logf("%d kills in %v, %d status changes, %d reads of the history, %d states checked after their kill", kills, time.Since(begin).Round(time.Second), len(ch.states)-len(ch.owners), reads, due)
	if kills < killRounds {
		t.Errorf("only %d kills within %v", kills, killLoopBudget)
	}

	w := r.startWatcher(t, store, "--history-limit", "0")
	w.waitReady(t, time.Minute)
	for _, o := range ch.owners {
		s := ch.states[ch.current[o]]
		waitTransition(t, src, 30*time.Second, s.matches)
	}
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
	h, err := src()
	if err != nil {
		t.Fatal(err)
	}
	checkKept(t, kills+1, prev, h)
	t.Logf("final history: %d records, %d transitions", len(h.Records), len(h.Transitions))
}

// waitReadyFor polls /readyz until d has passed and returns when it first
// answered 200 (zero if it never did).
func waitReadyFor(w *watcher, d time.Duration) time.Time {
	var ready time.Time
	end := time.Now().Add(d)
	for time.Now().Before(end) && !w.exited() {
		if ready.IsZero() {
			if code, _, err := w.get("/readyz"); err == nil && code == http.StatusOK {
				ready = time.Now()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ready
}

// checkKept fails unless h holds every record and transition of prev.
func checkKept(t *testing.T, kill int, prev, h *watchHistory) {
	t.Helper()
	for _, rc := range prev.Records {
		if !slices.ContainsFunc(h.Records, func(a record.Record) bool { return a.Key == rc.Key }) {
			t.Errorf("after kill %d: record %+v is gone", kill, rc.Key)
		}
	}
	have := transitionKeys(h)
	for k := range transitionKeys(prev) {
		if !have[k] {
			t.Errorf("after kill %d: transition %s is gone", kill, k)
		}
	}
}
