//go:build integration

package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/yamlfile"
)

var killSeed = flag.Uint64("kill-seed", 0, "seed of TestKill's kill delays and cluster changes (0: time-based; the seed used is logged)")

// Bounds of the kill loops: each stops after wantKills kills landed, or
// maxRuns runs, or killBudget, whichever comes first.
const (
	wantKills  = 50
	maxRuns    = 200
	killBudget = 6 * time.Minute
)

// TestKill kills `regcheck pin --write` and `regcheck record` with SIGKILL
// at random moments (issue 8, point 11): every file must be its old or its
// new version, and no record written by a completed run may be lost.
func TestKill(t *testing.T) {
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -kill-seed=%d)", seed, seed)
	bin := filepath.Join(t.TempDir(), "regcheck")
	start := time.Now()
	build := exec.Command("go", "build", "-o", bin, "./cmd/regcheck")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))

	t.Run("pin --write", func(t *testing.T) { killPin(t, bin, rand.New(rand.NewPCG(seed, 1))) })
	t.Run("record --out", func(t *testing.T) { killRecord(t, bin, rand.New(rand.NewPCG(seed, 2)), false) })
	t.Run("record --configmap", func(t *testing.T) { killRecord(t, bin, rand.New(rand.NewPCG(seed, 3)), true) })
}

// proc is one run of the regcheck binary.
type proc struct {
	killed         bool          // the SIGKILL found it running
	elapsed        time.Duration // from start to exit
	code           int           // exit code when not killed
	stdout, stderr string
}

// runBin runs bin with args and sends it SIGKILL after delay unless it has
// exited by then (delay < 0: never). It returns once the process is gone.
func runBin(t *testing.T, bin string, delay time.Duration, args ...string) proc {
	t.Helper()
	return runBinWhen(t, bin, nil, delay, args...)
}

// runBinWhen is runBin whose delay starts once when reports true (polled
// every 100µs from the start); when == nil starts it at once.
func runBinWhen(t *testing.T, bin string, when func() bool, delay time.Duration, args ...string) proc {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if delay < 0 {
		delay = 2 * time.Minute // a hung run is a failure, not a wait forever
	}
	var poll <-chan time.Time
	timer := time.NewTimer(delay)
	if when != nil {
		timer.Stop()
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		poll = tick.C
	}
	hung := time.After(2 * time.Minute)
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-poll:
			if when() {
				poll = nil
				timer.Reset(delay)
			}
		case <-hung:
			timer.Reset(0)
		case <-timer.C:
			cmd.Process.Signal(syscall.SIGKILL)
			err = <-done
			break wait
		}
	}
	timer.Stop()
	p := proc{elapsed: time.Since(start), stdout: out.String(), stderr: errb.String()}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	p.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	p.code = cmd.ProcessState.ExitCode()
	return p
}

