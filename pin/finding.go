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

// Kind names a kind of finding. The set is fixed: outputs and CI match on it.
type Kind string

// Finding kinds.
const (
	KindUnpinned     Kind = "unpinned"          // --check: the reference has no digest
	KindInvalid      Kind = "invalid-reference" // the reference cannot be parsed, so cannot be pinned
	KindBroken       Kind = "broken"            // not pinned: the digest's tree is broken (or the tag is gone), or an enforcing image policy refuses it
	KindUnresolved   Kind = "unresolved"        // not pinned: the registry could not be asked
	KindUnverified   Kind = "unverified"        // pinned, but the walk could not check the whole tree
	KindAtRisk       Kind = "at-risk"           // pinned; the tree pulls but lost something (attestations)
	KindUntagged     Kind = "untagged-digest"   // no tag points at the pinned digest: a GC deleting untagged manifests deletes it
	KindNotEdited    Kind = "not-edited"        // a YAML alias or a scalar form pin does not edit
	KindNoRecord     Kind = "no-record"         // no running digest known for the container
	KindUnparseable  Kind = "unparseable"       // the file is not YAML: skipped, left as is
	KindTemplate     Kind = "template"          // a Helm template: skipped on purpose
	KindUnwritable   Kind = "unwritable"        // the file could not be read or written
	KindChanged      Kind = "changed-on-disk"   // --write: the file changed after Run read it: left as is
	KindAmbiguous    Kind = "ambiguous-record"  // the running digest recorded differs between clusters: left as is
	KindPlatform     Kind = "platform-digest"   // the running digest is a platform manifest of an index the tag no longer points at
	KindSkipped      Kind = "skipped"           // not a regular file (a named pipe, a device, a symlink to nothing): not read
	KindUnrendered   Kind = "unrendered"        // a kustomization or chart (or a file it names) could not be rendered
	KindLeftOut      Kind = "left-out"          // left out of a render on purpose: a remote base, a dependency not in charts/
	KindPolicyUnread Kind = "policy-unread"     // an image policy (a cluster's kind, a file's object) could not be read: pins were not checked against it
)

// Kinds is every finding kind, for outputs that list rules.
var Kinds = []Kind{KindUnpinned, KindInvalid, KindBroken, KindUnresolved, KindUnverified, KindAtRisk,
	KindUntagged, KindNotEdited, KindNoRecord, KindUnparseable, KindTemplate, KindUnwritable, KindChanged,
	KindAmbiguous, KindPlatform, KindSkipped, KindUnrendered, KindLeftOut, KindPolicyUnread}

// Level is "error", "warning" or "note", as SARIF and GitHub name them.
func (k Kind) Level() string {
	switch k {
	case KindInvalid, KindBroken, KindUnparseable, KindUnwritable, KindUnresolved, KindChanged, KindPlatform, KindUnrendered, KindPolicyUnread:
		return "error"
	case KindTemplate, KindNoRecord, KindSkipped, KindLeftOut:
		return "note"
	}
	return "warning"
}

// Fails reports whether a finding of kind k means the run found what it
// is there to catch (exit 1): an unpinned reference, or a pin refused.
func (k Kind) Fails() bool { return k == KindUnpinned || k == KindInvalid || k == KindBroken }

// Incomplete reports whether a finding of kind k means something could not
// be done (exit 3 when nothing fails).
func (k Kind) Incomplete() bool {
	switch k {
	case KindUnparseable, KindUnwritable, KindUnresolved, KindUnverified, KindChanged, KindAmbiguous, KindPlatform, KindUnrendered, KindPolicyUnread:
		return true
	}
	return false
}

// Describe says in a sentence what a finding of kind k means.
func (k Kind) Describe() string {
	switch k {
	case KindUnpinned:
		return "image reference not pinned to a digest"
	case KindInvalid:
		return "image reference cannot be parsed, so cannot be pinned"
	case KindBroken:
		return "not pinned: the registry's tree for the digest is broken, or an enforcing image policy would refuse it (a signature gone)"
	case KindUnresolved:
		return "not pinned: the registry could not be asked"
	case KindUnverified:
		return "pinned without checking the whole tree"
	case KindAtRisk:
		return "pinned; the image pulls but lost attestations"
	case KindUntagged:
		return "no tag points at the pinned digest: registry GC of untagged manifests deletes it"
	case KindNotEdited:
		return "reference not edited (YAML alias or unsupported scalar form)"
	case KindNoRecord:
		return "no recorded running digest for the container"
	case KindUnparseable:
		return "file is not valid YAML: skipped"
	case KindTemplate:
		return "Helm template: skipped"
	case KindUnwritable:
		return "file could not be read or written"
	case KindChanged:
		return "file changed on disk while pin ran: left as is"
	case KindAmbiguous:
		return "not pinned: the clusters recorded run different digests"
	case KindPlatform:
		return "not pinned: the running digest is a platform manifest of an index the tag no longer points at"
	case KindSkipped:
		return "not a regular file: skipped"
	case KindUnrendered:
		return "a kustomization or chart could not be rendered, whole or in part"
	case KindLeftOut:
		return "left out of a render on purpose (a remote base, a dependency not in charts/)"
	case KindPolicyUnread:
		return "an image policy could not be read: the pins were not checked against it"
	}
	return string(k)
}

// Finding is one thing Run reports about a reference or a file.
type Finding struct {
	Kind    Kind   `json:"kind"`
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Ref     string `json:"ref,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Message string `json:"message"`
}

// String is "file:line: kind: message", or "kind: message" for a finding
// of no file (the cluster's image policies).
func (f Finding) String() string {
	if f.File == "" {
		return fmt.Sprintf("%s: %s", f.Kind, f.Message)
	}
	loc := f.File
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, f.Kind, f.Message)
}
