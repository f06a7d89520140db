package types

import (
	"fmt"
	"reflect"
	"sort"
	"time"
	"unicode/utf8"
)

// Use is one place an image is used: a manifest file's line, a cluster's
// container, a command-line argument. A scan keeps every use of an image so
// that a report can point at each.
type Use struct {
	// Source is where the reference came from: "args", "images-from", "file", "cluster".
	Source string `json:"source"`
	// Written is the image as the use wrote it (a pod spec's image field,
	// a file's scalar, an argument), before normalisation: an admission
	// engine matches its policies against it, each in its own way. It is
	// not written out: a report names the normalised reference.
	Written string `json:"-"`
	// File and Line locate the reference in a manifest file.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Kind, Namespace and Name identify the workload.
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Container is the container's name in the pod spec.
	Container string `json:"container,omitempty"`
	// Volume is, for a pod's image volume (volumes[].image.reference,
	// which the kubelet pulls as it pulls a container's image), the
	// volume's name; Container is then empty.
	Volume string `json:"volume,omitempty"`
	// Pod and Node say where a container runs, in a cluster.
	Pod  string `json:"pod,omitempty"`
	Node string `json:"node,omitempty"`
	// PullPolicy is the container's imagePullPolicy (an image volume's
	// pullPolicy), when known.
	PullPolicy string `json:"pullPolicy,omitempty"`
	// RunningDigest is the repo digest the container runs, from its
	// imageID (the digest an image volume's status says was mounted).
	RunningDigest string `json:"runningDigest,omitempty"`
	// ImageID is the container status's imageID as the runtime reported it.
	ImageID string `json:"imageID,omitempty"`
	// Platforms are what a pull for this use requires, in a cluster: the
	// platforms of the nodes its pod may run on, each with those nodes.
	// Empty when the nodes are not known: every platform is then required.
	Platforms []NodePlatform `json:"platforms,omitempty"`
	// PlatformsWhy says how the nodes were chosen (the pod's node, its
	// nodeSelector and required node affinity, its tolerations, or every
	// node), and why none was when no node matches.
	PlatformsWhy string `json:"platformsWhy,omitempty"`
}

// NodePlatform is one platform (os/arch) nodes pull for, and those nodes.
type NodePlatform struct {
	Platform string   `json:"platform"`
	Nodes    []string `json:"nodes"`
}

// Target is one image reference to scan and where it is used.
type Target struct {
	Ref  string
	Uses []Use
}

// Image is what a scan found about one image reference.
type Image struct {
	// Reference is the normalized reference (docker.io/library/nginx:latest),
	// or the text as written when it does not parse.
	Reference string `json:"reference"`
	// Digest and MediaType are what the reference resolved to.
	Digest    string    `json:"digest,omitempty"`
	MediaType string    `json:"mediaType,omitempty"`
	Verdict   Verdict   `json:"verdict"`
	Findings  []Finding `json:"findings"`
	Uses      []Use     `json:"uses"`
	// Manifests and Blobs count what the walk checked for this image.
	Manifests int `json:"manifests"`
	Blobs     int `json:"blobs"`
	// Tree is the image as the walk found it, node by node (nil when the
	// reference did not resolve). Reports draw it; it is not in the JSON
	// document, whose findings name every node that is not there.
	Tree *Node `json:"-"`
}

// Node is one manifest or blob of an image's tree, as a walk found it.
type Node struct {
	// Kind is index, manifest, attestation, config or layer.
	Kind string
	// Label names the node in its parent: a child's platform
	// (os/arch[/variant]), "layer 2".
	Label     string
	Digest    string
	MediaType string
	// Subject is the digest an attestation attests to.
	Subject string
	// State is "" (there), missing, absent (the index has no child for a
	// platform asked for), mismatch (other bytes), unchecked (a fault) or
	// skipped (not walked: non-distributable, too large, too deep, a kind
	// regcheck does not walk). Code is the finding that set it.
	State string
	Code  Code
	// Children are an index's manifests, or an image's config and layers,
	// in the order the manifest lists them.
	Children []*Node
}

// Worst returns the highest severity among the image's findings, and false
// when it has none.
func (im *Image) Worst() (Severity, bool) {
	worst, any := SeverityInfo, false
	for _, f := range im.Findings {
		if !any || f.Severity > worst {
			worst, any = f.Severity, true
		}
	}
	return worst, any
}

