//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

// splitConfigMapHistory reads a split ConfigMap history as a reader of its
// own would: the head and every archive, their records and transitions
// put together (an item stored twice is there twice).
func splitConfigMapHistory(cs kubernetes.Interface, ns, name string) historySource {
	return func() (*watchHistory, error) {
		all := &watchHistory{}
		for i := 0; i <= record.DefaultConfigMapArchives; i++ {
			n := name
			if i > 0 {
				n = record.ArchiveName(name, i)
			}
			h, err := configMapHistory(cs, ns, n)()
			if err != nil {
				return nil, err
			}
			all.Records = append(all.Records, h.Records...)
			all.Transitions = append(all.Transitions, h.Transitions...)
		}
		return all, nil
	}
}

// checkSizes fails t if any ConfigMap of the split history name holds more
// than the object limit allows.
func checkSizes(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	for i := 0; i <= record.DefaultConfigMapArchives; i++ {
		n := name
		if i > 0 {
			n = record.ArchiveName(name, i)
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if size := len(cm.Data[record.ConfigMapKey]); size > record.DefaultConfigMapMaxBytes {
			t.Errorf("configmap %s holds %d bytes, over %d", n, size, record.DefaultConfigMapMaxBytes)
		}
	}
}

// Sizes of TestWatchConfigMapFailoverAtCeiling.
const (
	foPods     = 400 // bare pods the watchers see
	foUpgraded = 100 // of them, restarted onto the tag's new digest
	foOld      = 5   // rounds of about 1 MiB of old history seeded: the archives wrap
	foBeyond   = 600 // other workloads written beyond the head's ceiling
)

// TestWatchConfigMapFailoverAtCeiling: watcher A writes a ConfigMap
// history at and past its head's size ceiling (the head full of what a
// reconcile needs: A's pods, foUpgraded of them with a standing unplanned
// upgrade, and the newest records of other workloads, then foBeyond more,
// so that the oldest of it, some of A's upgrades, waits in the archives;
// the archives wrapped over older history, so that part of it was
// trimmed); A stops; watcher B starts and
// reconciles from the ConfigMaps. B raises no transition (no new "first
// seen", no upgrade again) and exports every standing upgrade.
func TestWatchConfigMapFailoverAtCeiling(t *testing.T) {
	r := newWatchRig(t)
	bulk, err := kubernetes.NewForConfig(r.kc.BulkConfig())
	if err != nil {
		t.Fatal(err)
	}
	const cm, cluster = "regcheck-history", "testkube"
	st := &record.ConfigMap{Client: r.cs, Namespace: r.ns, Name: cm, Archives: record.DefaultConfigMapArchives}
	trimmed := seedOldHistory(t, st, cluster)
	if trimmed == 0 {
		t.Fatalf("seeding %d rounds of old history trimmed nothing: the archives never wrapped", foOld)
	}

	image := r.ref("bulk", "latest")
	digests := [2]string{pushSingle(t, image, "bulk a"), pushSingle(t, image, "bulk b")}
	pods := make([]*corev1.Pod, 0, foPods)
	for i := range foPods {
		pods = append(pods, r.bulkPod(i, image, digests[0], 0))
	}
	cctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	n, err := kubeapi.CreatePods(cctx, bulk, pods, 8)
	cancel()
	if n != len(pods) {
		t.Fatalf("created %d of %d pods: %v", n, len(pods), err)
	}
	src := splitConfigMapHistory(r.cs, r.ns, cm)
	store := []string{"--configmap", r.ns + "/" + cm}
	le := []string{"--leader-elect", "--leader-election-namespace", r.ns, "--leader-election-id", "regcheck-watch",
		"--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s", "--flush-interval", "500ms"}
	a := r.startWatcher(t, store, le...)
	a.waitReady(t, 2*time.Minute)
	a.waitLeader(t, 1, 30*time.Second)
	var first []podState
	for _, p := range pods {
		first = append(first, podState{owner: p.Name, digest: digests[0]})
	}
	waitAll(t, src, first, time.Minute)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 30))
	var upgraded []podState
	for _, i := range rng.Perm(foPods)[:foUpgraded] {
		p := r.bulkPod(i, image, digests[1], 1)
		if err := kubeapi.PatchStatus(t.Context(), bulk, r.ns, p.Name, p.Status); err != nil {
			t.Fatal(err)
		}
		upgraded = append(upgraded, podState{owner: p.Name, digest: digests[1], restarts: 1})
	}
	waitAll(t, src, upgraded, time.Minute)

	gone := fillHead(t, st, cluster)
	overfill(t, st, cluster, gone, foBeyond) // beyond the head's ceiling: its oldest essentials wait in the archives
	// A writes onto the full head: every pod restarted once more on the
	// digest it runs.
	for i, p := range pods {
		d, restarts := digests[0], int32(1)
		if slices.ContainsFunc(upgraded, func(s podState) bool { return s.owner == p.Name }) {
			d, restarts = digests[1], 2
		}
		q := r.bulkPod(i, image, d, restarts)
		if err := kubeapi.PatchStatus(t.Context(), bulk, r.ns, q.Name, q.Status); err != nil {
			t.Fatal(err)
		}
	}
	waitRecords(t, st, cluster, r.ns, foPods, 1, time.Minute)
	checkSizes(t, r.cs, r.ns, cm)
	headFull(t, r.cs, r.ns, cm)
	inHead := 0
	if hh, err := configMapHistory(r.cs, r.ns, cm)(); err == nil {
		for _, tr := range hh.Transitions {
			inHead += boolInt(tr.Namespace == r.ns && !tr.TemplateChanged && tr.From != "")
		}
	}
	if inHead == foUpgraded {
		t.Fatalf("the head holds all %d standing upgrades: the history never went beyond the head's ceiling", foUpgraded)
	}
	t.Logf("the head holds %d of the %d standing upgrades; the archives the rest", inHead, foUpgraded)
	if code, _ := a.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("A: exit %d after SIGTERM:\n%s", code, a.tail())
	}
	before, err := src()
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	b := r.startWatcher(t, store, le...)
	b.waitReady(t, 2*time.Minute)
	b.waitLeader(t, 1, 30*time.Second)
	raised := waitUpgrades(t, b, r.ns, upgraded, digests, 30*time.Second)
	t.Logf("B ready, leading and exporting all %d standing upgrades %v after it started", raised, time.Since(began).Round(time.Millisecond))
	time.Sleep(3 * time.Second) // B's flushes, had it anything to write
	all, text := b.scrape(t)
	if v := metric(all, "regcheck_watch_transitions_total", map[string]string{"planned": "false"}) +
		metric(all, "regcheck_watch_transitions_total", map[string]string{"planned": "true"}); v != 0 {
		t.Errorf("B counted %v transitions after reconciling, want 0:\n%s", v, text)
	}
	if code, _ := b.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Errorf("B: exit %d after SIGTERM:\n%s", code, b.tail())
	}
	after, err := src()
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range after.Transitions {
		if tr.Namespace == r.ns && !slices.ContainsFunc(before.Transitions, func(o watchTransition) bool {
			return o.OwnerName == tr.OwnerName && o.From == tr.From && o.To == tr.To
		}) {
			t.Errorf("B raised %s, which A had not: a reconcile re-raised it", tr)
		}
	}
	checkSizes(t, r.cs, r.ns, cm)
	t.Logf("seeded history trimmed %d items; %d other workloads fill the head; %d records and %d transitions in the ConfigMaps after B",
		trimmed, gone, len(after.Records), len(after.Transitions))
}

