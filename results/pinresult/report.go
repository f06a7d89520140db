// Package pinresult is what pin finds and does: its findings, the changes
// it makes to files, the files before and after, and their unified diff.
// Filled by package pin and rendered by report; like types, it imports no
// HTTP, so a renderer names it without linking the registry client.
package pinresult

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// File is one file Run read. New differs from Old when Run changed (or
// would change) it.
type File struct {
	Path     string
	Old, New []byte
}

// Changed reports whether the file was, or would be, edited.
func (f File) Changed() bool { return f.New != nil && !bytes.Equal(f.Old, f.New) }

// Report is what Run did.
type Report struct {
	Files    []File
	Changes  []Change // in file order; a Change with Skipped set was not made
	Findings []Finding
	// Requests counts the registry requests sent, by host, kind and status.
	Requests []types.RequestCount
	// Written is set when Run wrote the files it changed (Config.Write);
	// otherwise Files hold what they would become.
	Written bool
}

// Changed returns the files that were, or would be, edited.
func (r *Report) Changed() []File {
	var out []File
	for _, f := range r.Files {
		if f.Changed() {
			out = append(out, f)
		}
	}
	return out
}

// Change is one edit Rewrite made, or would have made but could not (see
// Skipped).
type Change struct {
	File                  string
	Line                  int // 1-based line of the edited value
	Kind, Namespace, Name string
	Container             string
	// Volume is, for an image volume's reference (volumes[].image), the
	// volume's name; Container is then empty.
	Volume string
	// Field is "image" for a reference (for a kustomization, the images
	// entry's effective reference, whose digest: was set; for an image
	// volume, its reference:), "imagePullPolicy", or "pullPolicy" (an
	// image volume's).
	Field    string
	Old, New string
	// Skipped says why the edit was not made, for a value reached through a
	// YAML alias or written in a form Rewrite does not edit (block scalar,
	// escapes, a value split over lines). Empty when the edit was made.
	Skipped string
}

// String formats c as "file:line: field old -> new", with the reason when
// the edit was not made.
func (c Change) String() string {
	s := fmt.Sprintf("%s:%d: %s %s -> %s", c.File, c.Line, c.Field, c.Old, c.New)
	if c.Skipped != "" {
		s += " (not edited: " + c.Skipped + ")"
	}
	return s
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
	// KindPlatformMismatch: not pinned: the digest is a single-platform
	// manifest that some node the workload may run on cannot run.
	KindPlatformMismatch Kind = "platform-mismatch"
)

// Kinds is every finding kind, for outputs that list rules.
var Kinds = []Kind{KindUnpinned, KindInvalid, KindBroken, KindUnresolved, KindUnverified, KindAtRisk,
	KindUntagged, KindNotEdited, KindNoRecord, KindUnparseable, KindTemplate, KindUnwritable, KindChanged,
	KindAmbiguous, KindPlatform, KindSkipped, KindUnrendered, KindLeftOut, KindPolicyUnread, KindPlatformMismatch}

// Level is "error", "warning" or "note", as SARIF and GitHub name them.
func (k Kind) Level() string {
	switch k {
	case KindInvalid, KindBroken, KindUnparseable, KindUnwritable, KindUnresolved, KindChanged, KindPlatform, KindUnrendered, KindPolicyUnread, KindPlatformMismatch:
		return "error"
	case KindTemplate, KindNoRecord, KindSkipped, KindLeftOut:
		return "note"
	}
	return "warning"
}

// Fails reports whether a finding of kind k means the run found what it
// is there to catch (exit 1): an unpinned reference, or a pin refused.
func (k Kind) Fails() bool {
	return k == KindUnpinned || k == KindInvalid || k == KindBroken || k == KindPlatformMismatch
}

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
	case KindPlatformMismatch:
		return "not pinned: the digest is a single-platform manifest some node the workload may run on cannot run"
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

// Pinned reports whether ref, as written in a manifest, is a valid
// reference with a digest. Space around it makes it invalid: a quoted
// " nginx" is no image Kubernetes accepts, and is never counted pinned.
func Pinned(ref string) bool {
	if strings.TrimSpace(ref) != ref {
		return false
	}
	r, err := imageref.Parse(ref)
	return err == nil && r.Pinned()
}
