package watch

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/scan"
)

// gate is a transport that holds every request while shut, and says when
// the first request after shut came.
type gate struct {
	mu      sync.Mutex
	open    chan struct{} // closed while the gate is open
	entered chan struct{} // closed by the first request held
	held    bool
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.entered, g.held = make(chan struct{}), make(chan struct{}), false
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	open := g.open
	if g.entered != nil && !g.held {
		g.held = true
		close(g.entered)
	}
	g.mu.Unlock()
	select {
	case <-open:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// The walk of everything refreshes each running container's lastSeen as
// the inventory it walked showed it, once the walk is over: a pod that
// moved to another digest during the walk keeps that digest as its
// newest, and the digest it left is not made to look newer by the refresh.
func TestRefreshAfterWalkKeepsChangesNewer(t *testing.T) {
	ctx := context.Background()
	host := memRegistry(t)
	image := host + "/web/app:latest"
	d1, err := fixture.PushSingle(ctx, image, "app 1")
	if err != nil {
		t.Fatal(err)
	}
	d2, err := fixture.PushSingle(ctx, image, "app 2")
	if err != nil {
		t.Fatal(err)
	}
	d, rs := deployment(image)
	c := fake.NewClientset(d, rs, pod("app-1-x", image, d1, 0, ""))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	g := newGate()
	w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond,
		Interval: time.Hour, Debounce: 50 * time.Millisecond,
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(g)}})
	if err != nil {
		t.Fatal(err)
	}
	runWatcher(t, w)
	waitFor(t, "the first walk", func() bool { return len(series(t, w, metrics.ContainerImageAvailable)) == 1 })
	lastSeen := func(digest string) time.Time {
		for _, r := range load(t, st).Records {
			if r.Digest == digest {
				return r.LastSeen
			}
		}
		return time.Time{}
	}
	before := lastSeen(d1)
	if before.IsZero() {
		t.Fatal("no record of the first digest")
	}

	g.shut()
	walked := make(chan struct{})
	go func() { defer close(walked); w.walks.once(ctx, true) }()
	<-g.entered // the walk took its inventory: the pod on d1
	if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, pod("app-1-x", image, d2, 1, ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the move to the second digest in the history", func() bool { return !lastSeen(d2).IsZero() })
	g.release()
	<-walked
	waitFor(t, "the refresh in the history", func() bool { return lastSeen(d1).After(before) })
	if l1, l2 := lastSeen(d1), lastSeen(d2); !l2.After(l1) {
		t.Errorf("after the walk the digest the pod left was last seen %v, the one it runs %v: want the one it runs newest", l1, l2)
	}
}
