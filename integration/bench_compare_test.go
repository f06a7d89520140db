//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// CraneBinary is the crane hack/build-bins.sh builds (its crane set).
const CraneBinary = "crane-v0.22.1"

// The comparison's state: issue 11's 1,000 images in 300 repositories.
const (
	compareImages = 1000
	compareRepos  = 300
	compareSeed   = 11
)

// Bounds of every load loop: the capacity probe's requests and time, and
// the time any one process may take.
const (
	probeRequests = 20000
	probeTime     = 8 * time.Second
	procTimeout   = 5 * time.Minute
)

// BenchmarkCompare generates 1,000 images in 300 repositories on the real
// distribution 3.1.2 (seeded; single images, buildx indexes with
// attestations, Docker manifest lists; 36 broken by the API and the
// registry's GC, 5 that lost only an attestation), then walks them with
// regcheck cold (--no-cache), regcheck warm (a primed --cache-dir),
// regcheck scan --storage over the registry's filesystem, a loop of
// `crane validate --fast` (one process per image, in turn) and the same
// under xargs -P 8, and probes the registry's own blob-HEAD capacity
// before and after (8 and 32 requests in flight). It prints one table:
// wall time, requests by kind (regcheck's own counts; crane's from the
// registry's access log), peak RSS of each process (GNU time's %M:
// ru_maxrss from wait4), broken found and false broken against what the
// generator knows, the ratio to the minimum of regcheck's design, and
// each run's share of the probed capacity. Times are printed, never asserted;
// regcheck's verdicts must equal the ground truth. Run it with
// -benchtime 1x (make bench does); each b.N repeats the five runs.
func BenchmarkCompare(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	crane, err := bins.Path(CraneBinary)
	if err != nil {
		b.Fatal(err)
	}
	regcheck := buildRegcheck(b)
	r, alog := startAccessLogged(b)
	st, refs, list := pushState(ctx, b, r, stateConfig{Images: compareImages, Repos: compareRepos, Seed: compareSeed, Damage: true})
	want := st.Count()
	b.Logf("pushed %d images in %d repositories in %v (seed %d): %d broken, %d at-risk, %d ok",
		len(st.Targets), compareRepos, st.Pushed.Round(time.Millisecond), compareSeed, want[types.Broken], want[types.AtRisk], want[types.OK])

	b.ResetTimer()
	var (
		runs  []compareRun
		probe []capacity
	)
	for range b.N {
		probe = probeCapacities(ctx, b, r.Host(), st.Present)
		cache := b.TempDir()
		runs = []compareRun{
			regcheckRun(ctx, b, alog, "regcheck --no-cache", "regcheck-cold", regcheck, "scan", "--no-cache", "--images-from", list),
			func() compareRun {
				regcheckRun(ctx, b, alog, "priming", "priming", regcheck, "scan", "--cache-dir", cache, "--images-from", list)
				return regcheckRun(ctx, b, alog, "regcheck, warm --cache-dir", "regcheck-warm", regcheck, "scan", "--cache-dir", cache, "--images-from", list)
			}(),
			regcheckRun(ctx, b, alog, "regcheck scan --storage", "regcheck-storage", regcheck, "scan", "--storage", r.Root, "--images-from", list),
			craneRun(ctx, b, alog, crane, refs, 1),
			craneRun(ctx, b, alog, crane, refs, 8),
		}
		probe = append(probe, probeCapacities(ctx, b, r.Host(), st.Present)...)
	}
	b.StopTimer()

	for i := range runs {
		runs[i].score(st)
	}
	printCompare(os.Stdout, st, runs, probe)
	for _, run := range runs[:3] { // regcheck's: the ground truth exactly
		if len(run.missed) > 0 || len(run.falseBroken) > 0 || run.atRisk != want[types.AtRisk] {
			b.Errorf("%s: %d of %d broken found (missed %v), false broken %v, %d at-risk (want %d)",
				run.name, run.broken, want[types.Broken], run.missed, run.falseBroken, run.atRisk, want[types.AtRisk])
		}
	}
	for _, run := range runs {
		b.ReportMetric(run.wall.Seconds(), run.unit+"-s")
	}
	b.ReportMetric(float64(runs[0].requests.Total()), "regcheck-cold-requests")
	b.ReportMetric(float64(st.Minimum().Total()), "minimum-requests")
	b.ReportMetric(maxRate(probe), "capacity-req/s")
}

