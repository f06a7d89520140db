package pin

import (
	stdctx "context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
	"github.com/regcheck/regcheck/yamlfile"
)

// NodesFrom returns a Config.Nodes that gives, for a manifest's workload
// container (or image volume), the nodes its pods may run on in inv, as
// scan --cluster computes them (inventory.Inventory.Eligible), over every
// pod and template of that container. A workload inv does not run (or a
// compose service, a kustomize entry) may run on any node: every node of
// inv is its. Nil when inv knows no node.
func NodesFrom(inv *inventory.Inventory) func(yamlfile.Image) []types.NodePlatform {
	return func(img yamlfile.Image) []types.NodePlatform {
		q := queryOf(img, "")
		byPlatform := map[string][]string{}
		for _, c := range inv.Containers {
			if c.ImageVolume() != (q.Volume != "") || c.Namespace != q.Namespace || c.OwnerKind != q.OwnerKind || c.OwnerName != q.OwnerName || c.Container != q.Container+q.Volume {
				continue
			}
			for p, nodes := range inv.Eligible(c).Platforms() {
				byPlatform[p] = merge(byPlatform[p], nodes)
			}
		}
		if len(byPlatform) == 0 {
			for _, n := range inv.Nodes {
				byPlatform[n.Platform] = merge(byPlatform[n.Platform], []string{n.Name})
			}
		}
		return nodePlatforms(byPlatform)
	}
}

// NodesOf returns a Config.Nodes that gives every image the platforms
// ("linux/arm64"), each with no node named: where the pods will run when
// there is no cluster to ask.
func NodesOf(platforms ...string) func(yamlfile.Image) []types.NodePlatform {
	var out []types.NodePlatform
	for _, p := range platforms {
		out = append(out, types.NodePlatform{Platform: p})
	}
	return func(yamlfile.Image) []types.NodePlatform { return out }
}

// nodePlatforms lists byPlatform sorted by platform; nil when a node's
// platform is unknown ("", which may need any) or there is none.
func nodePlatforms(byPlatform map[string][]string) []types.NodePlatform {
	if _, unknown := byPlatform[""]; unknown {
		return nil
	}
	var out []types.NodePlatform
	for p, nodes := range byPlatform {
		out = append(out, types.NodePlatform{Platform: p, Nodes: nodes})
	}
	slices.SortFunc(out, func(a, b types.NodePlatform) int { return strings.Compare(a.Platform, b.Platform) })
	return out
}

// merge adds the strings of add to to, each once, sorted.
func merge(to, add []string) []string {
	for _, s := range add {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	slices.Sort(to)
	return to
}

// checkNodePlatforms refuses, for every plan about to pin a
// single-platform manifest, the pin some node its sites may run on cannot
// run (Config.Nodes): the manifest's platform is its config's
// os/architecture/variant. An index is never refused: each node pulls its
// own child. A config that cannot be read leaves the reference as is.
func (p *planner) checkNodePlatforms(ctx stdctx.Context) error {
	if p.c.Nodes == nil {
		return nil
	}
	nodes := p.nodesByPlan()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, pl := range p.order {
		if !pl.change || pl.digest == "" || pl.fault != "" || pl.platform != "" || !walk.IsImage(pl.mediaType) || len(nodes[pl]) == 0 {
			continue
		}
		if pl.verdict == types.Broken && !p.c.AllowBroken {
			continue // refused already
		}
		g.Go(func() error {
			p.checkNodePlatform(gctx, pl, nodes[pl])
			return nil
		})
	}
	g.Wait()
	return ctx.Err()
}

// checkNodePlatform refuses pl's pin when a node of nodes cannot run its
// manifest, naming the index to pin instead when the registry has one.
func (p *planner) checkNodePlatform(ctx stdctx.Context, pl *plan, nodes []types.NodePlatform) {
	_, ref, err := p.s.Parse(pl.norm)
	if err != nil {
		return
	}
	platform, err := p.s.Platform(ctx, ref.Context(), pl.digest)
	switch {
	case err != nil:
		pl.fault = fmt.Sprintf("could not read the platform of %s, a single-platform manifest, to check it against the nodes' (%s): %v", pl.digest, platformList(nodes), err)
		return
	case platform == "":
		return // the config names none: any node may run it
	}
	var cannot []string
	for _, np := range nodes {
		if cluster.Serves(platform, np.Platform) {
			continue
		}
		if len(np.Nodes) == 0 {
			cannot = append(cannot, np.Platform)
		}
		for _, n := range np.Nodes {
			cannot = append(cannot, fmt.Sprintf("node %s (%s)", n, np.Platform))
		}
	}
	if len(cannot) == 0 {
		return
	}
	pl.mismatch = fmt.Sprintf("%s is a single-platform manifest for %s; the pods may run on %s: %s cannot run it (exec format error, or no matching manifest)",
		pl.digest, platform, platformList(nodes), strings.Join(cannot, ", "))
	pl.instead = cluster.IndexListing(ctx, p.s, pl.norm, pl.digest)
}

// nodesByPlan gathers Config.Nodes over each plan's sites, each node once.
func (p *planner) nodesByPlan() map[*plan][]types.NodePlatform {
	byPlan := map[*plan]map[string][]string{}
	for img, s := range p.sites {
		if s.pl == nil {
			continue
		}
		nps := p.c.Nodes(img)
		if len(nps) == 0 {
			continue
		}
		m := byPlan[s.pl]
		if m == nil {
			m = map[string][]string{}
			byPlan[s.pl] = m
		}
		for _, np := range nps {
			m[np.Platform] = merge(m[np.Platform], np.Nodes)
		}
	}
	out := map[*plan][]types.NodePlatform{}
	for pl, m := range byPlan {
		out[pl] = nodePlatforms(m)
	}
	return out
}

// platformList names the platforms of nodes, with how many nodes each.
func platformList(nodes []types.NodePlatform) string {
	var out []string
	for _, np := range nodes {
		switch len(np.Nodes) {
		case 0:
			out = append(out, np.Platform)
		case 1:
			out = append(out, fmt.Sprintf("%s (1 node)", np.Platform))
		default:
			out = append(out, fmt.Sprintf("%s (%d nodes)", np.Platform, len(np.Nodes)))
		}
	}
	return strings.Join(out, ", ")
}

// mismatchFinding is the refusal of a plan whose manifest some node
// cannot run.
func (pl *plan) mismatchFinding(ref string) string {
	instead := fmt.Sprintf("no index of %s the registry's tags reach lists it: push a multi-platform image and pin its index", trimTag(pl.norm))
	if pl.instead != "" {
		instead = fmt.Sprintf("the index %s lists it: pin %s@%s instead", pl.instead, trimTag(pl.norm), pl.instead)
	}
	return fmt.Sprintf("refusing to pin %s to %s: %s; %s; left as is", ref, pl.digest, pl.mismatch, instead)
}
