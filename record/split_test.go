package record

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/results/recordresult"
)

// realistic is owner container i of a cluster as names run in practice,
// running digest d since at: a record's entry, and its transition from the
// digest before (unplanned when the spec image did not change).
func realistic(i, d int, at time.Time, unplanned bool) (recordresult.Entry, Transition) {
	ns, name := fmt.Sprintf("team-%02d", i%40), fmt.Sprintf("service-%04d", i)
	image := fmt.Sprintf("registry.example.com/%s/%s:1.4.2", ns, name)
	digest := fmt.Sprintf("sha256:%032x%032x", i, d)
	e := recordresult.Entry{Cluster: "prod", Time: at, Namespace: ns, OwnerKind: "Deployment", OwnerName: name,
		Pod: name + "-7d9f8c6b5-x2k4q", Container: "app", Image: image, Digest: digest,
		ImageID: fmt.Sprintf("registry.example.com/%s/%s@%s", ns, name, digest), Node: fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i%250, i%7),
		PullPolicy: "IfNotPresent", StartedAt: at.Add(-time.Second), RestartCount: int32(d)}
	exit := int32(1)
	t := Transition{Cluster: "prod", Namespace: ns, OwnerKind: "Deployment", OwnerName: name, Container: "app", Pod: e.Pod, Node: e.Node,
		Image: image, PreviousImage: image, From: fmt.Sprintf("sha256:%032x%032x", i, d-1), To: digest, Time: at,
		RestartCount: int32(d), LastTerminationReason: "Error", LastExitCode: &exit, TemplateChanged: !unplanned}
	if d == 0 {
		t.From, t.PreviousImage, t.TemplateChanged = "", "", true
	}
	return e, t
}

// busyHistory is owners owner containers, each having run digests
// 0…changes (a minute apart, owner i starting i seconds late), with a
// transition for each; the last change of every third owner is unplanned.
func busyHistory(owners, changes int) *History {
	h := NewHistory()
	for d := 0; d <= changes; d++ {
		for i := range owners {
			at := t0.Add(time.Duration(d)*time.Minute + time.Duration(i)*time.Second)
			e, tr := realistic(i, d, at, d == changes && i%3 == 0)
			h.Merge(recordresult.Snapshot{Cluster: "prod", Time: at, Entries: []recordresult.Entry{e}})
			h.AddTransitions(tr)
		}
	}
	return h
}