// compareRun is one client's walk of every image.
type compareRun struct {
	name     string
	unit     string // the name in a benchmark metric
	wall     time.Duration
	requests requestCounts
	answered requestCounts   // requests that got an HTTP answer (regcheck's own count)
	fromLog  requestCounts   // what the registry's access log counted
	rss      int64           // the largest peak RSS of one process, bytes
	brokenOf map[string]bool // reference: the client called it broken (or failed)
	atRiskOf map[string]bool
	failOf   map[string]string // crane's FAIL message, by reference
	own      bool              // requests are the client's own counts

	broken, atRisk int
	missed         []string
	falseBroken    []string
}

// score compares a run's verdicts with the ground truth.
func (c *compareRun) score(st *benchState) {
	for _, t := range st.Targets {
		switch {
		case c.brokenOf[t.Ref] && t.Want == types.Broken:
			c.broken++
		case c.brokenOf[t.Ref]:
			c.falseBroken = append(c.falseBroken, t.Ref)
		case t.Want == types.Broken:
			c.missed = append(c.missed, t.Ref)
		}
		if c.atRiskOf[t.Ref] {
			c.atRisk++
		}
	}
}

// buildRegcheck builds the CLI into a temporary folder: its peak RSS is
// measured as a process of its own.
func buildRegcheck(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "regcheck")
	if out, err := releaseBuild(bin).CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// releaseBuild is the go build of cmd/regcheck into out as the release
