package metrics

import (
	"maps"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The watcher's gauges (regcheck watch serves them at /metrics).
const (
	WatchLastSync           Name = "regcheck_watch_last_sync_timestamp_seconds"
	WatchLeader             Name = "regcheck_watch_leader"
	UnplannedUpgrade        Name = "regcheck_unplanned_upgrade"
	ContainerImageAvailable Name = "regcheck_container_image_available"
)

// The watcher's counters.
const (
	WatchEvents      Name = "regcheck_watch_events_total"
	WatchWrites      Name = "regcheck_watch_writes_total"
	WatchWriteErrors Name = "regcheck_watch_write_errors_total"
	WatchTransitions Name = "regcheck_watch_transitions_total"
)

// The watcher's label names: an owner container's, a transition's.
const (
	LabelResource  = "resource" // pods, deployments, ...
	LabelPlanned   = "planned"  // "true" when the spec's image string changed with the digest
	LabelOwnerKind = "owner_kind"
	LabelOwnerName = "owner_name"
	LabelFrom      = "from"
	LabelTo        = "to"
)

// OwnerLabels are the labels of an owner container's series, in order.
var OwnerLabels = []string{LabelNamespace, LabelOwnerKind, LabelOwnerName, LabelContainer}

func init() {
	maps.Copy(families, map[Name]family{
		WatchLastSync: {"When the watcher's informers last synced or delivered an event, in seconds since the Unix epoch.", nil},
		WatchLeader:   {"1 on the watcher that holds the leader lease and writes the history (always 1 without --leader-elect), else 0.", nil},
		UnplannedUpgrade: {"Each owner container whose running digest changed while its spec's image string did not (unplanned-upgrade), from the digest it ran to the one it runs; 1 while it stands.",
			append(append([]string(nil), OwnerLabels...), LabelFrom, LabelTo)},
		ContainerImageAvailable: {"Whether the image each owner container uses still pulls (1) or is broken (0), as the last deep walk found; absent while unknown or not yet walked.",
			append(append([]string(nil), OwnerLabels...), LabelImage)},
	})
}

// counters holds the help and labels of each counter.
var counters = map[Name]family{
	WatchEvents:      {"Informer events the watcher handled, by resource.", []string{LabelResource}},
	WatchWrites:      {"History writes that succeeded.", nil},
	WatchWriteErrors: {"History writes that failed (retried at the next flush).", nil},
	WatchTransitions: {"Changes of running digest recorded, by whether the spec's image string changed with them (a first sighting counts as planned).", []string{LabelPlanned}},
}

// Counter registers the counter family n with reg and returns it; it
// panics for a name that is not one of the watcher's counters.
func (n Name) Counter(reg prometheus.Registerer) *prometheus.CounterVec {
	f, ok := counters[n]
	if !ok {
		panic("metrics: no counter " + string(n))
	}
	return promauto.With(reg).NewCounterVec(prometheus.CounterOpts{Name: string(n), Help: f.help}, f.labels)
}
