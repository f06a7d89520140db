package mirrorsets

import (
	"errors"
	"sort"
)

// topo is runtime-utils' topoGraph (pkg/registries/topo.go): a graph whose
// sort starts from the nodes without predecessors in name order, takes each
// node's newly free successors in name order, and breaks a loop with the
// first unused node by name.
type topo struct {
	nodes map[string]*topoNode
}

type topoNode struct {
	name string
	used bool
	ins  map[*topoNode]bool // unprocessed predecessors
	outs map[*topoNode]bool
}

func newTopo() *topo { return &topo{nodes: map[string]*topoNode{}} }

func (g *topo) node(name string) *topoNode {
	n, ok := g.nodes[name]
	if !ok {
		n = &topoNode{name: name, ins: map[*topoNode]bool{}, outs: map[*topoNode]bool{}}
		g.nodes[name] = n
	}
	return n
}

func (g *topo) edge(from, to string) {
	f, t := g.node(from), g.node(to)
	f.outs[t] = true
	t.ins[f] = true
}

func byName(ns []*topoNode) {
	sort.Slice(ns, func(i, j int) bool { return ns[i].name < ns[j].name })
}

// sorted empties the graph's predecessor sets as it goes.
func (g *topo) sorted() ([]string, error) {
	all := make([]*topoNode, 0, len(g.nodes))
	for _, n := range g.nodes {
		all = append(all, n)
	}
	byName(all)
	var queue []*topoNode
	for _, n := range all {
		if len(n.ins) == 0 {
			queue = append(queue, n)
		}
	}
	var res []string
	next := 0
	for len(queue) > 0 || next < len(all) {
		var n *topoNode
		if len(queue) > 0 {
			n, queue = queue[0], queue[1:]
		} else { // a loop: the first unused node by name breaks it
			n = all[next]
			next++
			if n.used {
				continue
			}
		}
		n.used = true
		res = append(res, n.name)
		var batch []*topoNode
		for out := range n.outs {
			delete(out.ins, n)
			if len(out.ins) == 0 && !out.used {
				batch = append(batch, out)
			}
		}
		byName(batch)
		queue = append(queue, batch...)
	}
	if len(res) != len(g.nodes) {
		return nil, errors.New("not every mirror was placed")
	}
	return res, nil
}