// Result is the outcome of a scan.
type Result struct {
	// Images in the order their references were first given.
	Images []*Image `json:"images"`
	// Requests counts the HTTP requests sent, by host, kind and status.
	Requests []RequestCount `json:"requests"`
	// InputErrors are the inputs that could not be read (a file, a line):
	// their images were not scanned, so the result is incomplete.
	InputErrors []InputError `json:"inputErrors,omitempty"`
	// Reasked counts the images a transient fault left unknown that were
	// asked again after a pause; Recovered, those that then got a verdict.
	Reasked   int `json:"reasked,omitempty"`
	Recovered int `json:"recovered,omitempty"`
	// RateLimits are the pull budgets of the registry hosts that said
	// theirs, or on which a manifest GET was withheld, by host.
	RateLimits []RateLimit `json:"rateLimits,omitempty"`
	// Started and Duration time the scan.
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"durationNanos"`
	// Shard says which part of a scan split by repository this is; nil
	// for a whole scan.
	Shard *Shard `json:"shard,omitempty"`
	// Running is the verdict of each running digest a cluster check
	// walked, by its reference as repo@digest: what a caller that
	// follows the digests up (the watcher) knows without walking them
	// again. Not written out.
	Running map[string]Verdict `json:"-"`
}

// Shard is one part of a scan split by repository (regcheck scan --shard
// INDEX/COUNT): the images whose repository falls in part Index of Count.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Count returns how many images have each verdict.
func (r *Result) Count() map[Verdict]int {
	out := map[Verdict]int{OK: 0, AtRisk: 0, Unknown: 0, Broken: 0}
	for _, im := range r.Images {
		out[im.Verdict]++
	}
	return out
}

// Sorted returns the images worst first (broken, unknown, at-risk, ok), in
// input order within each verdict.
func (r *Result) Sorted() []*Image {
	out := append([]*Image{}, r.Images...) // [] for none: a shard may hold no image
	sort.SliceStable(out, func(i, j int) bool { return out[i].Verdict.Rank() < out[j].Verdict.Rank() })
	return out
}

// InputError is an input that could not be read, or a part of one: a file
// that is missing or not YAML, a line that is not a reference.
type InputError struct {
	// Source is the file's path as given, or "stdin".
	Source string `json:"source"`
	// Line is the line in Source, when known.
	Line int `json:"line,omitempty"`
	// Column is the column on Line (1 for its first character, counted
	// in characters), when known: a YAML parse error's.
	Column int `json:"column,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Notice is true for an input skipped on purpose (a Helm template, a
	// file that is not a regular file): it does not make the run incomplete.
	Notice bool `json:"notice,omitempty"`
}

// MaxMessage bounds an input error's message: a parser or a template
// engine can say 100 KB about one file (a recursive Helm include), which
// every report format would repeat.
const MaxMessage = 1 << 10

// Capped is s cut to MaxMessage bytes, at a rune boundary, with how much
// was left out.
func Capped(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}

// UpdateVerdict recomputes the image's verdict from its findings, for
// callers that add findings after a scan.
func (im *Image) UpdateVerdict() { im.Verdict = VerdictOf(im.Findings) }

// RateLimit is one registry host's pull budget as its answers said it
// (the RateLimit-Limit and RateLimit-Remaining headers Docker Hub sends:
// "100;w=21600"), and the manifest GETs a scan sent there and held back.
// On Docker Hub each manifest GET is a pull; a HEAD is not.
type RateLimit struct {
	Host string `json:"host"`
	// Reported is true when the host sent its budget. Limit (0 when the
	// host sent only what remains), Remaining and WindowSeconds are then
	// what it said last, and Reserve the pulls a scan leaves untouched;
	// all are zero otherwise (the host is listed for GETs a cap withheld).
	Reported      bool `json:"reported"`
	Limit         int  `json:"limit"`
	Remaining     int  `json:"remaining"`
	WindowSeconds int  `json:"windowSeconds"`
	Reserve       int  `json:"reserve"`
	// MaxPulls is the cap on manifest GETs per host (0: none); Pulls the
	// GETs sent, retries included; Withheld the GETs not sent, to keep
	// within the budget or the cap.
	MaxPulls int `json:"maxPulls"`
	Pulls    int `json:"pulls"`
	Withheld int `json:"withheld"`
}

// RequestCount is how many requests of one kind went to one host and came
// back with one status ("error" when no response came back).
type RequestCount struct {
	Host   string `json:"host"`
	Kind   string `json:"kind"` // ping, token, manifest-head, manifest-get, blob-head, blob-get, redirect, other
	Status string `json:"status"`
	Count  int    `json:"count"`
}

// SumRequests adds up the counts of the same host, kind and status, in
// the order each first appears.
func SumRequests(rs []RequestCount) []RequestCount {
	type key struct{ host, kind, status string }
	idx := map[key]int{}
	var out []RequestCount
	for _, r := range rs {
		k := key{r.Host, r.Kind, r.Status}
		if i, ok := idx[k]; ok {
			out[i].Count += r.Count
			continue
		}
		idx[k] = len(out)
		out = append(out, r)
	}
	return out
}

// IsZero reports whether u says nothing: the use of an image with none.
func (u Use) IsZero() bool { return reflect.ValueOf(u).IsZero() }
