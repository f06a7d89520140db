package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/types"
)

// usePlatforms sets what a container's pull requires: the platforms of the
// nodes its pod may run on (see inventory.Inventory.Eligible). No
// platform, and so every one, is required when a node's platform is
// unknown, and when no node is eligible (the why then says so).
func usePlatforms(inv *inventory.Inventory, c inventory.Container, u *types.Use) {
	e := inv.Eligible(c)
	for p, nodes := range e.Platforms() {
		if p == "" {
			u.Platforms = nil // a node whose platform is unknown may need any
			return
		}
		u.Platforms = append(u.Platforms, types.NodePlatform{Platform: p, Nodes: nodes})
	}
	if len(u.Platforms) == 0 {
		u.PlatformsWhy = e.Why
		return
	}
	sort.Slice(u.Platforms, func(i, j int) bool { return u.Platforms[i].Platform < u.Platforms[j].Platform })
	u.PlatformsWhy = e.Why
}

// narrowToNodes judges an image's platform-specific losses for the nodes
// that matter: a piece lost only for a platform no use's node runs is
// LostForOtherPlatform (info); lost for some of a use's nodes while others
// still pull it, LostForSomeNodes (at-risk, naming them); lost for every
// node of some use, or for nodes a use must pull on (mustPull), it stays as
// the walk found it (broken). A use whose nodes are unknown requires every
// platform.
func narrowToNodes(im *types.Image) {
	lost := lostPlatforms(im)
	if len(lost) == 0 {
		return
	}
	for i, f := range im.Findings {
		if !platformLoss(f) {
			continue
		}
		switch needing := needers(im.Uses, f.Platform); {
		case len(needing) == 0:
			im.Findings[i] = recode(f, types.LostForOtherPlatform,
				fmt.Sprintf("; no node the workloads may run on is %s (they run %s)", f.Platform, strings.Join(usedPlatforms(im.Uses), ", ")))
		case !slices.ContainsFunc(needing, func(u types.Use) bool { return allLost(u, lost) || mustPull(u, f.Platform) }):
			im.Findings[i] = recode(f, types.LostForSomeNodes,
				fmt.Sprintf("; %s cannot pull it, while %s still can", nodesOfPlatform(needing, f.Platform), otherNodes(needing, f.Platform)))
		}
	}
	im.UpdateVerdict()
}

// platformLoss reports whether f is a loss under one platform's child: a
// critical finding, not a fault, that names a platform.
func platformLoss(f types.Finding) bool {
	return f.Platform != "" && f.Severity >= types.SeverityCritical && !f.Code.Fault()
}

// lostPlatforms lists the platforms some piece of the image is lost for.
func lostPlatforms(im *types.Image) []string {
	var out []string
	for _, f := range im.Findings {
		if platformLoss(f) && !slices.Contains(out, f.Platform) {
			out = append(out, f.Platform)
		}
	}
	return out
}

// recode turns a platform loss into code c, keeping what the walk said.
func recode(f types.Finding, c types.Code, why string) types.Finding {
	g := types.NewAdvisedFinding(c, f.Digest, f.Platform, fmt.Sprintf("%s (%s)%s", f.Message, f.Code, why), f.Advice)
	return g
}

// needers returns the uses a platform's pieces matter to: those whose
// nodes include the platform, and those whose nodes are unknown.
func needers(uses []types.Use, platform string) []types.Use {
	var out []types.Use
	for _, u := range uses {
		if len(u.Platforms) == 0 || slices.ContainsFunc(u.Platforms, func(p types.NodePlatform) bool { return Serves(platform, p.Platform) }) {
			out = append(out, u)
		}
	}
	return out
}

// mustPull reports whether u pulls for platform on a node of that
// platform whatever else it may run on: a DaemonSet runs a pod on every
// eligible node, and a running pod whose pull policy is Always pulls again
// on its own node at its next start.
func mustPull(u types.Use, platform string) bool {
	if u.Kind == "DaemonSet" {
		return true
	}
	if u.Pod == "" || u.Node == "" || u.PullPolicy != "Always" {
		return false
	}
	return slices.ContainsFunc(u.Platforms, func(p types.NodePlatform) bool {
		return slices.Contains(p.Nodes, u.Node) && Serves(platform, p.Platform)
	})
}

// allLost reports whether every platform u's nodes run has lost a piece:
// no node u may run on can pull the image.
func allLost(u types.Use, lost []string) bool {
	if len(u.Platforms) == 0 {
		return true
	}
	for _, p := range u.Platforms {
		if !slices.ContainsFunc(lost, func(l string) bool { return Serves(l, p.Platform) }) {
			return false
		}
	}
	return true
}

// Serves reports whether an index child's platform, or a single
// manifest's (os/arch[/variant]), is what a node of platform node (os/arch,
// from its labels) pulls: the node says no variant, so any variant of its
// architecture is its.
func Serves(child, node string) bool {
	c, err1 := v1.ParsePlatform(child)
	n, err2 := v1.ParsePlatform(node)
	if err1 != nil || err2 != nil {
		return child == node
	}
	return c.OS == n.OS && c.Architecture == n.Architecture && (n.Variant == "" || c.Variant == n.Variant)
}

// usedPlatforms lists the platforms the uses' nodes run, sorted.
func usedPlatforms(uses []types.Use) []string {
	var out []string
	for _, u := range uses {
		for _, p := range u.Platforms {
			if !slices.Contains(out, p.Platform) {
				out = append(out, p.Platform)
			}
		}
	}
	slices.Sort(out)
	return out
}

// nodesOfPlatform names the nodes of the uses that run platform.
func nodesOfPlatform(uses []types.Use, platform string) string {
	return nodeList(uses, func(p string) bool { return Serves(platform, p) })
}

// otherNodes names the nodes of the uses that run another platform.
func otherNodes(uses []types.Use, platform string) string {
	return nodeList(uses, func(p string) bool { return !Serves(platform, p) })
}

func nodeList(uses []types.Use, keep func(platform string) bool) string {
	var out []string
	for _, u := range uses {
		for _, p := range u.Platforms {
			if !keep(p.Platform) {
				continue
			}
			for _, n := range p.Nodes {
				if s := fmt.Sprintf("node %s (%s)", n, p.Platform); !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// NarrowToNodes judges an image's platform-specific losses for the nodes
// each use may run on, as Check does (see narrowToNodes): for a caller
// that walked the image itself (gc-check --cleanup).
func NarrowToNodes(im *types.Image) { narrowToNodes(im) }