// needs checks that h holds, for each of owners owner containers of
// busyHistory(owners, changes), the newest record and, where unplanned,
// the last transition: what a reconcile starts from.
func needs(t *testing.T, where string, h *History, owners, changes int) {
	t.Helper()
	for i := range owners {
		e, tr := realistic(i, changes, time.Time{}, i%3 == 0)
		q := Query{Cluster: "prod", Namespace: e.Namespace, OwnerKind: e.OwnerKind, OwnerName: e.OwnerName, Container: e.Container}
		if r, ok := h.Running(q); !ok || r.Digest != e.Digest {
			t.Errorf("%s: %s's newest record (%s) is missing", where, e.OwnerName, e.Digest[:20])
		}
		ts := h.TransitionsOf(q)
		if changes > 0 && i%3 == 0 && (len(ts) == 0 || ts[0].To != tr.To || ts[0].TemplateChanged) {
			t.Errorf("%s: %s's standing unplanned upgrade to %s is missing", where, e.OwnerName, tr.To[:20])
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	const owners, changes = 30, 6
	for _, tc := range []struct {
		name      string
		max       int
		wantSplit bool
	}{
		{"fits whole", 1 << 20, false},
		{"newest first, then the rest", 40 << 10, true},
		{"only what a reconcile needs", 26 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := busyHistory(owners, changes)
			whole := h.clone()
			head, rest, err := Split(h, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := Encode(head, false); len(b) > tc.max {
				t.Errorf("head is %d bytes, over %d", len(b), tc.max)
			}
			if split := rest.items() > 0; split != tc.wantSplit {
				t.Fatalf("split = %v (head %d items, rest %d), want %v", split, head.items(), rest.items(), tc.wantSplit)
			}
			needs(t, "head", head, owners, changes)
			joined := head.clone()
			joined.Absorb(rest)
			if !reflect.DeepEqual(joined, whole) {
				t.Errorf("head and rest together (%d items) are not the history (%d items)", joined.items(), whole.items())
			}
			// Of the rest, nothing is newer than the head's own older items.
			var oldestKept time.Time
			for _, it := range head.ranked() {
				if it.rank == rankOlder && (oldestKept.IsZero() || it.t.Before(oldestKept)) {
					oldestKept = it.t
				}
			}
			for _, it := range rest.ranked() {
				if !oldestKept.IsZero() && it.t.After(oldestKept) {
					t.Errorf("an item of %v went to the rest while one of %v stayed in the head", it.t, oldestKept)
					break
				}
			}
		})
	}
}

func TestAbsorb(t *testing.T) {
	t.Parallel()
	h := busyHistory(5, 3)
	head, rest, err := Split(h, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	// A record both hold, seen over two spans: one record over both.
	e, _ := realistic(0, 3, t0.Add(time.Hour), false)
	rest.Merge(recordresult.Snapshot{Cluster: "prod", Time: e.Time, Entries: []recordresult.Entry{e}})
	ab, ba := head.clone(), rest.clone()
	ab.Absorb(rest)
	ba.Absorb(head)
	if !reflect.DeepEqual(ab, ba) {
		t.Errorf("head+rest and rest+head differ")
	}
	twice := ab.clone()
	twice.Absorb(rest)
	twice.Absorb(head)
	if !reflect.DeepEqual(twice, ab) {
		t.Errorf("absorbing a part twice changed the history")
	}
	r, _ := ab.Running(Query{Cluster: "prod", Namespace: e.Namespace, OwnerKind: e.OwnerKind, OwnerName: e.OwnerName, Container: "app"})
	if want := t0.Add(3 * time.Minute); !r.FirstSeen.Equal(want) || !r.LastSeen.Equal(e.Time) {
		t.Errorf("merged record seen %v–%v, want %v–%v", r.FirstSeen, r.LastSeen, want, e.Time)
	}
	if n := ab.lacks(rest).items() + ab.lacks(head).items(); n != 0 {
		t.Errorf("the whole lacks %d items of its parts", n)
	}
}

// A split ConfigMap store never loses an item while its head and archives
// hold the history, not even when a head write conflicts after an archive
// write; once the archives wrap, what a reconcile needs is still there.
func TestConfigMapSplitNeverLoses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	conflicts := 0
	c.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.UpdateAction).GetObject().(metav1.Object).GetName() == "history" && conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "history", fmt.Errorf("the object has been modified"))
		}
		return false, nil, nil
	})
	versioned(c)
	const owners, max = 12, 12 << 10
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history", MaxBytes: max, Archives: 3}
	ref := NewHistory()
	trimmed, spilled := 0, false
	for d := 0; trimmed == 0 && d < 200; d++ {
		conflicts = d % 2 // every other write conflicts once, after its spill
		snapAt := t0.Add(time.Duration(d) * time.Minute)
		s := recordresult.Snapshot{Cluster: "prod", Time: snapAt}
		var ts []Transition
		for i := range owners {
			e, tr := realistic(i, d, snapAt, i%3 == 0)
			s.Entries = append(s.Entries, e)
			ts = append(ts, tr)
		}
		res, err := st.Update(ctx, func(h *History) error { h.Merge(s); h.AddTransitions(ts...); return nil })
		if err != nil {
			t.Fatal(err)
		}
		ref.Merge(s)
		ref.AddTransitions(ts...)
		trimmed += res.Trimmed
		for i := 0; i <= st.Archives; i++ {
			name := st.Name
			if i > 0 {
				name = ArchiveName(st.Name, i)
			}
			if cm, err := c.CoreV1().ConfigMaps("regcheck").Get(ctx, name, metav1.GetOptions{}); err == nil {
				if n := len(cm.Data[ConfigMapKey]); n > max {
					t.Fatalf("write %d: %s holds %d bytes, over %d", d, name, n, max)
				}
				spilled = spilled || i > 0
			}
		}
		got, err := st.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		needs(t, fmt.Sprintf("write %d", d), got, owners, d)
		if trimmed == 0 && !reflect.DeepEqual(got, ref) {
			t.Fatalf("write %d: the store holds %d items, the history %d (nothing trimmed yet)", d, got.items(), ref.items())
		}
	}
	if !spilled || trimmed == 0 {
		t.Fatalf("spilled %v, trimmed %d: the test never filled the archives", spilled, trimmed)
	}
}

