package watch

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// series returns the value of each series of family name, by the label
// values joined with commas, in the family's label order.
func series(t *testing.T, w *Watcher, name metrics.Name) map[string]float64 {
	t.Helper()
	mfs, err := w.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != string(name) {
			continue
		}
		for _, m := range mf.Metric {
			var vals []string
			for _, l := range m.Label {
				vals = append(vals, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(vals, ",")] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// A tag moves in a real (in-memory) registry and a restart pulls it: the
// walk after the new digest appears reports unplanned-upgrade on the image,
// naming the previous digest as still whole, and the availability series
// says the image pulls.
func TestWalkReportsUnplannedUpgrade(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	image := host + "/voip/coturn:latest"
	d1, err := fixture.PushSingle(ctx, image, "coturn 4.6")
	if err != nil {
		t.Fatal(err)
	}
	d, rs := deployment(image)
	c := fake.NewClientset(d, rs, pod("app-1-x", image, d1, 0, ""))
	st := &record.File{Path: filepath.Join(t.TempDir(), "history.json")}
	w, err := New(Config{Client: c, Cluster: "prod", Store: st, FlushInterval: 20 * time.Millisecond,
		Interval: time.Hour, Debounce: 50 * time.Millisecond, HistoryHint: "history.json",
		ScanOptions: []scan.Option{scan.WithInsecureRegistries(host), scan.WithTransport(http.DefaultTransport)}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the first walk", func() bool { return len(series(t, w, metrics.ContainerImageAvailable)) == 1 })

	d2, err := fixture.PushSingle(ctx, image, "coturn 4.7")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("web").UpdateStatus(ctx, pod("app-1-x", image, d2, 1, "CrashLoopBackOff"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var finding *types.Finding
	waitFor(t, "the unplanned-upgrade finding", func() bool {
		w.walks.mu.Lock()
		defer w.walks.mu.Unlock()
		if w.walks.whole[strings.TrimSuffix(image, ":latest")+"@"+d1] == "" {
			return false
		}
		res := w.walks.result
		if res == nil {
			return false
		}
		w.mu.Lock()
		ups := w.st.upgrades()
		w.mu.Unlock()
		for _, im := range withUpgrades(res, ups, w.walks.whole, "history.json").Images {
			for i, f := range im.Findings {
				if f.Code == types.UnplannedUpgrade {
					finding = &im.Findings[i]
				}
			}
		}
		return finding != nil
	})
	for _, want := range []string{d1, "the previous digest is still whole in the registry"} {
		if !strings.Contains(finding.Message, want) {
			t.Errorf("finding %q does not say %q", finding.Message, want)
		}
	}
	if !strings.Contains(finding.Advice, "regcheck pin --from-records history.json") || !strings.Contains(finding.Advice, "@"+d1) {
		t.Errorf("advice %q does not name the pin back", finding.Advice)
	}
	waitFor(t, "the use-findings series of the upgrade", func() bool {
		for k := range series(t, w, metrics.UseFindings) {
			if strings.Contains(k, "code="+string(types.UnplannedUpgrade)) {
				return true
			}
		}
		return false
	})
	avail := series(t, w, metrics.ContainerImageAvailable)
	want := "container=app,image=" + image + ",namespace=web,owner_kind=Deployment,owner_name=app"
	if v, ok := avail[want]; !ok || v != 1 {
		t.Errorf("availability %v, want %s = 1", avail, want)
	}
}
