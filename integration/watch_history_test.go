//go:build integration

package integration

import (
	"bytes"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/record"
)

// recordNow runs `regcheck record` on the rig's namespace into the
// history file out, as the nightly CronJob does (records only, no
// transitions), and returns when it ran.
func (r *watchRig) recordNow(t *testing.T, out string) time.Time {
	t.Helper()
	at := time.Now()
	var o, e bytes.Buffer
	args := []string{"record", "-n", r.ns, "--kubeconfig", r.kc.Kubeconfig, "--out", out}
	if code := cli.Run(t.Context(), cli.Streams{Out: &o, Err: &e}, args); code != cli.ExitClean {
		t.Fatalf("regcheck record: exit %d\n%s\n%s", code, o.String(), e.String())
	}
	return at
}

// waitSighted waits until the history at src holds a record of owner
// running each digest, last seen after since: the watcher has written
// what it saw of them.
func waitSighted(t *testing.T, src historySource, owner string, since time.Time, digests ...string) *watchHistory {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := src()
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, d := range digests {
			if slices.ContainsFunc(h.Records, func(rc record.Record) bool {
				return rc.OwnerName == owner && rc.Digest == d && rc.LastSeen.After(since)
			}) {
				seen++
			}
		}
		if seen == len(digests) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("the history does not show %s running %d digests after %s within 30s: %+v", owner, len(digests), since.Format(time.RFC3339Nano), h.Records)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWatchHistoryMidRollout: the nightly `regcheck record` caught web's
// rollout from 1.0 to 2.0 half done, both pods running, two digests at
// one last sighting. A watcher started from that history sees both pods
// running what the history holds: it records no transition and exports
// no unplanned upgrade.
func TestWatchHistoryMidRollout(t *testing.T) {
	r := newWatchRig(t)
	d1 := pushSingle(t, r.ref("web", "1.0"), "web 1.0")
	d2 := pushSingle(t, r.ref("web", "2.0"), "web 2.0")
	r.deploy(t, "web", "1.0", d1)
	r.rolloutBegun(t, "web", "2.0", d2)
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	recorded := r.recordNow(t, out)
	h, err := src()
	if err != nil {
		t.Fatal(err)
	}
	var last []time.Time
	for _, rc := range h.Records {
		last = append(last, rc.LastSeen)
	}
	if len(h.Records) != 2 || !last[0].Equal(last[1]) || len(h.Transitions) != 0 {
		t.Fatalf("the nightly record: %d records (last seen %v), %d transitions; want both digests at one sighting, none",
			len(h.Records), last, len(h.Transitions))
	}

	w := r.startWatcher(t, []string{"--out", out}, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	h = waitSighted(t, src, "web", recorded, d1, d2)
	if len(h.Transitions) != 0 {
		t.Errorf("the watcher recorded %d transitions for pods running what the history holds: %v", len(h.Transitions), h.Transitions)
	}
	all, text := w.scrape(t)
	if v := metric(all, "regcheck_watch_transitions_total", nil); v > 0 {
		t.Errorf("regcheck_watch_transitions_total = %v, want none:\n%s", v, text)
	}
	for _, s := range find(all, "regcheck_unplanned_upgrade", nil) {
		if s.value != 0 {
			t.Errorf("an unplanned upgrade stands mid-rollout: %v", s)
		}
	}
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
}

// TestWatchHistoryUpgradeStands: a watcher saw coturn:latest move under a
// running pod (an unplanned upgrade c1→c2) and stopped. The next watcher
// starts from that history and exports the upgrade as standing. When the
// slot moves on while no watcher runs (the tag moved again to c3, seen only
// by the nightly record), the upgrade the history holds is over: the next
// watcher exports none.
func TestWatchHistoryUpgradeStands(t *testing.T) {
	r := newWatchRig(t)
	image := r.ref("coturn", "latest")
	c1 := pushSingle(t, image, "coturn 4.6")
	pod := r.deploy(t, "coturn", "latest", c1)
	out := filepath.Join(t.TempDir(), "history.json")
	src := fileHistory(out)
	store := []string{"--out", out}
	upgrade := func(from, to string) map[string]string {
		return map[string]string{"namespace": r.ns, "owner_kind": "Deployment", "owner_name": "coturn", "container": "coturn", "from": from, "to": to}
	}
	available := map[string]string{"namespace": r.ns, "owner_name": "coturn", "image": image}

	w := r.startWatcher(t, store, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	waitTransition(t, src, 30*time.Second, firstSeen("coturn", c1))
	c2 := pushSingle(t, image, "coturn 4.7") // the tag moved
	r.restart(t, pod, "coturn", image, c2, 1, "Error", 1)
	waitTransition(t, src, 30*time.Second, changed("coturn", c1, c2, 1))
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, w.tail())
	}

	w = r.startWatcher(t, store, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	all, text := waitMetric(t, w, "the restarted watcher's first walk", func(all []series) bool {
		return metric(all, "regcheck_container_image_available", available) == 1
	})
	if got := find(all, "regcheck_unplanned_upgrade", upgrade(c1, c2)); len(got) != 1 || got[0].value != 1 {
		t.Errorf("the history's unplanned upgrade after a restart: %v, want one series of value 1:\n%s", got, text)
	}
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, w.tail())
	}

	c3 := pushSingle(t, image, "coturn 4.8") // moved again, no watcher running
	r.restart(t, pod, "coturn", image, c3, 2, "Completed", 0)
	recorded := r.recordNow(t, out)
	w = r.startWatcher(t, store, "--walk-debounce", "1s")
	w.waitReady(t, time.Minute)
	waitSighted(t, src, "coturn", recorded, c3)
	all, text = waitMetric(t, w, "the third watcher's first walk", func(all []series) bool {
		return metric(all, "regcheck_container_image_available", available) == 1
	})
	for _, s := range find(all, "regcheck_unplanned_upgrade", nil) {
		if s.value != 0 {
			t.Errorf("an unplanned upgrade stands after the slot moved on to %s: %v\n%s", short(c3), s, text)
		}
	}
	if code, _ := w.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, w.tail())
	}
}

// waitMetric scrapes w until ok holds, for at most 30 s.
func waitMetric(t *testing.T, w *watcher, what string, ok func([]series) bool) ([]series, []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all, text := w.scrape(t)
		if ok(all) {
			return all, text
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s:\n%s\n%s", what, text, w.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