// versioned gives every ConfigMap the fake API server creates or updates
// a new resourceVersion, as a real one does (the fake gives none), so
// that the store's decoded archives are kept and reused.
func versioned(c *fake.Clientset) {
	rv := 0
	c.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if w, ok := a.(interface{ GetObject() runtime.Object }); ok && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			rv++
			w.GetObject().(metav1.Object).SetResourceVersion(strconv.Itoa(rv))
		}
		return false, nil, nil
	})
}

// TestConfigMapCeiling fills a split store's head at the default size
// with containers named as in practice, one in three with a standing
// unplanned upgrade, a hundred per write, until a write moves one's newest
// record or upgrade out of the head: how many containers a reconcile
// after a failover finds whole in the head alone. docs/watch.md states it.
func TestConfigMapCeiling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history", Archives: DefaultConfigMapArchives}
	const batch = 50
	n := 0
	for ; n < 10_000; n += batch {
		at := t0.Add(time.Duration(n) * time.Second)
		var es []recordresult.Entry
		var ts []Transition
		for i := n; i < n+batch; i++ {
			e0, first := realistic(i, 0, at.Add(-time.Hour), false)
			e, tr := realistic(i, 1, at, i%3 == 0)
			es = append(es, e0, e)
			ts = append(ts, first, tr)
		}
		if _, err := st.Update(ctx, func(h *History) error {
			h.Merge(recordresult.Snapshot{Cluster: "prod", Time: at, Entries: es})
			h.AddTransitions(ts...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		cm, err := c.CoreV1().ConfigMaps("regcheck").Get(ctx, "history", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		head, err := Decode([]byte(cm.Data[ConfigMapKey]))
		if err != nil {
			t.Fatal(err)
		}
		if !headHoldsAll(head, n+batch) {
			break
		}
	}
	t.Logf("the head holds what a reconcile needs of %d containers (one in three with a standing upgrade)", n)
	if n < ceilingContainers {
		t.Errorf("ceiling %d containers, below the %d docs/watch.md states", n, ceilingContainers)
	}
	all, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	needs(t, "head and archives", all, n, 1)
}

// ceilingContainers is the ceiling docs/watch.md states.
const ceilingContainers = 1000

// headHoldsAll reports whether head holds the newest record, the standing
// upgrade and the record of the digest before it (what pinning back reads)
// of the first n containers TestConfigMapCeiling wrote.
func headHoldsAll(head *History, n int) bool {
	for i := range n {
		e, tr := realistic(i, 1, time.Time{}, i%3 == 0)
		q := Query{Cluster: "prod", Namespace: e.Namespace, OwnerKind: e.OwnerKind, OwnerName: e.OwnerName, Container: e.Container}
		if r, ok := head.Running(q); !ok || r.Digest != e.Digest {
			return false
		}
		if ts := head.TransitionsOf(q); i%3 == 0 && (len(ts) == 0 || ts[0].To != tr.To) {
			return false
		}
		if i%3 == 0 && !slices.ContainsFunc(head.Find(q), func(r Record) bool { return r.Digest == tr.From }) {
			return false // the record pinning back reads
		}
	}
	return true
}

// Once the head cannot hold what a reconcile needs of every container,
// the rest of it waits in the archives; an archive overwritten when all are
// full carries it into the next generation, so that containers that stay
// put while others churn keep their newest record and standing upgrade.
func TestConfigMapCarriesWhatReconcileNeeds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	const stable, limit = 20, 12 << 10
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history", MaxBytes: limit, Archives: 2}
	write := func(at time.Time, from, to, d int) recordresult.UpdateResult {
		t.Helper()
		s := recordresult.Snapshot{Cluster: "prod", Time: at}
		var ts []Transition
		for i := from; i < to; i++ {
			for k := max(d-1, 0); k <= d; k++ { // the digest before too, for stable containers
				e, tr := realistic(i, k, at.Add(time.Duration(k-d)*time.Minute), i%3 == 0 && i < stable)
				s.Entries = append(s.Entries, e)
				ts = append(ts, tr)
			}
		}
		res, err := st.Update(ctx, func(h *History) error { h.Merge(s); h.AddTransitions(ts...); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	write(t0, 0, stable, 1)
	trimmed := 0
	for d := range 60 { // five containers churn, a digest a minute
		trimmed += write(t0.Add(time.Duration(d+1)*time.Hour), 100, 105, d+1).Trimmed
		got, err := st.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		needs(t, fmt.Sprintf("churn %d", d), got, stable, 1)
		if t.Failed() {
			t.FailNow()
		}
	}
	if trimmed == 0 {
		t.Fatal("the archives never wrapped: nothing was trimmed")
	}
	cm, err := c.CoreV1().ConfigMaps("regcheck").Get(ctx, "history", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	head, err := Decode([]byte(cm.Data[ConfigMapKey]))
	if err != nil {
		t.Fatal(err)
	}
	if headHoldsAll(head, stable) {
		t.Fatal("the head holds all the stable containers: the test never went beyond its ceiling")
	}
	t.Logf("%d items trimmed; the stable containers' newest records and upgrades kept across the archives", trimmed)
}

// TestConfigMapCeilingWithArchives goes on where TestConfigMapCeiling
// stops: containers beyond the head's ceiling wait in the archives, carried
// from one generation to the next, until what a reconcile needs of every
// container no longer fits in the head and the archives together. The
// first container missing from Load ends it; docs/watch.md states the
// figure.
func TestConfigMapCeilingWithArchives(t *testing.T) {
	if testing.Short() {
		t.Skip("fills five ConfigMaps of 1 MiB")
	}
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history", Archives: DefaultConfigMapArchives}
	const batch = 250
	n := 0
	for ; n < 20_000; n += batch {
		at := t0.Add(time.Duration(n) * time.Second)
		var es []recordresult.Entry
		var ts []Transition
		for i := n; i < n+batch; i++ {
			e0, first := realistic(i, 0, at.Add(-time.Hour), false)
			e, tr := realistic(i, 1, at, i%3 == 0)
			es = append(es, e0, e)
			ts = append(ts, first, tr)
		}
		if _, err := st.Update(ctx, func(h *History) error {
			h.Merge(recordresult.Snapshot{Cluster: "prod", Time: at, Entries: es})
			h.AddTransitions(ts...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		all, err := st.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !headHoldsAll(all, n+batch) {
			break
		}
	}
	t.Logf("head and archives hold what a reconcile needs of %d containers (one in three with a standing upgrade)", n)
	if n < ceilingWithArchives {
		t.Errorf("ceiling %d containers, below the %d docs/watch.md states", n, ceilingWithArchives)
	}
}

// ceilingWithArchives is the ceiling of head and archives docs/watch.md states.
const ceilingWithArchives = 3000

// Past the head's ceiling, a container whose newest record only an
// archive holds is still compared with it: record (Save) reports its
// change of digest, not a first sighting.
func TestConfigMapShortHeadReadsArchives(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history", MaxBytes: 16 << 10, Archives: 3}
	short := false
	n := 0
	for ; n < 400 && !short; n += 10 {
		at := t0.Add(time.Duration(n) * time.Minute)
		snap := recordresult.Snapshot{Cluster: "prod", Time: at}
		for i := n; i < n+10; i++ {
			e, _ := realistic(i, 1, at, false)
			snap.Entries = append(snap.Entries, e)
		}
		if _, err := Save(ctx, st, snap); err != nil {
			t.Fatal(err)
		}
		cm, err := c.CoreV1().ConfigMaps("regcheck").Get(ctx, "history", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		short = cm.Annotations[HeadShortAnnotation] == "true"
	}
	if !short {
		t.Fatalf("the head never fell short in %d containers", n)
	}
	at := t0.Add(time.Duration(n+1) * time.Minute)
	e, _ := realistic(0, 2, at, false) // the oldest container, only in an archive
	res, err := Save(ctx, st, recordresult.Snapshot{Cluster: "prod", Time: at, Entries: []recordresult.Entry{e}})
	if err != nil {
		t.Fatal(err)
	}
	was, _ := realistic(0, 1, at, false)
	if len(res.Changes) != 1 || !slices.Equal(res.Changes[0].From, []string{was.Digest}) || res.Changes[0].To != e.Digest {
		t.Errorf("changes %+v, want %s's from %s to %s", res.Changes, e.OwnerName, was.Digest, e.Digest)
	}
}
