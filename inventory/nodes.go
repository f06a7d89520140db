package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Eligible returns the nodes container c's pod may run on when it next
// starts, as the scheduler would place it: those its nodeSelector and
// required node affinity match (the scheduler's own matcher) and whose
// NoSchedule and NoExecute taints it tolerates, and the node it runs on.
// Condition taints (see ConditionTaint: not-ready, unreachable,
// unschedulable, the pressures...) are not counted: they say how a node is
// this minute, not where the pod may run. When taints leave no node, the
// nodes the nodeSelector and affinity allow are eligible; when those match
// no node, the nodes of the platform they name (kubernetes.io/os,
// kubernetes.io/arch), else none: the nodes that would run the pod are not
// in the cluster, and every platform counts. Why says which.
func (inv *Inventory) Eligible(c Container) Eligibility {
	if len(inv.Nodes) == 0 {
		return Eligibility{}
	}
	allowed := inv.matching(c, c.Placement)
	placed := tolerating(allowed, c)
	constrained := len(c.Placement.NodeSelector) > 0 || c.Placement.Affinity != nil || len(placed) < len(inv.Nodes)
	switch {
	case len(allowed) == 0:
		return inv.platformFallback(c)
	case len(placed) == 0:
		return Eligibility{Nodes: allowed, Why: fmt.Sprintf("no node it may run on tolerates its taints (%s): the %d of %d nodes its nodeSelector and node affinity allow: %s",
			untoleratedTaints(allowed, c), len(allowed), len(inv.Nodes), names(allowed))}
	case !constrained:
		return Eligibility{Nodes: placed, Why: fmt.Sprintf("every node (%d): no nodeSelector or required node affinity%s", len(placed), conditionsSetAside(placed))}
	}
	return Eligibility{Nodes: placed, Why: fmt.Sprintf("%d of %d nodes, by its nodeSelector, required node affinity and tolerations: %s%s",
		len(placed), len(inv.Nodes), names(placed), conditionsSetAside(placed))}
}

// matching returns the nodes placement p's nodeSelector and required node
// affinity match, and c's own node.
func (inv *Inventory) matching(c Container, p Placement) []Node {
	required := nodeaffinity.NewRequiredNodeAffinity(p.NodeSelector, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: p.Affinity}})
	var out []Node
	for _, n := range inv.Nodes {
		if ok, err := required.Match(n.node); (err == nil && ok) || n.Name == c.Node {
			out = append(out, n)
		}
	}
	return out
}

// tolerating returns the nodes of ns whose taints c tolerates, and c's own
// node.
func tolerating(ns []Node, c Container) []Node {
	var out []Node
	for _, n := range ns {
		if n.Name == c.Node || tolerated(n.node, c.Placement.Tolerations) {
			out = append(out, n)
		}
	}
	return out
}

// platformFallback is Eligible for a pod whose nodeSelector and affinity
// match no node: the nodes of the platform they name, else none.
func (inv *Inventory) platformFallback(c Container) Eligibility {
	p, named := platformPart(c.Placement)
	if !named {
		return Eligibility{Why: "no node matches its nodeSelector and required node affinity, which name no platform: the nodes that would run it are not in the cluster, so every platform counts"}
	}
	ns := inv.matching(c, p)
	if len(ns) == 0 {
		return Eligibility{Why: "no node matches its nodeSelector and required node affinity, nor the platform they name: the nodes that would run it are not in the cluster, so every platform counts"}
	}
	return Eligibility{Nodes: ns, Why: fmt.Sprintf("no node matches its nodeSelector and required node affinity: the %d of %d nodes of the platform they name: %s", len(ns), len(inv.Nodes), names(ns))}
}

