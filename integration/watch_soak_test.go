//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
)

// watchSoakSample is every how often BenchmarkWatchSoak reads the
// watcher's memory.
const watchSoakSample = 10 * time.Minute

// BenchmarkWatchSoak runs `regcheck watch` over BenchmarkWatch's 10,000
// pods while statuses change without a pause for $WATCH_SOAK_DURATION (60m
// for the hour; skipped when unset) at $WATCH_SOAK_RATE changes a
// second (default 200, BenchmarkWatch's), with --interval 10m so that the
// periodic deep walk comes six times in an hour. Every 10 minutes it reads
// the watcher's resident set (VmRSS), its peak (VmHWM) and its live heap
// after a forced GC, and reports those at 10 minutes and at the end: memory
// that grows with churn shows as the end's figures above the 10 minutes'.
// Nothing is asserted on memory or time. Run it with -benchtime 1x and a
// -timeout above the duration (make soak).
func BenchmarkWatchSoak(b *testing.B) {
	dur, rate := watchSoakParams(b)
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
	reg, _ := startAccessLogged(b)
	host := reg.Host()
	digests := watchBenchImages(b, host)
	if err := createNamespace(ctx, cs, watchBenchNS); err != nil {
		b.Fatal(err)
	}
	pods := watchBenchPodList(host, digests)
	cctx, cancel := context.WithTimeout(ctx, watchBenchCreate)
	n, err := kubeapi.CreatePods(cctx, cs, pods, watchBenchWorkers)
	cancel()
	if n == 0 {
		b.Fatal(err)
	}
	rig := &watchRig{kc: kc, cs: cs, reg: reg, bin: bin, ns: watchBenchNS}
	out := filepath.Join(b.TempDir(), "history.json")
	w := rig.startWatcher(b, []string{"--out", out}, "--interval", "10m", "--debug-pprof")
	w.waitReady(b, 5*time.Minute)
	samples := soakChurn(b, w, newChurn(n), cs, host, digests, dur, rate)
	if code, took := w.stop(b, syscall.SIGTERM, 30*time.Second); code != 0 {
		b.Errorf("exit %d after SIGTERM (%v):\n%s", code, took, w.tail())
	}
	reportSoak(b, samples)
}

// watchSoakParams reads $WATCH_SOAK_DURATION and $WATCH_SOAK_RATE.
func watchSoakParams(b *testing.B) (time.Duration, int) {
	v := os.Getenv("WATCH_SOAK_DURATION")
	if v == "" {
		b.Skip("WATCH_SOAK_DURATION is not set (60m for an hour of churn: make soak)")
	}
	dur, err := time.ParseDuration(v)
	if err != nil || dur < watchSoakSample {
		b.Fatalf("WATCH_SOAK_DURATION=%q: a duration of at least %v", v, watchSoakSample)
	}
	rate := watchBenchRate
	if v := os.Getenv("WATCH_SOAK_RATE"); v != "" {
		if rate, err = strconv.Atoi(v); err != nil || rate < 1 || rate > 1000 {
			b.Fatalf("WATCH_SOAK_RATE=%q: changes a second, 1 to 1000", v)
		}
	}
	return dur, rate
}

// soakSample is the watcher's memory at one moment of the soak.
type soakSample struct {
	at            time.Duration // since the churn began
	changes       int           // accepted since the churn began
	rss, hwm, hep int64         // VmRSS, VmHWM, live heap after GC
}

// soakChurn changes statuses in windows of watchSoakSample for dur and
// samples the watcher's memory after each window.
func soakChurn(b *testing.B, w *watcher, ch *churn, cs kubernetes.Interface, host string, digests [][2]string, dur time.Duration, rate int) []soakSample {
	var samples []soakSample
	start, changes := time.Now(), 0
	for time.Since(start) < dur {
		window := min(watchSoakSample, dur-time.Since(start))
		done, _ := ch.run(b, cs, host, digests, window, rate)
		changes += len(done)
		rss, hwm := procMemory(b, w.cmd.Process.Pid)
		s := soakSample{at: time.Since(start), changes: changes, rss: rss, hwm: hwm, hep: liveHeap(b, w)}
		b.Logf("soak %v: %d changes (%.0f/s), RSS %.0f MiB, peak %.0f MiB, live heap after GC %.1f MiB",
			s.at.Round(time.Second), s.changes, float64(s.changes)/s.at.Seconds(), mib(s.rss), mib(s.hwm), mib(s.hep))
		samples = append(samples, s)
		if w.exited() {
			b.Fatalf("the watcher exited during the soak:\n%s", w.tail())
		}
	}
	return samples
}

// procMemory is a process's resident set and its peak, from
// /proc/PID/status.
func procMemory(b *testing.B, pid int) (rss, hwm int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// reportSoak reports the first sample (10 minutes) and the last.
func reportSoak(b *testing.B, samples []soakSample) {
	if len(samples) == 0 {
		b.Fatal("no sample taken")
	}
	first, last := samples[0], samples[len(samples)-1]
	b.ReportMetric(mib(first.rss), "RSS-10m-MiB")
	b.ReportMetric(mib(first.hep), "heap-10m-MiB")
	b.ReportMetric(mib(last.rss), "RSS-end-MiB")
	b.ReportMetric(mib(last.hep), "heap-end-MiB")
	b.ReportMetric(mib(last.hwm), "peak-RSS-MiB")
	b.ReportMetric(float64(last.changes)/last.at.Seconds(), "changes/s")
	b.ReportMetric(last.at.Minutes(), "minutes")
}
