package watch

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/types"
)

// Metrics are the series the watcher exports: its own health on every
// replica; the unplanned upgrades, the availability of each container's
// image and the families scan and record publish on the leader only, so
// that two replicas do not raise each alert twice.
type Metrics struct {
	w *Watcher

	health      *prometheus.Registry
	events      *prometheus.CounterVec
	writes      *prometheus.CounterVec
	writeErrors *prometheus.CounterVec
	transitions *prometheus.CounterVec
	leader      *prometheus.GaugeVec
	lastSync    *prometheus.GaugeVec

	lead       *prometheus.Registry
	containers *prometheus.GaugeVec // record's regcheck_record_containers
	recordOK   *prometheus.GaugeVec // record's last success
	// trimmed is record's regcheck_record_trimmed: here the records and
	// transitions the store dropped to fit its size limit, summed over
	// this process's writes.
	trimmed *prometheus.GaugeVec
	// walk holds the last deep walk's per-image and per-run series,
	// gathered once at publish (a few per image).
	walk atomic.Pointer[gathered]
	// uses is what the last deep walk's per-use series are made of (with
	// the unplanned upgrades' findings counted, their text not kept):
	// regcheck_use_findings and regcheck_container_image_available, one
	// per container, are made from it at each scrape by the UseCollector
	// (gathered straight into client_golang's data model, each label pair
	// made once), and held nowhere.
	uses      atomic.Pointer[metrics.UseSnapshot]
	useSeries prometheus.Gatherer
}

func newMetrics(w *Watcher) *Metrics {
	m := &Metrics{w: w, health: prometheus.NewRegistry(), lead: prometheus.NewRegistry()}
	m.events = metrics.WatchEvents.Counter(m.health)
	m.writes = metrics.WatchWrites.Counter(m.health)
	m.writeErrors = metrics.WatchWriteErrors.Counter(m.health)
	m.transitions = metrics.WatchTransitions.Counter(m.health)
	m.leader = metrics.WatchLeader.Gauge(m.health)
	m.lastSync = metrics.WatchLastSync.Gauge(m.health)
	m.writes.WithLabelValues()
	m.writeErrors.WithLabelValues()
	m.transitions.WithLabelValues("true")
	m.transitions.WithLabelValues("false")
	m.leader.WithLabelValues().Set(0)
	if w.cfg.Leader == nil {
		m.leader.WithLabelValues().Set(1)
	}
	m.lead.MustRegister(newUpgradeSeries(w))
	m.containers = metrics.RecordContainers.Gauge(m.lead)
	m.recordOK = metrics.LastSuccess.Gauge(m.lead)
	m.trimmed = metrics.RecordTrimmed.Gauge(m.lead)
	m.trimmed.WithLabelValues().Set(0)
	m.useSeries = metrics.NewUseCollector(m.uses.Load).WithAvailability()
	return m
}

// publishWalk swaps in a deep walk's series: its per-image ones gathered
// now, its per-use ones made from res at each scrape. A nil res removes
// them.
func (m *Metrics) publishWalk(res *types.Result) error {
	if res == nil {
		m.walk.Store(nil)
		m.uses.Store(nil)
		return nil
	}
	g, err := gather(metrics.WalkRunSeries(res))
	if err != nil {
		return err
	}
	m.walk.Store(g)
	m.uses.Store(metrics.NewUseSnapshot(res))
	return nil
}

// Gather gathers every series this replica exports now.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	gs := prometheus.Gatherers{m.health}
	if m.w.Leader() {
		gs = append(gs, m.lead)
		if r := m.walk.Load(); r != nil {
			gs = append(gs, r, m.useSeries)
		}
	}
	return gs.Gather()
}

var _ prometheus.Gatherer = (*Metrics)(nil)

// Handler serves /metrics (client_golang's exposition), /healthz (200 while
// the process runs) and /readyz (200 once the informers synced and the
// history was reconciled, on every replica; 503 saying why otherwise, a
// LIST or WATCH the API server denies named).
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { rw.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if why := m.w.unready(); why != "" {
			http.Error(rw, why, http.StatusServiceUnavailable)
			return
		}
		rw.Write([]byte("ok\n"))
	})
	return mux
}

func (m *Metrics) synced(t time.Time) { m.lastSync.WithLabelValues().Set(unix(t)) }

func (m *Metrics) wrote(t time.Time) {
	m.writes.WithLabelValues().Inc()
	m.recordOK.WithLabelValues(metrics.CommandRecord).Set(unix(t))
}

// trim counts what a write trimmed.
func (m *Metrics) trim(n int) { m.trimmed.WithLabelValues().Add(float64(n)) }

func (m *Metrics) transition(t record.Transition) {
	m.transitions.WithLabelValues(strconv.FormatBool(t.TemplateChanged)).Inc()
}

// refresh sets the containers recorded (the unplanned-upgrade series are
// made at each scrape, see upgradeSeries).
func (m *Metrics) refresh() {
	m.w.mu.Lock()
	running := m.w.st.slotsRunning()
	m.w.mu.Unlock()
	m.containers.WithLabelValues().Set(float64(running))
}

// upgradeSeries collects regcheck_unplanned_upgrade from the upgrades that
// stand when scraped: no series is kept between scrapes, and none is made
// between them (a GaugeVec reset and refilled each flush made and held
// one per upgrade, 10,000 in the bench).
type upgradeSeries struct {
	w    *Watcher
	desc *prometheus.Desc
}

func newUpgradeSeries(w *Watcher) *upgradeSeries {
	ch := make(chan *prometheus.Desc, 1)
	metrics.UnplannedUpgrade.Gauge(prometheus.NewRegistry()).Describe(ch)
	return &upgradeSeries{w: w, desc: <-ch}
}

// Describe sends the family's one description.
func (u *upgradeSeries) Describe(ch chan<- *prometheus.Desc) { ch <- u.desc }

// Collect sends one series, valued 1, per upgrade that stands (not those
// said as a node's cache: nobody must act on them); label sets
// that two slots share (container and volume names alike) are sent once.
func (u *upgradeSeries) Collect(ch chan<- prometheus.Metric) {
	type labels [6]string
	u.w.mu.Lock()
	seen := map[labels]bool{}
	for k, st := range u.w.st.slots {
		if up := st.upgrade; up != nil && !up.NodeCache {
			seen[labels{metrics.LabelValue(k.ns), metrics.LabelValue(k.kind), metrics.LabelValue(k.name),
				metrics.LabelValue(k.container + k.volume), up.From, up.To}] = true
		}
	}
	u.w.mu.Unlock()
	for l := range seen {
		ch <- prometheus.MustNewConstMetric(u.desc, prometheus.GaugeValue, 1, l[:]...)
	}
}

// gathered is a deep walk's series, gathered once from the registry they
// were made in, so that neither the registry nor its vectors stay alive.
type gathered []*dto.MetricFamily

func gather(reg *prometheus.Registry) (*gathered, error) {
	mfs, err := reg.Gather()
	g := gathered(mfs)
	return &g, err
}

// Gather returns the families, each a copy whose metric list the caller
// may sort (the metrics themselves are shared and must not be changed).
func (g *gathered) Gather() ([]*dto.MetricFamily, error) {
	out := make([]*dto.MetricFamily, len(*g))
	for i, mf := range *g {
		cp := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Unit: mf.Unit}
		cp.Metric = append([]*dto.Metric(nil), mf.Metric...)
		out[i] = cp
	}
	return out, nil
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