// platformPart returns the part of p that names a platform (the
// kubernetes.io/os and kubernetes.io/arch requirements) and whether there
// is one. A required affinity term that names no platform allows every
// platform, so the affinity then names none.
func platformPart(p Placement) (Placement, bool) {
	var out Placement
	for k, v := range p.NodeSelector {
		if k == LabelOS || k == LabelArch {
			if out.NodeSelector == nil {
				out.NodeSelector = map[string]string{}
			}
			out.NodeSelector[k] = v
		}
	}
	if p.Affinity != nil {
		out.Affinity = &corev1.NodeSelector{}
		for _, t := range p.Affinity.NodeSelectorTerms {
			var exprs []corev1.NodeSelectorRequirement
			for _, e := range t.MatchExpressions {
				if e.Key == LabelOS || e.Key == LabelArch {
					exprs = append(exprs, e)
				}
			}
			if len(exprs) == 0 {
				out.Affinity = nil
				break
			}
			out.Affinity.NodeSelectorTerms = append(out.Affinity.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: exprs})
		}
	}
	return out, len(out.NodeSelector) > 0 || out.Affinity != nil
}

// ConditionTaint reports whether t is a condition of the moment rather
// than a statement of where pods may run: the taints the node lifecycle
// controller and the cloud node controller add and remove
// (node.kubernetes.io/not-ready, unreachable, unschedulable,
// disk-pressure, memory-pressure, pid-pressure, network-unavailable,
// out-of-service; node.cloudprovider.kubernetes.io/uninitialized,
// shutdown).
func ConditionTaint(t corev1.Taint) bool {
	return strings.HasPrefix(t.Key, "node.kubernetes.io/") || strings.HasPrefix(t.Key, "node.cloudprovider.kubernetes.io/")
}

// tolerated reports whether tolerations tolerate every NoSchedule and
// NoExecute taint of n that is not a condition taint, as the scheduler's
// TaintToleration filter asks.
func tolerated(n *corev1.Node, tolerations []corev1.Toleration) bool {
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, tolerations, placing, false)
	return !untolerated
}

// placing reports whether t keeps pods that do not tolerate it off its
// node: a NoSchedule or NoExecute taint that is not a condition taint.
func placing(t *corev1.Taint) bool {
	return (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !ConditionTaint(*t)
}

// untoleratedTaints names the placing taints of ns that c does not
// tolerate, each once, sorted.
func untoleratedTaints(ns []Node, c Container) string {
	var out []string
	for _, n := range ns {
		for _, t := range n.node.Spec.Taints {
			if placing(&t) && !slices.ContainsFunc(c.Placement.Tolerations, func(tl corev1.Toleration) bool { return tl.ToleratesTaint(logr.Discard(), &t, false) }) {
				if s := t.ToString(); !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// conditionsSetAside says which condition taints of ns were not counted,
// or nothing when there are none.
func conditionsSetAside(ns []Node) string {
	var out []string
	for _, n := range ns {
		for _, t := range n.node.Spec.Taints {
			if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && ConditionTaint(t) && !slices.Contains(out, t.Key) {
				out = append(out, t.Key)
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	slices.Sort(out)
	return "; condition taints not counted: " + strings.Join(out, ", ")
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

// SlimNode strips a node to what an inventory reads of it, for a cache
// that keeps nodes (the watcher's informer): its name and labels, its
// taints, the platform of status.nodeInfo, and of its image cache only the
// repo@digest names. A node's image cache is most of its size.
func SlimNode(n *corev1.Node) {
	var images []corev1.ContainerImage
	for _, img := range n.Status.Images {
		var names []string
		for _, name := range img.Names {
			if _, _, kind := parseImageID(name); kind == ImageIDRepoDigest {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			images = append(images, corev1.ContainerImage{Names: names})
		}
	}
	n.ObjectMeta = metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, ResourceVersion: n.ResourceVersion, UID: n.UID}
	n.Spec = corev1.NodeSpec{Taints: n.Spec.Taints}
	n.Status = corev1.NodeStatus{Images: images,
		NodeInfo: corev1.NodeSystemInfo{OperatingSystem: n.Status.NodeInfo.OperatingSystem, Architecture: n.Status.NodeInfo.Architecture}}
}
