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
// single-platform manifest, the pin at each site some node the site may
// run on cannot run (Config.Nodes): the manifest's platform is its
// config's os/architecture/variant. A site whose nodes all run it is
// pinned. An index is never refused: each node pulls its own child. A
// config that cannot be read leaves the reference as is.
func (p *planner) checkNodePlatforms(ctx stdctx.Context) error {
	if p.c.Nodes == nil {
		return nil
	}
	sites := p.nodesBySite()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, pl := range p.order {
		if !pl.change || pl.digest == "" || pl.fault != "" || pl.platform != "" || !walk.IsImage(pl.mediaType) || len(sites[pl]) == 0 {
			continue
		}
		if pl.verdict == types.Broken && !p.c.AllowBroken {
			continue // refused already
		}
		g.Go(func() error {
			p.checkNodePlatform(gctx, pl, sites[pl])
			return nil
		})
	}
	g.Wait()
	return ctx.Err()
}

// checkNodePlatform refuses pl's pin at each of its sites a node of
// whose cannot run its manifest, naming the index to pin instead when the
// registry has one.
func (p *planner) checkNodePlatform(ctx stdctx.Context, pl *plan, sites map[yamlfile.Image][]types.NodePlatform) {
	_, ref, err := p.s.Parse(pl.norm)
	if err != nil {
		return
	}
	platform, err := p.s.Platform(ctx, ref.Context(), pl.digest)
	switch {
	case err != nil:
		pl.fault = fmt.Sprintf("could not read the platform of %s, a single-platform manifest, to check it against the nodes': %v", pl.digest, err)
		return
	case platform == "":
		return // the config names none: any node may run it
	}
	for img, nodes := range sites {
		if cannot := cannotRun(platform, nodes); len(cannot) > 0 {
			if pl.mismatch == nil {
				pl.mismatch = map[yamlfile.Image]string{}
			}
			pl.mismatch[img] = fmt.Sprintf("%s is a single-platform manifest for %s; the pods may run on %s: %s cannot run it (exec format error, or no matching manifest)",
				pl.digest, platform, platformList(nodes), strings.Join(cannot, ", "))
		}
	}
	if len(pl.mismatch) > 0 {
		pl.instead = cluster.IndexListing(ctx, p.s, pl.norm, pl.digest)
	}
}

// cannotRun names the nodes (or, with none named, the platforms) of nodes
// that cannot run a manifest of platform.
func cannotRun(platform string, nodes []types.NodePlatform) []string {
	var out []string
	for _, np := range nodes {
		if cluster.Serves(platform, np.Platform) {
			continue
		}
		if len(np.Nodes) == 0 {
			out = append(out, np.Platform)
		}
		for _, n := range np.Nodes {
			out = append(out, fmt.Sprintf("node %s (%s)", n, np.Platform))
		}
	}
	return out
}

// nodesBySite asks Config.Nodes for each site of each plan.
func (p *planner) nodesBySite() map[*plan]map[yamlfile.Image][]types.NodePlatform {
	out := map[*plan]map[yamlfile.Image][]types.NodePlatform{}
	for img, s := range p.sites {
		if s.pl == nil {
			continue
		}
		nps := p.c.Nodes(img)
		if len(nps) == 0 {
			continue
		}
		if out[s.pl] == nil {
			out[s.pl] = map[yamlfile.Image][]types.NodePlatform{}
		}
		out[s.pl][img] = nps
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

// mismatchFinding is the refusal at a site some node of whose cannot run
// the plan's manifest, why the message says.
func (pl *plan) mismatchFinding(ref, why string) string {
	instead := fmt.Sprintf("no index of %s the registry's tags reach lists it: push a multi-platform image and pin its index", trimTag(pl.norm))
	if pl.instead != "" {
		instead = fmt.Sprintf("the index %s lists it: pin %s@%s instead", pl.instead, trimTag(pl.norm), pl.instead)
	}
	return fmt.Sprintf("refusing to pin %s to %s: %s; %s; left as is", ref, pl.digest, why, instead)
}
