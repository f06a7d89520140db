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
	"github.com/regcheck/regcheck/report"
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
	unplanned  *prometheus.GaugeVec
	containers *prometheus.GaugeVec // record's regcheck_record_containers
	recordOK   *prometheus.GaugeVec // record's last success
	// walk holds the last deep walk's series (scan's families and the
	// availability of each container's image).
	walk atomic.Pointer[prometheus.Registry]
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
	m.unplanned = metrics.UnplannedUpgrade.Gauge(m.lead)
	m.containers = metrics.RecordContainers.Gauge(m.lead)
	m.recordOK = metrics.LastSuccess.Gauge(m.lead)
	return m
}

// Gather gathers every series this replica exports now.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	gs := prometheus.Gatherers{m.health}
	if m.w.Leader() {
		gs = append(gs, m.lead)
		if r := m.walk.Load(); r != nil {
			gs = append(gs, r)
		}
	}
	return gs.Gather()
}

var _ prometheus.Gatherer = (*Metrics)(nil)

// Handler serves /metrics (client_golang's exposition), /healthz (200 while
// the process runs) and /readyz (200 once the informers synced and the
// history was reconciled, on every replica).
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { rw.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if !m.w.Ready() {
			http.Error(rw, "informers not synced", http.StatusServiceUnavailable)
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

func (m *Metrics) transition(t record.Transition) {
	m.transitions.WithLabelValues(strconv.FormatBool(t.TemplateChanged)).Inc()
}

// refresh sets the unplanned-upgrade series to the upgrades that stand,
// and the containers recorded.
func (m *Metrics) refresh() {
	m.w.mu.Lock()
	ups := m.w.st.upgrades()
	running := m.w.st.slotsRunning()
	m.w.mu.Unlock()
	m.unplanned.Reset()
	for k, u := range ups {
		m.unplanned.WithLabelValues(report.LabelValue(k.ns), report.LabelValue(k.kind), report.LabelValue(k.name),
			report.LabelValue(k.container+k.volume), u.From, u.To).Set(1)
	}
	m.containers.WithLabelValues().Set(float64(running))
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
