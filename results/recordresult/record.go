// Package recordresult is what regcheck record saw and saved: the entries
// of a snapshot (which digest each container ran), and the changes since
// the previous one. Filled by package record and rendered by report; it
// imports nothing of Kubernetes, so a renderer names it without linking
// client-go.
package recordresult

import "time"

// UpdateResult says what Update had to do beyond storing the history.
type UpdateResult struct {
	// Trimmed is how many of the oldest records (by LastSeen) were dropped
	// to fit the store's size limit. Only the ConfigMap store trims.
	Trimmed int
	// Message explains Trimmed in a sentence; empty when nothing was trimmed.
	Message string
}

// Result is what Save did.
type Result struct {
	UpdateResult
	// Snapshot is the snapshot saved.
	Snapshot Snapshot
	// Previous is, for each owner container of the saved snapshot, its most
	// recent earlier records as the history held them (History.Previous).
	// Time is the earliest of their LastSeen times, and zero when no owner
	// container of the snapshot had been recorded before.
	Previous Snapshot
	// Changes are the containers now running a digest they did not run at Previous.
	Changes []Change
}

// Entry is one container, or one image volume, of one pod seen at one time.
type Entry struct {
	Cluster   string    `json:"cluster"`
	Time      time.Time `json:"time"`
	Namespace string    `json:"namespace"`
	OwnerKind string    `json:"ownerKind"`
	OwnerName string    `json:"ownerName"`
	Pod       string    `json:"pod"`
	Container string    `json:"container"` // empty for an image volume
	// Volume is an image volume's name (volumes[].image, pulled and
	// recorded as a container's image is); empty for a container.
	Volume       string    `json:"volume,omitempty"`
	Image        string    `json:"image"`            // the spec's image string (an image volume's reference)
	Digest       string    `json:"digest,omitempty"` // running repo digest; empty when the runtime reported none
	ImageID      string    `json:"imageID,omitempty"`
	Node         string    `json:"node,omitempty"`
	PullPolicy   string    `json:"pullPolicy,omitempty"`
	StartedAt    time.Time `json:"startedAt,omitzero"`
	RestartCount int32     `json:"restartCount"`
}

// Snapshot is what ran in one cluster at one time.
type Snapshot struct {
	Cluster string
	Time    time.Time
	Entries []Entry
}

// Change is a container (or image volume) running a digest it did not run
// at the previous snapshot.
type Change struct {
	Cluster, Namespace, OwnerKind, OwnerName, Container string
	Volume                                              string `json:",omitempty"` // an image volume's name; Container is then ""
	Pod, Node, Image                                    string
	From                                                []string // digests seen before (the same pod's, else the owner container's), sorted
	To                                                  string
}