// seedOldHistory writes foOld rounds of about 1 MiB of history a day old
// into st (sixty workloads since deleted, forty digests each a round, a
// second apart) and returns how many items the store trimmed doing so.
func seedOldHistory(t *testing.T, st *record.ConfigMap, cluster string) int {
	t.Helper()
	trimmed := 0
	day := time.Now().Add(-24 * time.Hour).UTC()
	for round := range foOld {
		at := day.Add(time.Duration(round) * time.Minute)
		s := recordresult.Snapshot{Cluster: cluster, Time: at}
		for i := range 60 {
			for k := range 40 {
				s.Entries = append(s.Entries, goneEntry(cluster, i, round*40+k, at.Add(time.Duration(k)*time.Second)))
			}
		}
		res, err := st.Update(t.Context(), func(h *record.History) error { h.Merge(s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		trimmed += res.Trimmed
	}
	return trimmed
}

// goneEntry is workload i's container at digest d, seen at at.
func goneEntry(cluster string, i, d int, at time.Time) recordresult.Entry {
	ns, name := fmt.Sprintf("team-%02d", i%40), fmt.Sprintf("service-%05d", i)
	digest := fmt.Sprintf("sha256:%032x%032x", i, d)
	return recordresult.Entry{Cluster: cluster, Time: at, Namespace: ns, OwnerKind: "Deployment", OwnerName: name,
		Pod: name + "-7d9f8c6b5-x2k4q", Container: "app", Image: fmt.Sprintf("registry.example.com/%s/%s:1.4.2", ns, name), Digest: digest,
		Node: fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i%250, i%7), PullPolicy: "IfNotPresent"}
}

// fillHead adds the newest records of other workloads, fifty at a time,
// newer than everything, while the head (as record.Split would leave it)
// still holds every owner container's newest record: the head at its
// ceiling. It returns how many it added.
func fillHead(t *testing.T, st *record.ConfigMap, cluster string) int {
	t.Helper()
	n := 0
	for ; n < 5000; n += 50 {
		at := time.Now().UTC()
		s := recordresult.Snapshot{Cluster: cluster, Time: at}
		for i := n; i < n+50; i++ {
			s.Entries = append(s.Entries, goneEntry(cluster, 10_000+i, 99, at))
		}
		fits := false
		if _, err := st.Update(t.Context(), func(h *record.History) error {
			trial := &record.History{SchemaVersion: h.SchemaVersion, Records: slices.Clone(h.Records), Transitions: h.Transitions}
			trial.Merge(s)
			head, _, err := record.Split(trial, record.DefaultConfigMapMaxBytes)
			if err != nil {
				return err
			}
			if fits = newestAll(trial, head); fits {
				h.Merge(s)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !fits {
			return n
		}
	}
	t.Fatalf("the head took the newest records of %d more workloads: no ceiling reached", n)
	return n
}

// overfill adds the newest records of n more workloads after the first
// from, newer than everything.
func overfill(t *testing.T, st *record.ConfigMap, cluster string, from, n int) {
	t.Helper()
	at := time.Now().UTC()
	s := recordresult.Snapshot{Cluster: cluster, Time: at}
	for i := from; i < from+n; i++ {
		s.Entries = append(s.Entries, goneEntry(cluster, 10_000+i, 99, at))
	}
	if _, err := st.Update(t.Context(), func(h *record.History) error { h.Merge(s); return nil }); err != nil {
		t.Fatal(err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newestAll reports whether head holds every record of h last seen at its
// owner container's newest lastSeen.
func newestAll(h, head *record.History) bool {
	type oc struct{ cluster, ns, kind, name, container, volume string }
	newest := map[oc]time.Time{}
	for _, r := range h.Records {
		k := oc{r.Cluster, r.Namespace, r.OwnerKind, r.OwnerName, r.Container, r.Volume}
		if r.LastSeen.After(newest[k]) {
			newest[k] = r.LastSeen
		}
	}
	have := map[record.Key]bool{}
	for _, r := range head.Records {
		have[r.Key] = true
	}
	for _, r := range h.Records {
		if r.LastSeen.Equal(newest[oc{r.Cluster, r.Namespace, r.OwnerKind, r.OwnerName, r.Container, r.Volume}]) && !have[r.Key] {
			return false
		}
	}
	return true
}

// headFull fails t unless the head ConfigMap is within a tenth of the
// object limit: at its ceiling.
func headFull(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	size := configMapBytes(t, cs, ns, name)
	if size < record.DefaultConfigMapMaxBytes*9/10 {
		t.Fatalf("the head holds %d bytes: not at its ceiling (%d)", size, record.DefaultConfigMapMaxBytes)
	}
	t.Logf("the head holds %d bytes of %d", size, record.DefaultConfigMapMaxBytes)
}

// waitRecords waits (at most timeout) until st holds, for n bare pods of
// ns, a record with restarts at least min.
func waitRecords(t *testing.T, st *record.ConfigMap, cluster, ns string, n int, min int32, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h, err := st.Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, r := range h.Records {
			if r.Cluster == cluster && r.Namespace == ns && r.RestartCount >= min {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pods' records with %d restarts in the history after %v", got, n, min, timeout)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// waitUpgrades waits (at most timeout) until w exports
// regcheck_unplanned_upgrade 1 for every pod of want (from digests[0] to
// digests[1]) and for no other, and returns how many it exports.
func waitUpgrades(t *testing.T, w *watcher, ns string, want []podState, digests [2]string, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		all, text := w.scrape(t)
		raised := find(all, "regcheck_unplanned_upgrade", map[string]string{"namespace": ns})
		var missing []string
		for _, s := range want {
			if !slices.ContainsFunc(raised, func(x series) bool {
				return x.labels["owner_name"] == s.owner && x.labels["from"] == digests[0] && x.labels["to"] == digests[1] && x.value == 1
			}) {
				missing = append(missing, s.owner)
			}
		}
		if len(missing) == 0 {
			if len(raised) != len(want) {
				t.Errorf("%d regcheck_unplanned_upgrade series, want %d", len(raised), len(want))
			}
			return len(raised)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d standing upgrades not exported %v after reconciling (lost): %v\n%s\n%s", len(missing), len(want), timeout, missing, text, w.tail())
		}
		time.Sleep(300 * time.Millisecond)
	}
}
