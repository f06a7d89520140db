package yamlfile

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The search for pod specs under a kind podSpecPath does not know is
// bounded: it goes no deeper than maxSearchDepth below the object and
// visits at most maxSearch nodes of one object, so that a large custom
// resource (or one of many aliases) costs little.
const (
	maxSearchDepth = 16
	maxSearch      = 20_000
)

// search adds the images of every pod spec shape under n (an Argo
// Rollout's spec.template.spec, a Knative Service's, a KEDA ScaledJob's
// spec.jobTargetRef.template.spec, an Argo Workflows containerSet): a
// mapping whose containers: is a list of mappings with an image:. A pod
// spec is not searched further.
func (w *walker) search(base Image, n ref, depth int, budget *int, seen map[[2]*yaml.Node]bool) {
	if n.node == nil || w.budget > maxVisits {
		return
	}
	if depth > maxSearchDepth || *budget <= 0 {
		w.searchCut(base, n, depth > maxSearchDepth)
		return
	}
	*budget--
	switch n.node.Kind {
	case yaml.MappingNode:
		if w.podSpec(n) {
			w.specOnce(base, n, seen)
			return
		}
		c := n.node.Content
		for i := 0; i+1 < len(c); i += 2 {
			w.search(base, w.resolve(c[i+1], n.alias, n.pos), depth+1, budget, seen)
		}
	case yaml.SequenceNode:
		for _, e := range n.node.Content {
			w.search(base, w.resolve(e, n.alias, n.pos), depth+1, budget, seen)
		}
	}
}

// podSpec reports whether m is shaped as a pod spec: containers: is a
// list holding a mapping with an image:.
func (w *walker) podSpec(m ref) bool {
	list, ok := w.get(m, "containers")
	if !ok || list.node.Kind != yaml.SequenceNode {
		return false
	}
	for _, c := range list.node.Content {
		if _, ok := w.get(w.resolve(c, list.alias, list.pos), "image"); ok {
			return true
		}
	}
	return false
}

// specOnce adds the containers and image volumes of pod spec spec, each
// image scalar once however often the search reaches it.
func (w *walker) specOnce(base Image, spec ref, seen map[[2]*yaml.Node]bool) {
	from := len(w.sites)
	w.containers(base, spec)
	w.imageVolumes(base, spec)
	kept := w.sites[:from]
	for _, s := range w.sites[from:] {
		// Through an alias, a scalar is another use (a place of its own).
		if k := [2]*yaml.Node{s.Value, nil}; !s.Alias {
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		kept = append(kept, s)
	}
	w.sites = kept
}

// searchCut notes, once per object, a search stopped at its bound above
// something that holds containers: a pod template there is not read, and
// the user is told rather than left with a silent gap.
func (w *walker) searchCut(base Image, n ref, deep bool) {
	if n.node.Kind != yaml.MappingNode && n.node.Kind != yaml.SequenceNode {
		return
	}
	key := base.Kind + "/" + base.Namespace + "/" + base.Name
	if w.cut[key] || !holdsKey(n.node, "containers", 2_000) {
		return
	}
	if w.cut == nil {
		w.cut = map[string]bool{}
	}
	w.cut[key] = true
	why := fmt.Sprintf("deeper than %d levels", maxSearchDepth)
	if !deep {
		why = fmt.Sprintf("past the first %d nodes of the object", maxSearch)
	}
	w.notes = append(w.notes, &Notice{File: w.file, Line: n.node.Line,
		Msg: fmt.Sprintf("%s %s: containers %s are not searched for images; list the field with its kind's image fields or raise the bound", base.Kind, base.Name, why)})
}

// holdsKey reports whether the subtree under n has a mapping key named
// key, looking at no more than limit nodes (aliases not followed).
func holdsKey(n *yaml.Node, key string, limit int) bool {
	stack := []*yaml.Node{n}
	for len(stack) > 0 && limit > 0 {
		limit--
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(x.Content); i += 2 {
				if x.Content[i].Value == key {
					return true
				}
			}
		}
		stack = append(stack, x.Content...)
	}
	return false
}
