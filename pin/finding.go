package pin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrNoRecord is what a Config.Running func returns when it knows no
// running digest for an image.
var ErrNoRecord = errors.New("no running digest recorded")

// AmbiguousError is what a Config.Running func returns when its sources
// disagree on the running digest: the newest records of several clusters
// name different digests, or the pods of one workload run different ones.
type AmbiguousError struct {
	// Digests maps each source (a cluster name, or a cluster's pod) to the
	// digest it reports.
	Digests map[string]string
	// Rollout is set when the sources are pods of one workload seen on
	// different digests at once (a rollout under way); otherwise they are
	// clusters, and naming one settles it.
	Rollout bool
}

func (e *AmbiguousError) Error() string {
	var parts []string
	for _, src := range slices.Sorted(maps.Keys(e.Digests)) {
		parts = append(parts, fmt.Sprintf("%s runs %s", src, e.Digests[src]))
	}
	return "the records disagree: " + strings.Join(parts, ", ")
}
