package render

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/yamlfile"
)

// fluxBuild is what a Flux Kustomization of this repository (source
// flux-system) adds to the kustomization at its spec.path, as
// kustomize-controller builds it: its components and patches, the
// variables postBuild substitutes, and loading confined to the
// repository rather than the folder.
type fluxBuild struct {
	components []string      // spec.components, relative to spec.path
	patches    []types.Patch // spec.patches
	vars       map[string]string
	file       string // the Flux Kustomization's, as shown
	data       []byte
}

// fluxBuilds reads the Flux Kustomizations of the tree's files whose
// source is this repository, by the absolute folder of spec.path, taken
// from the tree's root as Flux takes it from the source's.
func fluxBuilds(o *options, root string) map[string]*fluxBuild {
	rootAbs, err := filepath.Abs(root)
	if err != nil {
		return nil
	}
	if fi, err := os.Stat(rootAbs); err != nil || !fi.IsDir() {
		return nil
	}
	files, _ := yamlfile.Files([]string{root}, o.exclude)
	var t Tree
	objs := t.objects(o, files, "Kustomization", "ConfigMap")
	out := map[string]*fluxBuild{}
	for _, ob := range objs {
		if ob.kind != "Kustomization" || !strings.HasPrefix(scalar(ob.node, "apiVersion"), "kustomize.toolkit.fluxcd.io/") {
			continue
		}
		spec := child(ob.node, "spec")
		if ref := child(spec, "sourceRef"); scalar(ref, "kind") != "GitRepository" || scalar(ref, "name") != fluxSelf {
			continue
		}
		dir := filepath.Join(rootAbs, filepath.FromSlash(cmpOr(scalar(spec, "path"), ".")))
		fb := out[dir]
		if fb == nil {
			fb = &fluxBuild{vars: map[string]string{}}
			out[dir] = fb
		}
		var k struct {
			Spec struct {
				Components []string      `json:"components"`
				Patches    []types.Patch `json:"patches"`
				PostBuild  struct {
					Substitute     map[string]string             `json:"substitute"`
					SubstituteFrom []struct{ Kind, Name string } `json:"substituteFrom"`
				} `json:"postBuild"`
			} `json:"spec"`
		}
		raw, err := yaml.Marshal(ob.node)
		if err != nil || sigsyaml.Unmarshal(raw, &k) != nil {
			continue
		}
		fb.file, fb.data = ob.file, ob.data
		fb.components = append(fb.components, k.Spec.Components...)
		fb.patches = append(fb.patches, k.Spec.Patches...)
		for _, from := range k.Spec.PostBuild.SubstituteFrom {
			if cm := findObject(objs, "ConfigMap", yamlfile.ObjectRef{Name: from.Name, Namespace: ob.ns}); from.Kind == "ConfigMap" && cm != nil {
				data := child(cm.node, "data")
				for i := 0; data != nil && i+1 < len(data.Content); i += 2 {
					fb.vars[data.Content[i].Value] = data.Content[i+1].Value
				}
			}
		}
		for k, v := range k.Spec.PostBuild.Substitute { // in-line values win
			fb.vars[k] = v
		}
	}
	return out
}

// fluxFor is the Flux build of the kustomization in folder dir: the one
// whose spec.path is dir, or a folder above it with no kustomization of
// its own (Flux generates one that includes every manifest and
// kustomization under it).
func (g *kgraph) fluxFor(dir string) *fluxBuild {
	if fb := g.flux[dir]; fb != nil {
		return fb
	}
	for d := filepath.Dir(dir); d != filepath.Dir(d) && kustomizationFile(d) == ""; d = filepath.Dir(d) {
		if fb := g.flux[d]; fb != nil {
			return fb
		}
	}
	return nil
}

// buildOptions are kustomize's options for the root in folder dir: for
// one a Flux Kustomization builds, no load restriction (the in-memory
// tree holds only the repository's files, see kgraph.ref), as
// kustomize-controller builds it.
func (g *kgraph) buildOptions(dir string) *krusty.Options {
	opts := krusty.MakeDefaultOptions()
	if g.nodes[dir] != nil && g.nodes[dir].flux != nil {
		opts.LoadRestrictions = types.LoadRestrictionsNone
	}
	return opts
}

// fluxVar is a variable postBuild substitutes: ${var}, or with a
// default, ${var:=default} (also :-, = and -).
var fluxVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[=-]([^}]*))?\}`)

// substitute replaces the variables of each document of a build's
// output as kustomize-controller's postBuild does (an unset variable with
// no default is empty), except in the objects annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled.
func substitute(out []byte, vars map[string]string) []byte {
	if !fluxVar.Match(out) {
		return out
	}
	docs := strings.Split(string(out), "\n---\n")
	for i, d := range docs {
		if strings.Contains(d, "kustomize.toolkit.fluxcd.io/substitute: disabled") {
			continue
		}
		docs[i] = fluxVar.ReplaceAllStringFunc(d, func(m string) string {
			s := fluxVar.FindStringSubmatch(m)
			if v, ok := vars[s[1]]; ok {
				return v
			}
			return s[2]
		})
	}
	return []byte(strings.Join(docs, "\n---\n"))
}

// patchedBy points u, an image no literal or images entry sets, at the
// line of the Flux Kustomization fb whose spec.patches writes it.
func patchedBy(fb *fluxBuild, u *Use) {
	if fb == nil || u.Origin.Kind != Untraced {
		return
	}
	if l := lineOf(fb.data, u.Ref); l > 0 {
		u.File, u.Line = fb.file, l
		u.Origin.Why = "set by a patch of a Flux Kustomization (spec.patches): pin it there by hand"
	}
}

// substituted reports whether a literal as written holds a variable a
// Flux build substitutes.
func substituted(n *kust, ref string) bool {
	return n != nil && n.flux != nil && fluxVar.MatchString(ref)
}
