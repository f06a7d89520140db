package yamlfile

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxVisits bounds the nodes the walk reaches through aliases, so that a
// small file of nested aliases ("billion laughs") cannot make the walk
// explode. Nodes reached without an alias are not counted: their number is
// bounded by the file's size, and a 10 MB file of plain objects is read.
const maxVisits = 100_000

// podSpecPath is where each workload kind keeps its pod spec.
var podSpecPath = map[string][]string{
	"Pod":                   {"spec"},
	"PodTemplate":           {"template", "spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerFields are the pod spec fields that hold containers.
var containerFields = []string{"initContainers", "containers", "ephemeralContainers"}

// FieldImageVolumes is the Field of an image volume's reference
// (volumes[].image.reference, KEP-4639), which the kubelet pulls as it
// pulls a container's image.
const FieldImageVolumes = "imageVolumes"

type walker struct {
	file       string
	base       string              // base name of file
	referenced map[*yaml.Node]bool // nodes some alias points to
	sites      []Site
	notes      []error // *Notice each
	charts     []ChartSource
	data       []byte   // the file
	lines      []string // its lines, see fileLines
	budget     int
	cut        map[string]bool // objects whose search stopped at its bound, noted once
}

// ref is a node reached by the walk, and whether an alias was on the way.
type ref struct {
	node  *yaml.Node
	alias bool
	pos   *yaml.Node // where to report: the outermost alias on the way, or nil
}

func (w *walker) resolve(n *yaml.Node, alias bool, pos *yaml.Node) ref {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		if pos == nil {
			pos = n
		}
		alias = true
		n = n.Alias
	}
	if n != nil && w.referenced[n] {
		alias = true
	}
	if alias {
		w.budget++ // an expansion: plain nodes are bounded by the file's size
	}
	return ref{node: n, alias: alias, pos: pos}
}

// get returns the value of key in mapping m, honouring merge keys (<<).
func (w *walker) get(m ref, key string) (ref, bool) {
	if m.node == nil || m.node.Kind != yaml.MappingNode || w.budget > maxVisits {
		return ref{}, false
	}
	c := m.node.Content
	var found *yaml.Node
	for i := 0; i+1 < len(c); i += 2 {
		if k := c[i]; k.Kind == yaml.ScalarNode && k.Value == key && k.Tag != "!!merge" {
			found = c[i+1] // the last one wins, as in encoding/json
		}
	}
	if found != nil {
		return w.resolve(found, m.alias, m.pos), true
	}
	for i := 0; i+1 < len(c); i += 2 {
		if k := c[i]; k.Kind != yaml.ScalarNode || k.Tag != "!!merge" {
			continue
		}
		v := w.resolve(c[i+1], m.alias, m.pos)
		switch v.node.Kind {
		case yaml.MappingNode:
			if r, ok := w.get(v, key); ok {
				return r, true
			}
		case yaml.SequenceNode:
			for _, e := range v.node.Content {
				if r, ok := w.get(w.resolve(e, v.alias, v.pos), key); ok {
					return r, true
				}
			}
		}
	}
	return ref{}, false
}

// str returns the value of a scalar key, or "".
func (w *walker) str(m ref, key string) string {
	if v, ok := w.get(m, key); ok && v.node.Kind == yaml.ScalarNode && v.node.Tag != "!!null" {
		return v.node.Value
	}
	return ""
}

func (w *walker) document(root *yaml.Node) {
	top := w.resolve(root, false, nil)
	if top.node == nil || top.node.Kind != yaml.MappingNode {
		return
	}
	if _, hasKind := w.get(top, "kind"); !hasKind {
		if s, ok := w.get(top, "services"); ok && s.node.Kind == yaml.MappingNode {
			w.compose(top, s)
			return
		}
		switch w.base {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
			w.kustomization(top, "Kustomization")
		}
		return
	}
	w.object(top, 0)
}

func (w *walker) object(obj ref, depth int) {
	kind := w.str(obj, "kind")
	switch {
	case kind == "Kustomization":
		w.kustomization(obj, kind)
		return
	case kind == "Component" && strings.HasPrefix(w.str(obj, "apiVersion"), "kustomize.config.k8s.io/"):
		w.kustomization(obj, kind)
		return
	case strings.HasSuffix(kind, "List"):
		items, ok := w.get(obj, "items")
		if !ok || items.node.Kind != yaml.SequenceNode || depth > 8 {
			return
		}
		for _, it := range items.node.Content {
			if item := w.resolve(it, items.alias, items.pos); item.node.Kind == yaml.MappingNode {
				w.object(item, depth+1)
			}
		}
		return
	}
	path, ok := podSpecPath[kind]
	if !ok {
		if kind != "" {
			w.custom(obj, kind)
		}
		return
	}
	meta, _ := w.get(obj, "metadata")
	base := Image{
		File:      w.file,
		Kind:      kind,
		Namespace: w.str(meta, "namespace"),
		Name:      w.str(meta, "name"),
	}
	spec := obj
	for _, key := range path {
		if spec, ok = w.get(spec, key); !ok {
			return
		}
	}
	w.containers(base, spec)
	w.imageVolumes(base, spec)
}

// containers adds the image of every container of pod spec spec.
func (w *walker) containers(base Image, spec ref) {
	for _, field := range containerFields {
		list, ok := w.get(spec, field)
		if !ok || list.node.Kind != yaml.SequenceNode {
			continue
		}
		for _, c := range list.node.Content {
			ctr := w.resolve(c, list.alias, list.pos)
			img, ok := w.get(ctr, "image")
			if !ok || !isValue(img.node) {
				continue
			}
			s := w.site(base, img)
			s.Field = field
			s.Container = w.str(ctr, "name")
			w.pullPolicy(&s, ctr, "imagePullPolicy")
			w.sites = append(w.sites, s)
		}
	}
}

// imageVolumes adds the reference of every image volume of pod spec spec
// (volumes[].image.reference), named by the volume, with its pullPolicy.
func (w *walker) imageVolumes(base Image, spec ref) {
	list, ok := w.get(spec, "volumes")
	if !ok || list.node.Kind != yaml.SequenceNode {
		return
	}
	for _, v := range list.node.Content {
		vol := w.resolve(v, list.alias, list.pos)
		src, ok := w.get(vol, "image")
		if !ok {
			continue
		}
		img, ok := w.get(src, "reference")
		if !ok || !isValue(img.node) {
			continue
		}
		s := w.site(base, img)
		s.Field = FieldImageVolumes
		s.Container = w.str(vol, "name")
		w.pullPolicy(&s, src, "pullPolicy")
		w.sites = append(w.sites, s)
	}
}

// pullPolicy sets s's pull policy from key of mapping m (a container's
// imagePullPolicy, an image volume's pullPolicy), and its node when no
// alias is on the way.
func (w *walker) pullPolicy(s *Site, m ref, key string) {
	if pp, ok := w.get(m, key); ok && isValue(pp.node) {
		s.Image.PullPolicy = pp.node.Value
		if !pp.alias {
			s.PullPolicy = pp.node
		}
	}
}

func (w *walker) compose(top, services ref) {
	base := Image{File: w.file, Kind: "Compose", Name: w.str(top, "name"), Field: "image"}
	c := services.node.Content
	for i := 0; i+1 < len(c); i += 2 {
		svc := w.resolve(c[i+1], services.alias, services.pos)
		img, ok := w.get(svc, "image")
		if !ok || !isValue(img.node) {
			continue
		}
		s := w.site(base, img)
		s.Container = c[i].Value
		s.Image.PullPolicy = w.str(svc, "pull_policy")
		w.sites = append(w.sites, s)
	}
}

func (w *walker) kustomization(top ref, kind string) {
	images, ok := w.get(top, "images")
	if !ok || images.node.Kind != yaml.SequenceNode {
		return
	}
	base := Image{
		File:  w.file,
		Kind:  kind,
		Name:  w.str(w.getOr(top, "metadata"), "name"),
		Field: "images",
	}
	for _, e := range images.node.Content {
		entry := w.resolve(e, images.alias, images.pos)
		name, ok := w.get(entry, "name")
		if !ok || !isValue(name.node) {
			continue
		}
		s := w.site(base, name)
		s.Container = name.node.Value
		s.Entry = entry.node
		ref := name.node.Value
		for _, key := range []string{"newName", "newTag", "digest"} {
			v, ok := w.get(entry, key)
			if !ok || !isValue(v.node) {
				continue
			}
			s.Alias = s.Alias || v.alias
			switch key {
			case "newName":
				ref = v.node.Value
			case "newTag":
				ref += ":" + v.node.Value
			case "digest":
				ref += "@" + v.node.Value
			}
		}
		s.Alias = s.Alias || entry.alias
		s.Ref = ref
		w.sites = append(w.sites, s)
	}
}

func (w *walker) getOr(m ref, key string) ref {
	r, _ := w.get(m, key)
	return r
}

// site builds the Site for an image scalar.
func (w *walker) site(base Image, v ref) Site {
	s := Site{Image: base, Value: v.node}
	s.Ref = v.node.Value
	s.Line, s.Column = v.node.Line, v.node.Column
	if v.pos != nil {
		s.Line, s.Column = v.pos.Line, v.pos.Column
	}
	s.Alias = v.alias
	return s
}

// isValue reports whether n is a non-null scalar.
func isValue(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag != "!!null"
}

// Aliased marks in into every node under n that an alias points to:
// editing one changes each place that names it.
func Aliased(n *yaml.Node, into map[*yaml.Node]bool) { collectAliases(n, into, 0) }

// collectAliases marks every node an alias points to.
func collectAliases(n *yaml.Node, into map[*yaml.Node]bool, depth int) {
	if n == nil || depth > 10_000 {
		return
	}
	if n.Kind == yaml.AliasNode {
		into[n.Alias] = true
		return
	}
	for _, c := range n.Content {
		collectAliases(c, into, depth+1)
	}
}

// hasComplexKey reports whether a mapping has a non-scalar key, which is how
// an unquoted "{{ .Values.x }}" parses; real manifests never have one.
func hasComplexKey(docs []*yaml.Node) bool {
	var walk func(n *yaml.Node, depth int) bool
	walk = func(n *yaml.Node, depth int) bool {
		if n == nil || depth > 10_000 {
			return false
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Kind == yaml.MappingNode || k.Kind == yaml.SequenceNode {
					return true
				}
			}
		}
		for _, c := range n.Content {
			if walk(c, depth+1) {
				return true
			}
		}
		return false
	}
	for _, d := range docs {
		if walk(d, 0) {
			return true
		}
	}
	return false
}