// uniform returns a duration uniformly in [lo, hi].
func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// tempFiles lists the files under dir that atomicfile leaves when killed
// between creating its temporary file and renaming it (".NAME.tmp-*").
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp-") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// killPin builds a tree of manifests, pins a copy of it cleanly to learn
// each file's new content and the run's timing, then kills pin --write on
// the old tree again and again.
func killPin(t *testing.T, bin string, rng *rand.Rand) {
	r, imgs := startRegistry(t, registry.V3)
	var refs []string
	for _, im := range imgs {
		refs = append(refs, fmt.Sprintf("%s/gc/%s:v1", r.Host(), im.Name))
	}
	for i := range 3 {
		ref := fmt.Sprintf("%s/kill/svc:v%d", r.Host(), i+1)
		pushSingle(t, ref, fmt.Sprintf("kill test svc build %d", i+1))
		refs = append(refs, ref)
	}
	const files, folders = 400, 10
	old := map[string][]byte{} // relative path → content
	for i := range files {
		a, b := refs[i%len(refs)], refs[(i*7+3)%len(refs)]
		content := fmt.Sprintf(`# service %04d: owned by team %02d
apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc%04d
spec:
  template:
    spec:
      containers:
        - name: app
          image: %s # keep this comment
        - name: sidecar
          image: "%s"
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: svc%04d-job
spec:
  schedule: "@hourly"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - {name: job, image: '%s'}
`, i, i%folders, i, a, b, i, refs[(i*3+1)%len(refs)])
		old[filepath.Join(fmt.Sprintf("team%02d", i%folders), fmt.Sprintf("svc%04d.yaml", i))] = []byte(content)
	}
	names := slices.Sorted(maps.Keys(old))
	restore := func(dir string) {
		t.Helper()
		for _, p := range tempFiles(t, dir) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, old[n], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Clean runs on copies: the new content, the run time, and when the
	// writes happen (from the files' mtimes).
	var newContent map[string][]byte
	var runTimes, writeFrom, writeTo []time.Duration
	for range 3 {
		dir := t.TempDir()
		restore(dir)
		start := time.Now()
		p := runBin(t, bin, -1, "pin", "--write", dir)
		if p.killed || p.code != 0 {
			t.Fatalf("clean pin --write: exit %d\n%s", p.code, p.stderr)
		}
		got := map[string][]byte{}
		first, last := time.Duration(1<<62), time.Duration(0)
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(b, old[n]) {
				t.Fatalf("clean run left %s unpinned:\n%s", n, b)
			}
			got[n] = b
			fi, _ := os.Stat(filepath.Join(dir, n))
			at := fi.ModTime().Sub(start)
			first, last = min(first, at), max(last, at)
		}
		if left := tempFiles(t, dir); len(left) > 0 {
			t.Fatalf("a clean run left temporary files: %v", left)
		}
		if newContent == nil {
			newContent = got
		} else {
			for _, n := range names {
				if !bytes.Equal(got[n], newContent[n]) {
					t.Fatalf("two clean runs pinned %s differently", n)
				}
			}
		}
		runTimes, writeFrom, writeTo = append(runTimes, p.elapsed), append(writeFrom, first), append(writeTo, last)
	}
	slices.Sort(runTimes)
	slices.Sort(writeFrom)
	slices.Sort(writeTo)
	runTime, w0, w1 := runTimes[1], writeFrom[1], writeTo[1]
	t.Logf("%d files in %d folders, %d references each, %d tags; clean pin --write: median %v (runs %v), files written from %v to %v after start",
		files, folders, 3, len(refs), runTime.Round(time.Millisecond), roundAll(runTimes), w0.Round(time.Millisecond), w1.Round(time.Millisecond))

	dir := t.TempDir()
	var (
		kills, completed, before, mid, after, withTemp, strayTemps int
		filesChecked, violations, reruns                           int
	)
	violation := func(format string, args ...any) {
		t.Helper()
		violations++
		t.Errorf(format, args...)
	}
	check := func(what string) (nNew int) {
		t.Helper()
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(dir, n))
			filesChecked++
			switch {
			case err != nil:
				violation("%s: %s: %v", what, n, err)
			case bytes.Equal(b, newContent[n]):
				nNew++
			case !bytes.Equal(b, old[n]):
				violation("%s: %s is neither its old nor its new version:\n%s", what, n, b)
			}
		}
		// Whatever is left over must not be read as a manifest.
		listed, errs := yamlfile.Files([]string{dir}, nil)
		if len(errs) > 0 || len(listed) != len(names) {
			violation("%s: regcheck would read %d files (errors %v), want the %d manifests", what, len(listed), errs, len(names))
		}
		return nNew
	}
	deadline := time.Now().Add(killBudget)
	for i := 0; kills < wantKills && i < maxRuns && time.Now().Before(deadline); i++ {
		restore(dir)
		// Even runs: anywhere from the start to past the run time; odd
		// runs: inside the measured write phase, where a kill matters most.
		delay := uniform(rng, 0, runTime*5/4)
		if i%2 == 1 {
			delay = uniform(rng, w0, w1)
		}
		p := runBin(t, bin, delay, "pin", "--write", dir)
		if !p.killed {
			completed++
			if p.code != 0 {
				t.Fatalf("run %d finished before its kill at %v: exit %d\n%s", i, delay, p.code, p.stderr)
			}
		}
		left := tempFiles(t, dir)
		nNew := check(fmt.Sprintf("run %d (kill at %v)", i, delay))
		phase := "finished"
		if p.killed {
			kills++
			switch {
			case nNew == 0 && len(left) == 0:
				phase, before = "before writing", before+1
			case nNew == len(names):
				phase, after = "after writing", after+1
			default:
				phase, mid = "mid-write", mid+1
			}
			if len(left) > 0 {
				withTemp++
				strayTemps += len(left)
			}
		}
		t.Logf("run %3d: kill at %7v, ran %7v: %-14s %3d/%d files new, %d temp files left", i, delay.Round(time.Microsecond),
			p.elapsed.Round(time.Microsecond), phase, nNew, len(names), len(left))

		// After every fifth landed kill: an uninterrupted run completes the
		// job, and a third run changes nothing.
		if p.killed && kills%5 == 0 {
			reruns++
			p := runBin(t, bin, -1, "pin", "--write", dir)
			if p.killed || p.code != 0 {
				t.Fatalf("pin --write after a kill: exit %d\n%s", p.code, p.stderr)
			}
			if n := check(fmt.Sprintf("rerun after run %d", i)); n != len(names) {
				violation("rerun after run %d: %d of %d files pinned", i, n, len(names))
			}
			p = runBin(t, bin, -1, "pin", "--write", dir)
			if p.killed || p.code != 0 || p.stdout != "" {
				violation("third pin --write after run %d: exit %d, stdout %q\n%s", i, p.code, p.stdout, p.stderr)
			}
			if n := check(fmt.Sprintf("third run after run %d", i)); n != len(names) {
				violation("third run after run %d: %d of %d files pinned", i, n, len(names))
			}
		}
	}
	t.Logf("pin --write: %d kills delivered (%d before writing, %d mid-write, %d after the last write; %d left temporary files, %d in all), %d runs finished before their kill, %d rerun+idempotency checks; %d file versions checked; %d violations",
		kills, before, mid, after, withTemp, strayTemps, completed, reruns, filesChecked, violations)
	if kills < wantKills {
		t.Errorf("only %d kills landed (want %d)", kills, wantKills)
	}
}

