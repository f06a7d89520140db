package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The well-known node labels that say a node's platform.
const (
	LabelOS   = "kubernetes.io/os"
	LabelArch = "kubernetes.io/arch"
)

// Node is one node as a pull needs it: its name, labels and the platform
// its runtime pulls for (os/arch, from the kubernetes.io/os and
// kubernetes.io/arch labels, else from status.nodeInfo).
type Node struct {
	Name     string
	Platform string
	Labels   map[string]string
	node     *corev1.Node // for the scheduler's own affinity match
}

// Placement is what of a pod's spec decides which nodes may run it: its
// nodeSelector, its required node affinity and its tolerations (of the
// nodes' NoSchedule and NoExecute taints). Topology spread and resources
// are not read.
type Placement struct {
	NodeSelector map[string]string
	Affinity     *corev1.NodeSelector // requiredDuringSchedulingIgnoredDuringExecution
	Tolerations  []corev1.Toleration
}

// placementOf reads a pod spec's placement.
func placementOf(spec *corev1.PodSpec) Placement {
	p := Placement{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		p.Affinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return p
}

// Eligibility is the nodes a container's pod may run on, and why.
type Eligibility struct {
	// Nodes are the eligible nodes, sorted by name; empty when the nodes
	// are unknown (listing them was forbidden).
	Nodes []Node
	// Why says how they were chosen, as a person reads it.
	Why string
}

// Platforms returns the eligible nodes' platforms, each with its nodes.
func (e Eligibility) Platforms() map[string][]string {
	out := map[string][]string{}
	for _, n := range e.Nodes {
		out[n.Platform] = append(out[n.Platform], n.Name)
	}
	return out
}

// Eligible returns the nodes container c's pod may run on: those its
// nodeSelector and required node affinity match and whose NoSchedule and
// NoExecute taints it tolerates, as the scheduler's own helpers say, and
// the node it runs on. A pod no node matches is taken as able to
// run anywhere: the nodes that would serve it are not yet in the cluster.
func (inv *Inventory) Eligible(c Container) Eligibility {
	if len(inv.Nodes) == 0 {
		return Eligibility{}
	}
	required := nodeaffinity.NewRequiredNodeAffinity(c.Placement.NodeSelector, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: c.Placement.Affinity}})
	var out []Node
	for _, n := range inv.Nodes {
		ok, err := required.Match(n.node)
		if (err == nil && ok && tolerated(n.node, c.Placement.Tolerations)) || n.Name == c.Node {
			out = append(out, n)
		}
	}
	constrained := len(c.Placement.NodeSelector) > 0 || c.Placement.Affinity != nil || len(out) < len(inv.Nodes)
	switch {
	case len(out) == 0:
		return Eligibility{Nodes: inv.Nodes, Why: fmt.Sprintf("no node matches its nodeSelector and node affinity: every node (%d)", len(inv.Nodes))}
	case !constrained:
		return Eligibility{Nodes: out, Why: fmt.Sprintf("every node (%d): no nodeSelector or required node affinity", len(out))}
	}
	return Eligibility{Nodes: out, Why: fmt.Sprintf("%d of %d nodes, by its nodeSelector, required node affinity and tolerations: %s", len(out), len(inv.Nodes), names(out))}
}

// tolerated reports whether tolerations tolerate every NoSchedule and
// NoExecute taint of n, as the scheduler's TaintToleration filter asks.
func tolerated(n *corev1.Node, tolerations []corev1.Toleration) bool {
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return !untolerated
}

// newNodes reads the nodes' names, labels and platforms, sorted by name.
func newNodes(items []corev1.Node) []Node {
	out := make([]Node, 0, len(items))
	for i := range items {
		n := &items[i]
		out = append(out, Node{Name: n.Name, Platform: nodePlatform(n), Labels: n.Labels, node: n})
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// nodePlatform is the platform a node's runtime pulls for: os/arch from
// the well-known labels the kubelet sets, else from status.nodeInfo.
func nodePlatform(n *corev1.Node) string {
	os, arch := n.Labels[LabelOS], n.Labels[LabelArch]
	if os == "" {
		os = n.Status.NodeInfo.OperatingSystem
	}
	if arch == "" {
		arch = n.Status.NodeInfo.Architecture
	}
	if os == "" || arch == "" {
		return ""
	}
	return os + "/" + arch
}

func names(ns []Node) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = n.Name
	}
	return strings.Join(s, ", ")
}

// Platforms returns the platforms the cluster's nodes run, sorted; empty
// when the nodes, or their platforms, are unknown.
func (inv *Inventory) Platforms() []string {
	var out []string
	for _, n := range inv.Nodes {
		if n.Platform == "" {
			return nil // one node unknown: every platform may be needed
		}
		if !slices.Contains(out, n.Platform) {
			out = append(out, n.Platform)
		}
	}
	slices.Sort(out)
	return out
}