// binaries and the image are built (hack/dist, hack/image): static, no
// symbol table or DWARF, kustomize's Go-plugin loader left out. What a
// test measures of the binary (its resident set above all: the pages of
// its text and read-only data that it touches are part of it) is then what
// runs in a cluster.
func releaseBuild(out string) *exec.Cmd {
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "kustomize_disable_go_plugin_support", "-ldflags", "-s -w", "-o", out, "./cmd/regcheck")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// startAccessLogged starts distribution 3.1.2 on 127.0.0.1 with its
// access log on, which counts every client's requests as the registry
// served them.
func startAccessLogged(tb testing.TB) (*registry.Registry, *accessLog) {
	tb.Helper()
	r := startEmpty(tb, registry.V3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := filepath.Dir(r.Root) // the registry rig keeps config.yml and registry.log beside storage
	conf := filepath.Join(dir, "config.yml")
	data, err := os.ReadFile(conf)
	if err != nil {
		tb.Fatal(err)
	}
	on := strings.Replace(string(data), "accesslog:\n    disabled: true", "accesslog:\n    disabled: false", 1)
	if on == string(data) {
		tb.Fatalf("%s: no access log setting to turn on:\n%s", conf, data)
	}
	if err := os.WriteFile(conf, []byte(on), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := r.Restart(ctx); err != nil {
		tb.Fatal(err)
	}
	return r, &accessLog{path: filepath.Join(dir, "registry.log")}
}

// accessLog counts the requests of the registry's access log (Apache
// combined format) written since mark.
type accessLog struct {
	path string
	off  int64
}

var accessLine = regexp.MustCompile(`"(GET|HEAD|PUT|POST|PATCH|DELETE) (\S+) HTTP/[0-9.]+" (\d{3}) `)

// mark starts counting once the log has settled: requests a client gave
// up on before (a probe's last) are logged after they end.
func (a *accessLog) mark() error {
	size, err := a.settled()
	a.off = size
	return err
}

// settled waits until the log stops growing (the registry logs a request
// after answering it), 5 seconds at most, and returns its size.
func (a *accessLog) settled() (int64, error) {
	var size int64 = -1
	for range 50 {
		fi, err := os.Stat(a.path)
		if err != nil {
			return 0, err
		}
		if fi.Size() == size {
			break
		}
		size = fi.Size()
		time.Sleep(100 * time.Millisecond)
	}
	return size, nil
}

// since counts the lines logged since mark by regcheck's request kinds.
func (a *accessLog) since() (requestCounts, error) {
	size, err := a.settled()
	if err != nil {
		return requestCounts{}, err
	}
	f, err := os.Open(a.path)
	if err != nil {
		return requestCounts{}, err
	}
	defer f.Close()
	var c requestCounts
	sc := bufio.NewScanner(io.NewSectionReader(f, a.off, size-a.off))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := accessLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		c.addKind(logKind(m[1], m[2]), 1)
	}
	return c, sc.Err()
}

// logKind names a logged request as regcheck's counter does.
func logKind(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	switch {
	case path == "/v2/" || path == "/v2":
		return "ping"
	case strings.Contains(path, "/manifests/") && method == http.MethodHead:
		return "manifest-head"
	case strings.Contains(path, "/manifests/") && method == http.MethodGet:
		return "manifest-get"
	case strings.Contains(path, "/blobs/") && method == http.MethodHead:
		return "blob-head"
	case strings.Contains(path, "/blobs/") && method == http.MethodGet:
		return "blob-get"
	}
	return "other"
}

// procRun is one finished process: its wall time, peak RSS and output.
type procRun struct {
	wall   time.Duration
	rss    int64 // peak RSS in bytes (of the largest of its processes); -1: not measured
	code   int
	stdout []byte
	stderr string
}

// timeBinary is GNU time, which reports a process's peak RSS: ru_maxrss
// from wait4, the largest of the process and the children it waited for.
// (The Go test process cannot read it itself: a child forked from it
// starts with the test's own high-water mark.)
const timeBinary = "/usr/bin/time"

// runProc runs a process to its end (procTimeout at most), under GNU
// time when there is one, for its peak RSS.
func runProc(ctx context.Context, stdin io.Reader, bin string, args ...string) (procRun, error) {
	ctx, cancel := context.WithTimeout(ctx, procTimeout)
	defer cancel()
	rssFile := ""
	if _, err := os.Stat(timeBinary); err == nil {
		f, err := os.CreateTemp("", "regcheck-rss-")
		if err != nil {
			return procRun{}, err
		}
		f.Close()
		defer os.Remove(f.Name())
		rssFile = f.Name()
		args = append([]string{"-f", "%M", "-o", rssFile, bin}, args...)
		bin = timeBinary
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	start := time.Now()
	err := cmd.Run()
	p := procRun{wall: time.Since(start), rss: -1, stdout: out.Bytes(), stderr: errb.String()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return p, fmt.Errorf("%s: %w", filepath.Base(bin), err)
	}
	p.code = cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		return p, fmt.Errorf("%s %s: %w", filepath.Base(bin), strings.Join(args, " "), ctx.Err())
	}
	if rssFile != "" {
		// GNU time writes "Command exited with non-zero status N" first
		// when the process failed; the figure (kilobytes) is the last line.
		data, err := os.ReadFile(rssFile)
		lines := strings.Fields(string(data))
		if err != nil || len(lines) == 0 {
			return p, fmt.Errorf("reading %s's peak RSS: %v %q", filepath.Base(bin), err, data)
		}
		kb, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
		if err != nil {
			return p, fmt.Errorf("reading peak RSS: %w", err)
		}
		p.rss = kb << 10
	}
	return p, nil
}

// regcheckRun runs the regcheck binary with args and -o json, and reads
// its verdicts and its own request counts.
func regcheckRun(ctx context.Context, b *testing.B, alog *accessLog, title, unit, bin string, args ...string) compareRun {
	b.Helper()
	if err := alog.mark(); err != nil {
		b.Fatal(err)
	}
	p, err := runProc(ctx, nil, bin, append(args, "-o", "json")...)
	if err != nil {
		b.Fatal(err)
	}
	var doc report.Document
	if err := json.Unmarshal(p.stdout, &doc); err != nil || (p.code != 0 && p.code != 1) {
		b.Fatalf("%s: exit %d, %v\n%s", title, p.code, err, p.stderr)
	}
	run := compareRun{name: title, unit: unit, wall: p.wall, rss: p.rss, own: true, brokenOf: map[string]bool{}, atRiskOf: map[string]bool{}}
	for _, rc := range doc.Summary.RequestLog {
		run.requests.addKind(rc.Kind, rc.Count)
		if rc.Status != "error" { // a TLS attempt on a plain-HTTP host gets no HTTP answer
			run.answered.addKind(rc.Kind, rc.Count)
		}
	}
	for _, im := range doc.Images {
		run.brokenOf[im.Reference] = im.Verdict == types.Broken
		run.atRiskOf[im.Reference] = im.Verdict == types.AtRisk
	}
	if run.fromLog, err = alog.since(); err != nil {
		b.Fatal(err)
	}
	return run
}

// craneRun runs crane validate --fast --remote over every image: in a
// shell loop, one process per image in turn, or under xargs -P jobs (jobs
// > 1). An image crane printed no PASS line for is broken: FAIL, or it
// could not read the image.
func craneRun(ctx context.Context, b *testing.B, alog *accessLog, crane string, refs []string, jobs int) compareRun {
	b.Helper()
	if err := alog.mark(); err != nil {
		b.Fatal(err)
	}
	run := compareRun{name: "crane validate --fast loop", unit: "crane-loop", brokenOf: map[string]bool{}, failOf: map[string]string{}}
	args := []string{"sh", "-c", `while IFS= read -r ref; do "$0" validate --fast --remote "$ref"; done`, crane}
	if jobs > 1 {
		run.name, run.unit = fmt.Sprintf("crane under xargs -P %d", jobs), "crane-xargs"
		args = []string{"xargs", "-P", strconv.Itoa(jobs), "-n", "1", crane, "validate", "--fast", "--remote"}
	}
	p, err := runProc(ctx, strings.NewReader(strings.Join(refs, "\n")+"\n"), args[0], args[1:]...)
	if err != nil {
		b.Fatal(err)
	}
	run.wall, run.rss = p.wall, p.rss
	passed := map[string]bool{}
	for line := range strings.Lines(string(p.stdout)) {
		line = strings.TrimSpace(line)
		if ref, ok := strings.CutPrefix(line, "PASS: "); ok {
			passed[ref] = true
		}
		if rest, ok := strings.CutPrefix(line, "FAIL: "); ok {
			if ref, msg, ok := strings.Cut(rest, ": "); ok {
				run.failOf[ref] = msg
			}
		}
	}
	for _, ref := range refs {
		run.brokenOf[ref] = !passed[ref]
	}
	if run.fromLog, err = alog.since(); err != nil {
		b.Fatal(err)
	}
	run.requests = run.fromLog
	return run
}

// capacity is what a probe of blob HEADs measured.
type capacity struct {
	requests int
	took     time.Duration
	inFlight int
}

func (c capacity) rate() float64 { return float64(c.requests) / c.took.Seconds() }

// maxRate is the registry's capacity: the most any probe got.
func maxRate(cs []capacity) float64 {
	most := 0.0
	for _, c := range cs {
		most = max(most, c.rate())
	}
	return most
}

// probeInFlight are the probes' requests in flight: regcheck's default
// --concurrency, and four times that, in case 8 do not keep the registry
// busy.
var probeInFlight = []int{8, 32}

// probeCapacities probes at each of probeInFlight.
func probeCapacities(ctx context.Context, b *testing.B, host string, present []string) []capacity {
	b.Helper()
	var out []capacity
	for _, n := range probeInFlight {
		out = append(out, probeCapacity(ctx, b, host, present, n))
	}
	return out
}

// probeEnv carries a capacity probe's orders to TestProbeCapacity, in
// the process of its own that probeCapacity starts: host, in-flight
// requests, and the file of repository@digest blobs to ask for.
const probeEnv = "REGCHECK_BENCH_PROBE"

// probeCapacity measures how many blob HEADs per second the registry
// answers with inFlight requests at once (regcheck's default
// --concurrency): probeRequests of them, or as many as probeTime allows,
// over the blobs it serves. The probe runs in a process of its own, as
// regcheck and crane do, not in this one (whose heap and goroutines
// would slow it).
func probeCapacity(ctx context.Context, b *testing.B, host string, present []string, inFlight int) capacity {
	b.Helper()
	list := filepath.Join(b.TempDir(), "blobs.txt")
	if err := os.WriteFile(list, []byte(strings.Join(present, "\n")), 0o644); err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTime+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-test.run", "^TestProbeCapacity$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s", probeEnv, host, inFlight, list))
	out, err := cmd.CombinedOutput()
	m := probeLine.FindSubmatch(out)
	if err != nil || m == nil {
		b.Fatalf("capacity probe: %v\n%s", err, out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	ns, _ := strconv.ParseInt(string(m[2]), 10, 64)
	return capacity{requests: n, took: time.Duration(ns), inFlight: inFlight}
}

// probeLine is what TestProbeCapacity prints.
var probeLine = regexp.MustCompile(`probe: (\d+) HEADs in (\d+) ns`)

// TestProbeCapacity is BenchmarkCompare's capacity probe, in a process
// of its own; without its orders in the environment it skips.
func TestProbeCapacity(t *testing.T) {
	orders := os.Getenv(probeEnv)
	if orders == "" {
		t.Skip("BenchmarkCompare runs it")
	}
	var (
		host, list string
		inFlight   int
	)
	if _, err := fmt.Sscanf(orders, "%s %d %s", &host, &inFlight, &list); err != nil {
		t.Fatalf("%s=%q: %v", probeEnv, orders, err)
	}
	data, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	present := strings.Split(string(data), "\n")
	ctx, cancel := context.WithTimeout(context.Background(), probeTime)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight, DisableCompression: true}}
	defer client.CloseIdleConnections()
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		bad        atomic.Value
	)
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= probeRequests {
					return
				}
				repo, dg, _ := strings.Cut(present[int(i)%len(present)], "@")
				req, _ := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+host+"/v2/"+repo+"/blobs/"+dg, nil)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						bad.Store(err.Error())
					}
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					bad.Store(fmt.Sprintf("HEAD %s: %s", req.URL.Path, resp.Status))
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if msg := bad.Load(); msg != nil {
		t.Fatalf("capacity probe: %v", msg)
	}
	fmt.Printf("probe: %d HEADs in %d ns\n", done.Load(), took.Nanoseconds())
}