// killRecord runs regcheck record against a real API server while the pods
// change, killing most runs and completing the rest, and checks after every
// run that the history parses and holds every record of the completed runs.
func killRecord(t *testing.T, bin string, rng *rand.Rand, configMap bool) {
	ctx := t.Context()
	kc := startCluster(t)
	admin := clientFor(t, kc.Config)
	if err := (kubeapi.Scenario{Namespace: "shop"}).Apply(ctx, admin); err != nil {
		t.Fatal(err)
	}
	const ns = "kill"
	// No controller-manager runs: the ServiceAccount admission needs "default" made by hand.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	digest := 0
	nextImageID := func(app string) string {
		digest++
		return fmt.Sprintf("127.0.0.1:5000/kill/%s@sha256:%064x", app, digest)
	}
	var apps []string // the workloads whose pod runs
	made := 0
	addApp := func() {
		name := fmt.Sprintf("app%03d", made)
		made++
		workload(t, ctx, admin, ns, name, "127.0.0.1:5000/kill/"+name+":v1", "IfNotPresent", "node-a", nextImageID(name))
		apps = append(apps, name)
	}
	for range 20 {
		addApp()
	}

	// The history, and what it must hold: every key a completed run (or
	// the seeding below) wrote, last seen no earlier than then.
	want := map[record.Key]time.Time{}
	var load func() (*record.History, error)
	var version func() string // changes when a run writes the history
	var args []string
	var folder string // where atomicfile's temporary files would be
	if configMap {
		st := &record.ConfigMap{Client: admin, Namespace: ns, Name: "history"}
		load = func() (*record.History, error) { return st.Load(ctx) }
		version = func() string {
			cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "history", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return cm.ResourceVersion
		}
		args = []string{"--configmap", ns + "/history"}
	} else {
		folder = t.TempDir()
		path := filepath.Join(folder, "history.json")
		st := &record.File{Path: path}
		load = func() (*record.History, error) {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			return record.Decode(b)
		}
		version = func() string {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%x", sha256.Sum256(b))
		}
		args = []string{"--out", path}
		// A long history, as a CronJob builds over months: it makes the
		// load-merge-write part of each run long enough for kills to land in.
		const seeded = 8000
		old := make([]record.Record, seeded)
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range old {
			old[i] = record.Record{
				Key: record.Key{Cluster: "old", Namespace: "ns", OwnerKind: "Deployment", OwnerName: fmt.Sprintf("old-%05d", i),
					Container: "c", Digest: fmt.Sprintf("sha256:%064x", 1<<40+i)},
				FirstSeen: t0, LastSeen: t0.Add(time.Duration(i) * time.Minute), Pod: fmt.Sprintf("old-%05d-x", i), Image: "example.com/old:1",
			}
			want[old[i].Key] = old[i].LastSeen
		}
		if _, err := st.Update(ctx, func(h *record.History) error { h.Records = old; return nil }); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		t.Logf("seeded %s with %d records (%d bytes)", path, seeded, fi.Size())
	}
	args = append([]string{"record", "-A", "--kubeconfig", kc.Kubeconfig, "-o", "json"}, args...)

	var (
		kills, completed, before, landed, changed, strayTemps int
		recordsChecked, violations                            int
	)
	seenTemp := map[string]bool{}
	newTemps := func() []string {
		if folder == "" {
			return nil
		}
		var out []string
		for _, f := range tempFiles(t, folder) {
			if !seenTemp[f] {
				out = append(out, f)
			}
		}
		return out
	}
	violation := func(format string, args ...any) {
		t.Helper()
		violations++
		t.Errorf(format, args...)
	}
	lastKeys := map[record.Key]bool{}
	check := func(what string) (keys int) {
		t.Helper()
		h, err := load()
		if err != nil {
			violation("%s: the history does not parse: %v", what, err)
			return 0
		}
		got := make(map[record.Key]time.Time, len(h.Records))
		for _, r := range h.Records {
			got[r.Key] = r.LastSeen
		}
		for k, seen := range want {
			recordsChecked++
			if last, ok := got[k]; !ok {
				violation("%s: record lost: %+v", what, k)
			} else if last.Before(seen) {
				violation("%s: %+v last seen %v, but a completed run saw it at %v", what, k, last, seen)
			}
		}
		// Also never shrinks: what a killed run managed to write stays.
		for k := range lastKeys {
			if _, ok := got[k]; !ok {
				violation("%s: a record seen in the history earlier is gone: %+v", what, k)
			}
		}
		lastKeys = make(map[record.Key]bool, len(got))
		for k := range got {
			lastKeys[k] = true
		}
		return len(got)
	}
	// complete runs record to the end and adds what it reports to want.
	complete := func(what string) proc {
		t.Helper()
		p := runBin(t, bin, -1, args...)
		if p.killed || p.code != 0 {
			t.Fatalf("%s: record: exit %d\n%s", what, p.code, p.stderr)
		}
		var doc struct {
			Time    time.Time
			Entries []recordresult.Entry
			Trimmed int
		}
		if err := json.Unmarshal([]byte(p.stdout), &doc); err != nil {
			t.Fatalf("%s: %v in:\n%s", what, err, p.stdout)
		}
		if doc.Trimmed != 0 || len(doc.Entries) == 0 {
			t.Fatalf("%s: %d entries, %d trimmed", what, len(doc.Entries), doc.Trimmed)
		}
		for _, e := range doc.Entries {
			k := record.Key{Cluster: e.Cluster, Namespace: e.Namespace, OwnerKind: e.OwnerKind, OwnerName: e.OwnerName, Container: e.Container, Digest: e.Digest}
			if e.Time.After(want[k]) {
				want[k] = e.Time
			}
		}
		completed++
		return p
	}
	// change moves the pod set on: a restart onto a new digest, now and
	// then a new workload or a deleted pod.
	change := func() {
		t.Helper()
		app := apps[rng.IntN(len(apps))]
		switch x := rng.IntN(10); {
		case x == 0:
			addApp()
		case x == 1 && len(apps) > 5:
			err := admin.CoreV1().Pods(ns).Delete(ctx, app+"-5d9c8-x7k2p", metav1.DeleteOptions{})
			if err == nil {
				apps = slices.DeleteFunc(apps, func(a string) bool { return a == app })
				return
			}
			fallthrough
		default:
			if err := kubeapi.SetImageID(ctx, admin, ns, app+"-5d9c8-x7k2p", app, nextImageID(app)); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The run time that spreads the kills is the median of every run that
	// finished: measuring runs, completed runs and runs that beat their kill.
	var runTimes []time.Duration
	median := func() time.Duration {
		s := slices.Sorted(slices.Values(runTimes))
		return s[len(s)/2]
	}
	for i := range 5 {
		change()
		what := fmt.Sprintf("measuring run %d", i)
		runTimes = append(runTimes, complete(what).elapsed)
		check(what)
	}
	// Every third kill is aimed at the write. In a file that is the moment
	// the run's temporary file appears. A ConfigMap's write is one request:
	// a staircase aims at it; a kill that finds the history unwritten moves
	// the aim later, one that finds it written (or the run over) earlier.
	aim := median() * 3 / 4
	step := max(time.Millisecond, median()/50)
	t.Logf("record: median of %d runs %v (runs %v); first aim %v, step %v", len(runTimes), median().Round(time.Millisecond),
		roundAll(runTimes), aim.Round(time.Millisecond), step.Round(time.Microsecond))

	deadline := time.Now().Add(killBudget)
	for i := 0; kills < wantKills && i < maxRuns && time.Now().Before(deadline); i++ {
		change()
		what := fmt.Sprintf("run %d", i)
		if i%3 == 2 {
			p := complete(what)
			runTimes = append(runTimes, p.elapsed)
			t.Logf("run %3d: completed in %v, history holds %d records", i, p.elapsed.Round(time.Microsecond), check(what))
			if !configMap {
				// A completed run holds the lock: it removes what killed runs left.
				if left := tempFiles(t, folder); len(left) > 0 {
					t.Errorf("%s: a completed run left %d temporary files of killed runs: %v", what, len(left), left)
				}
			}
			continue
		}
		v := version()
		delay := uniform(rng, 0, median()*5/4)
		aimed := i%3 == 1
		var when func() bool
		switch {
		case aimed && folder != "":
			// Once the run's temporary file appears, plus up to 5ms:
			// inside the write, its sync, or just after the rename.
			when = func() bool { return len(newTemps()) > 0 }
			delay = uniform(rng, 0, 5*time.Millisecond)
		case aimed:
			delay = max(0, aim-2*step+uniform(rng, 0, 4*step))
		}
		p := runBinWhen(t, bin, when, delay, args...)
		if !p.killed {
			if p.code != 0 {
				t.Fatalf("%s finished before its kill at %v: exit %d\n%s", what, delay, p.code, p.stderr)
			}
			// Its output is not added to want: the next completed run's
			// records stand for it.
			runTimes = append(runTimes, p.elapsed)
		}
		n := check(what)
		left := newTemps() // temporary files this run left
		for _, f := range left {
			seenTemp[f] = true
		}
		var phase string
		switch {
		case !p.killed:
			phase = "finished"
		case len(left) > 0:
			phase, landed, strayTemps = "mid-write", landed+1, strayTemps+len(left)
		case version() != v:
			phase, changed = "after the write", changed+1
		default:
			phase, before = "before the write", before+1
		}
		if p.killed {
			kills++
		}
		if aimed && when == nil {
			switch phase {
			case "before the write":
				aim += step
			case "after the write", "finished":
				aim = max(0, aim-step)
			}
		}
		at := fmt.Sprintf("kill at %v", delay.Round(time.Microsecond))
		if when != nil {
			at = fmt.Sprintf("kill %v after the temporary file appeared", delay.Round(time.Microsecond))
		}
		t.Logf("run %3d: %s, ran %v: %s; the history holds %d records", i, at, p.elapsed.Round(time.Microsecond), phase, n)
	}
	// A last completed run after all the kills.
	complete("final run")
	check("final run")
	if configMap {
		t.Logf("record --configmap: %d kills delivered (%d before the update, %d after it; the update is one API request), %d completed runs; %d records expected, %d record checks; %d violations",
			kills, before, changed, completed, len(want), recordsChecked, violations)
	} else {
		t.Logf("record --out: %d kills delivered (%d before the write, %d mid-write leaving %d temporary files, %d after the rename), %d completed runs; %d records expected, %d record checks; %d violations",
			kills, before, landed, strayTemps, changed, completed, len(want), recordsChecked, violations)
	}
	if kills < wantKills {
		t.Errorf("only %d kills landed (want %d)", kills, wantKills)
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
