package render

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
)

// maxMissed bounds how many patches missedPatches leaves out of one root.
const maxMissed = 16

// missedPatches leaves out, of the kustomizations of each root some remote
// base was left out of, each strategic merge patch whose target kustomize
// does not find (most likely only the remote base has it), with a notice
// at the patch, so that the rest of the root is still rendered.
func (t *Tree) missedPatches(g *kgraph, roots []string, files map[string][]byte) {
	for _, d := range roots {
		reach := g.reach([]string{d})
		if !slices.ContainsFunc(reach, func(d string) bool { return g.nodes[d].remote }) {
			continue
		}
		for range maxMissed {
			var mk markers
			var items []markItem
			plain, _ := g.filesystems(files, reach, &mk, &items)
			_, err := krusty.MakeKustomizer(g.buildOptions(d)).Run(plain, d)
			kind, name, ok := missedTarget(err)
			if !ok || !t.dropPatches(g, reach, files, kind, name) {
				break
			}
		}
	}
}

// missedID is kustomize's error for a strategic merge patch with no
// target: its resource id, Kind.version.[group]/name.[namespace].
var missedID = regexp.MustCompile(`no resource matches strategic merge patch "([^".]+)\.[^"/]*/([^"]+)\.[^".]+"`)

// missedTarget is the kind and name of the object a patch kustomize
// reports in err did not find.
func missedTarget(err error) (kind, name string, ok bool) {
	if err == nil {
		return "", "", false
	}
	m := missedID.FindStringSubmatch(err.Error())
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// dropPatches leaves out each patch without a target selector of the
// kustomizations of reach that patches kind/name, reporting whether
// there was one.
func (t *Tree) dropPatches(g *kgraph, reach []string, files map[string][]byte, kind, name string) bool {
	found := false
	for _, d := range reach {
		n := g.nodes[d]
		lines := patchLines(n.raw)
		list := slices.Clone(n.k.Patches)
		for _, p := range n.k.PatchesStrategicMerge {
			if s := string(p); strings.Contains(s, "\n") {
				list = append(list, types.Patch{Patch: s})
			} else {
				list = append(list, types.Patch{Path: s})
			}
		}
		for i, p := range list {
			key := cmp.Or(p.Path, p.Patch)
			if p.Target != nil || n.dropped[key] {
				continue
			}
			text := p.Patch
			if p.Path != "" {
				path := p.Path
				if !filepath.IsAbs(path) {
					path = filepath.Join(n.dir, path)
				}
				text = string(files[path])
			}
			if !patches(text, kind, name) {
				continue
			}
			n.dropped[key], found = true, true
			line := 0
			if i < len(lines) {
				line = lines[i]
			}
			t.Errs = append(t.Errs, &Error{File: display(g.root, n.file), Line: line, Notice: true,
				Msg: fmt.Sprintf("patch of %s %s not applied: no such object without the remote base, which is not fetched", kind, name)})
		}
	}
	return found
}

// patches reports whether a strategic merge patch's documents name the
// object kind/name.
func patches(text, kind, name string) bool {
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var doc struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
		}
		if dec.Decode(&doc) != nil {
			return false
		}
		if doc.Kind == kind && doc.Metadata.Name == name {
			return true
		}
	}
}

// patchLines are the lines of a kustomization's patches: entries, then
// its patchesStrategicMerge: entries, in order.
func patchLines(raw []byte) []int {
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	var out []int
	top := doc.Content[0].Content
	for _, field := range []string{"patches", "patchesStrategicMerge"} {
		for j := 0; j+1 < len(top); j += 2 {
			if top[j].Value == field && top[j+1].Kind == yaml.SequenceNode {
				for _, e := range top[j+1].Content {
					out = append(out, e.Line)
				}
			}
		}
	}
	return out
}