// printCompare prints the comparison table and the figures around it.
func printCompare(w io.Writer, st *benchState, runs []compareRun, probe []capacity) {
	minimum := st.Minimum()
	want := st.Count()
	capRate := maxRate(probe)
	fmt.Fprintf(w, "\n%d images in %d repositories on distribution v3.1.2, 127.0.0.1 (seed %d, pushed in %v): %d broken, %d at-risk (attestation only), %d ok\n",
		len(st.Targets), compareRepos, compareSeed, st.Pushed.Round(time.Second), want[types.Broken], want[types.AtRisk], want[types.OK])
	fmt.Fprintf(w, "minimum of regcheck's design: %s requests (%d ping, %d tag HEADs, %d manifest reads, %d blob HEADs)\n",
		thousands(minimum.Total()), minimum.Ping, minimum.ManifestHead, minimum.ManifestGet, minimum.BlobHead)
	var rates []string
	for i, p := range probe {
		when := "before"
		if i >= len(probeInFlight) {
			when = "after"
		}
		rates = append(rates, fmt.Sprintf("%d in flight %s/s %s", p.inFlight, thousands(int(p.rate())), when))
	}
	fmt.Fprintf(w, "registry blob-HEAD capacity (at most %s HEADs or %v a probe): %s; capacity %s/s\n\n",
		thousands(probeRequests), probeTime, strings.Join(rates, ", "), thousands(int(capRate)))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := 0
	for _, r := range runs {
		width = max(width, len(r.name))
	}
	fmt.Fprintf(tw, "%-*s\t", width, "run")
	fmt.Fprintln(tw, "wall\t×wall\trequests\tping\tmanifest HEAD\tmanifest GET\tblob HEAD\tblob GET\tother\t×minimum\treq/s\t% capacity\tpeak RSS\tbroken found\tfalse broken\t")
	cold := runs[0].wall
	for _, r := range runs {
		c := r.requests
		total, ratio, rate, share := "0", "-", "-", "-"
		if n := c.Total(); n > 0 {
			total = thousands(n)
			ratio = fmt.Sprintf("%.2f", float64(n)/float64(minimum.Total()))
			perSec := float64(n) / r.wall.Seconds()
			rate = thousands(int(perSec))
			share = fmt.Sprintf("%.0f%%", 100*perSec/capRate)
		}
		rss := rssText(r.rss)
		fmt.Fprintf(tw, "%s\t%.2fs\t%.1f\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d/%d\t%d\t\n",
			fmt.Sprintf("%-*s", width, r.name), r.wall.Seconds(), float64(r.wall)/float64(cold), total, c.Ping, c.ManifestHead, c.ManifestGet, c.BlobHead, c.BlobGet, c.Other,
			ratio, rate, share, rss, r.broken, want[types.Broken], len(r.falseBroken))
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "×wall: the run's wall time over regcheck --no-cache's; ×minimum: its requests over the minimum; % capacity: its requests per second over the capacity, the best probe's.")
	fmt.Fprintln(w, "regcheck's rows count its own requests (the registry's access log agrees, but for the https ping that a plain-HTTP host never answers: "+agree(runs)+"); crane's come from that log.")
	fmt.Fprintln(w, "peak RSS: GNU time's %M (ru_maxrss from wait4), of the regcheck process; for crane, of the largest crane process (or sh, xargs).")
	for _, r := range runs {
		if len(r.falseBroken) > 0 {
			fmt.Fprintf(w, "%s calls %d images broken that are not: %s", r.name, len(r.falseBroken), whyOf(st, r.falseBroken))
			if msg := r.failOf[r.falseBroken[0]]; msg != "" {
				if len(msg) > 160 {
					msg = msg[:160] + "…"
				}
				fmt.Fprintf(w, "; for one, FAIL: %s", msg)
			}
			fmt.Fprintln(w)
		}
		if len(r.missed) > 0 {
			fmt.Fprintf(w, "%s misses %d broken images: %s\n", r.name, len(r.missed), whyOf(st, r.missed))
		}
	}
}

// rssText writes a peak RSS in MiB; n/a when it was not measured.
func rssText(rss int64) string {
	if rss < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MiB", float64(rss)/(1<<20))
}

// agree says whether the access log counted what regcheck counted itself.
func agree(runs []compareRun) string {
	var out []string
	for _, r := range runs {
		if !r.own || r.requests.Total() == 0 && r.fromLog.Total() == 0 {
			continue
		}
		if r.answered == r.fromLog {
			out = append(out, r.name+" yes")
		} else {
			out = append(out, fmt.Sprintf("%s no, %+v logged", r.name, r.fromLog))
		}
	}
	if len(out) == 0 {
		return "no HTTP run"
	}
	return strings.Join(out, "; ")
}

// whyOf summarizes the ground truth of refs: how many of each kind.
func whyOf(st *benchState, refs []string) string {
	n := map[string]int{}
	for _, t := range st.Targets {
		if slices.Contains(refs, t.Ref) {
			why := t.Why
			if why == "" {
				why = "intact"
			}
			n[fmt.Sprintf("%s, %s", t.Want, why)]++
		}
	}
	var out []string
	for k, v := range n {
		out = append(out, fmt.Sprintf("%d %s", v, k))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// thousands writes n with comma separators: 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
