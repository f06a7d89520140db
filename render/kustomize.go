package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/yamlfile"
)

// maxLoad bounds what the folders of a tree's kustomizations may hold:
// they are read whole into memory to be rendered.
const maxLoad = 256 << 20

// kust is a kustomization of the tree, or one a kustomization of it
// includes.
type kust struct {
	dir, file string // absolute
	raw       []byte
	k         types.Kustomization // as written
	component bool
	entries   []entry           // images:, then imageTags:, as kustomize orders them
	includes  []string          // the kustomization folders it includes (absolute)
	incRefs   map[string]string // each of includes as written
	comps     []string          // those of them it includes as components
	outside   []string          // the files it names outside its folder (absolute)
	dropped   map[string]bool
	problems  []*Error   // its own: the references left out
	err       *Error     // it could not be read
	emptied   bool       // nothing is left once the references left out are
	remote    bool       // a remote base was left out
	flux      *fluxBuild // what a Flux Kustomization adds to it, or nil
}

// entry is an images: entry and where its name: value is written.
type entry struct {
	types.Image
	line, col int // 0 when not known
}

// kgraph is the kustomizations of a tree and those they include.
type kgraph struct {
	o     *options
	root  string // the tree's root, as given
	nodes map[string]*kust
	order []string // folders in the order read
	flux  map[string]*fluxBuild
}

// kustomize renders the kustomization roots among found (absolute
// folders) and adds them to t.
func (t *Tree) kustomize(root string, found []string, o *options) {
	g := &kgraph{o: o, root: root, nodes: map[string]*kust{}, flux: fluxBuilds(o, root)}
	g.walk(found)
	g.settle()
	included := map[string]bool{}
	for _, d := range g.order {
		for _, inc := range g.nodes[d].includes {
			included[inc] = true
		}
	}
	var roots []string
	for _, d := range found {
		n := g.nodes[d]
		switch {
		case included[d]:
		case n.component:
			t.Errs = append(t.Errs, &Error{File: display(root, n.file), Notice: true,
				Msg: "a kustomize Component that no kustomization under " + root + " includes: not rendered on its own"})
		default:
			roots = append(roots, d)
		}
	}
	if len(roots) == 0 {
		if !slices.ContainsFunc(found, func(d string) bool { return g.nodes[d].component }) {
			t.Errs = append(t.Errs, &Error{File: root, Msg: "every kustomization under it is included by another (a cycle?): none rendered"})
		}
		return
	}
	reach := g.reach(roots)
	for _, d := range reach {
		n := g.nodes[d]
		if n.err != nil {
			t.Errs = append(t.Errs, n.err)
		}
		for _, p := range n.problems {
			t.Errs = append(t.Errs, p)
		}
	}
	files, err := g.load(reach)
	if err != nil {
		t.Errs = append(t.Errs, &Error{File: root, Msg: err.Error()})
		return
	}
	for p, b := range files {
		t.files[p] = b
		t.kfiles = append(t.kfiles, display(root, p))
	}
	slices.Sort(t.kfiles)
	t.missedPatches(g, roots, files)
	var mk markers
	var items []markItem
	plain, marked := g.filesystems(files, reach, &mk, &items)
	for _, d := range roots {
		t.renderRoot(g, d, plain, marked, &mk, items)
	}
}

// walk reads the kustomizations in found and every one they include.
func (g *kgraph) walk(found []string) {
	queue := slices.Clone(found)
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if g.nodes[d] != nil {
			continue
		}
		n := g.read(d)
		g.nodes[d] = n
		g.order = append(g.order, d)
		queue = append(queue, n.includes...)
	}
}

// settle leaves out of each kustomization the kustomizations it includes
// that have nothing left to render (a base that held only a remote base,
// not fetched), so that kustomize never reads a reference left out.
func (g *kgraph) settle() {
	for changed := true; changed; {
		changed = false
		for _, d := range g.order {
			n := g.nodes[d]
			for _, inc := range n.includes {
				if b := g.nodes[inc]; b != nil && b.emptied && !n.dropped[n.incRefs[inc]] {
					n.dropped[n.incRefs[inc]], changed = true, true
				}
			}
			if n.err == nil && !n.emptied {
				if _, err := n.prepare(g.o, nil); errors.Is(err, errEmptied) {
					n.emptied, changed = true, true
				}
			}
		}
	}
}

// reach lists the folders roots include, themselves first.
func (g *kgraph) reach(roots []string) []string {
	seen := map[string]bool{}
	var out []string
	var visit func(d string)
	visit = func(d string) {
		if seen[d] || g.nodes[d] == nil {
			return
		}
		seen[d] = true
		out = append(out, d)
		for _, inc := range g.nodes[d].includes {
			visit(inc)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	return out
}

// read reads the kustomization in folder dir and sorts what it names.
func (g *kgraph) read(dir string) *kust {
	n := &kust{dir: dir, file: kustomizationFile(dir), dropped: map[string]bool{}}
	if n.file == "" {
		n.file = filepath.Join(dir, kustomizationFiles[0])
		n.err = &Error{File: display(g.root, dir), Msg: "included as a kustomization, but has no kustomization.yaml"}
		return n
	}
	raw, err := g.o.read(n.file)
	if err == nil {
		var bad []*Error
		raw, bad = withoutBadImages(display(g.root, n.file), raw)
		n.problems = append(n.problems, bad...)
		n.raw = raw
		err = n.k.Unmarshal(raw)
	}
	if err != nil {
		n.err = &Error{File: display(g.root, n.file), Msg: err.Error()}
		return n
	}
	n.component = n.k.Kind == types.ComponentKind
	n.entries = entries(raw, &n.k)
	k := &n.k
	if fb := g.fluxFor(dir); fb != nil {
		n.flux = fb
		k.Components = append(k.Components, fb.components...)
		k.Patches = append(k.Patches, fb.patches...)
	}
	for _, s := range append(slices.Clone(k.Resources), k.Bases...) {
		g.ref(n, s, true, false)
	}
	for _, s := range k.Components {
		g.ref(n, s, true, true)
	}
	for _, s := range slices.Concat(k.Generators, k.Transformers, k.Validators) {
		g.ref(n, s, true, false)
	}
	files := fileRefs(k)
	for _, s := range files {
		g.ref(n, s, false, false)
	}
	for _, p := range k.PatchesStrategicMerge {
		if s := string(p); !strings.Contains(s, "\n") {
			g.ref(n, s, false, false)
		}
	}
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
		n.problems = append(n.problems, &Error{File: display(g.root, n.file), Line: lineOf(raw, "helmCharts"), Notice: true,
			Msg: "helmCharts: not rendered (kustomize runs the helm binary for them); render the chart's folder instead"})
	}
	return n
}

// fileRefs are the files a kustomization names (not its resources):
// CRDs, configurations, its OpenAPI schema, patches, replacements, and
// its generators' sources.
func fileRefs(k *types.Kustomization) []string {
	files := slices.Concat(k.Crds, k.Configurations)
	if p := k.OpenAPI["path"]; p != "" {
		files = append(files, p)
	}
	for _, p := range slices.Concat(k.Patches, k.PatchesJson6902) {
		if p.Path != "" {
			files = append(files, p.Path)
		}
	}
	for _, r := range k.Replacements {
		if r.Path != "" {
			files = append(files, r.Path)
		}
	}
	var gens []types.GeneratorArgs
	for _, g := range k.ConfigMapGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, gen := range gens {
		for _, s := range gen.FileSources {
			_, p, ok := strings.Cut(s, "=")
			if !ok {
				p = s
			}
			files = append(files, p)
		}
		files = append(files, gen.EnvSources...)
		if gen.EnvSource != "" {
			files = append(files, gen.EnvSource)
		}
	}
	return files
}

// ref sorts one reference of n: a kustomization folder it includes (when
// dirOK), a file, or something left out of the render: a remote base
// (a notice: nothing is fetched) or a path that is not there.
func (g *kgraph) ref(n *kust, s string, dirOK, component bool) {
	p := s
	if !filepath.IsAbs(p) {
		p = filepath.Join(n.dir, s)
	}
	fi, err := os.Stat(p)
	_, overridden := g.o.files[p]
	switch {
	case err == nil && fi.IsDir() && dirOK && kustomizationFile(p) != "":
		n.includes = append(n.includes, p)
		if n.incRefs == nil {
			n.incRefs = map[string]string{}
		}
		n.incRefs[p] = s
		if component {
			n.comps = append(n.comps, p)
		}
		return
	case (err == nil && fi.Mode().IsRegular() || overridden) && len(g.flux) > 0 && !g.inTree(p):
		n.dropped[s] = true
		n.problems = append(n.problems, &Error{File: display(g.root, n.file), Line: lineOf(n.raw, s),
			Msg: fmt.Sprintf("%s is outside the tree read: left out of the render", s)})
		return
	case err == nil && fi.Mode().IsRegular(), overridden:
		if rel, err := filepath.Rel(n.dir, p); err != nil || strings.HasPrefix(rel, "..") {
			n.outside = append(n.outside, p)
		}
		return
	}
	if remote(s) && g.o.remote {
		return // kustomize fetches it (WithRemote)
	}
	n.dropped[s] = true
	e := &Error{File: display(g.root, n.file), Line: lineOf(n.raw, s)}
	switch {
	case remote(s):
		n.remote = true
		e.Notice, e.Msg = true, fmt.Sprintf("remote %s not fetched: what it holds is not rendered", s)
	case err == nil && fi.IsDir():
		e.Msg = fmt.Sprintf("%s: a folder with no kustomization.yaml; left out of the render", s)
	default:
		e.Msg = fmt.Sprintf("%s: no such file or folder; left out of the render", s)
	}
	n.problems = append(n.problems, e)
}

// inTree reports whether p is in the tree read (its root's folder): in a
// tree Flux builds (one with a Flux Kustomization of it), loading is
// confined to the repository, as kustomize-controller confines it.
func (g *kgraph) inTree(p string) bool {
	root, err := filepath.Abs(g.root)
	if err != nil {
		return false
	}
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		root = filepath.Dir(root)
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// remote reports whether a kustomization reference names something
// kustomize would fetch: a URL or a git repository.
func remote(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	for _, p := range []string{"git@", "git::", "github.com/", "gitlab.com/", "bitbucket.org/", "ssh:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// lineOf is the first line of data holding s, or 0.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// entries lists k's images entries (images:, then imageTags:, the order
// FixKustomization gives them) with where each name: is written.
func entries(raw []byte, k *types.Kustomization) []entry {
	var out []entry
	for _, img := range slices.Concat(k.Images, k.ImageTags) {
		out = append(out, entry{Image: img})
	}
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return out
	}
	i := 0
	top := doc.Content[0].Content
	for _, field := range []string{"images", "imageTags"} {
		for j := 0; j+1 < len(top); j += 2 {
			if top[j].Value != field || top[j+1].Kind != yaml.SequenceNode {
				continue
			}
			for _, e := range top[j+1].Content {
				if i < len(out) && e.Kind == yaml.MappingNode {
					for m := 0; m+1 < len(e.Content); m += 2 {
						if e.Content[m].Value == "name" {
							out[i].line, out[i].col = e.Content[m+1].Line, e.Content[m+1].Column
						}
					}
				}
				i++
			}
		}
	}
	return out
}

// load reads every file under the folders of dirs (dot folders left out;
// what is not a regular file of at most yamlfile.MaxFileSize too), and
// the files they name outside them.
func (g *kgraph) load(dirs []string) (map[string][]byte, error) {
	files := map[string][]byte{}
	total := 0
	add := func(p string) error {
		if _, ok := files[p]; ok {
			return nil
		}
		data, err := g.o.read(p)
		if err != nil {
			return nil // what kustomize then misses, it reports
		}
		if total += len(data); total > maxLoad {
			return errTooMuch
		}
		files[p] = data
		return nil
	}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case e.IsDir():
				if p != d && strings.HasPrefix(e.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			return add(p)
		})
		if err != nil {
			return nil, err
		}
		for _, p := range g.nodes[d].outside {
			if err := add(p); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// markItem is what a marker stands for: a literal image of a manifest, or
// a kustomization's images entry.
type markItem struct {
	file      string // absolute
	line, col int
	alias     bool
	ref       string // the literal as written
	node      *kust  // the entry's kustomization; nil for a literal
	entry     int
}

// filesystems returns the files in two in-memory filesystems: as they are
// (each kustomization of dirs made ready, see prepare) and marked: every
// literal image of a manifest and every images entry of a kustomization
// gets a marker for its tag, so that the marked render says, for each
// image, which one set it last.
func (g *kgraph) filesystems(files map[string][]byte, dirs []string, mk *markers, items *[]markItem) (plain, marked filesys.FileSystem) {
	plain, marked = newMemFS(), newMemFS() // kyaml's refuses names with a comma, a space…
	kfiles := map[string]*kust{}
	for _, d := range dirs {
		kfiles[g.nodes[d].file] = g.nodes[d]
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		data := files[p]
		if n := kfiles[p]; n != nil && n.err == nil {
			// What prepare refuses is never written as it is: it may
			// name what kustomize would fetch.
			b, err := n.prepare(g.o, nil)
			if err != nil {
				continue
			}
			_ = plain.WriteFile(p, b)
			mark := func(i int, img *types.Image) {
				if i >= len(n.entries) {
					return
				}
				*items = append(*items, markItem{file: p, line: n.entries[i].line, col: n.entries[i].col, node: n, entry: i})
				img.NewTag, img.Digest, img.TagSuffix = mk.next(len(*items)-1), "", ""
			}
			mb, err := n.prepare(g.o, mark)
			if err != nil {
				mb = b
			}
			_ = marked.WriteFile(p, mb)
			continue
		}
		_ = plain.WriteFile(p, data)
		_ = marked.WriteFile(p, markLiterals(p, data, mk, items))
	}
	if g.o.remote {
		return newRemoteFS(plain.(*memFS)), newRemoteFS(marked.(*memFS))
	}
	return plain, marked
}

// markLiterals returns a manifest's bytes with each container image's (and
// image volume reference's, and each image field's of the custom kinds
// yamlfile knows: a Tekton step's, an Argo template's, CloudNativePG's
// imageName) tag replaced by a marker (its name kept, so that images entries match it as
// before), or data as it is when it holds none.
func markLiterals(path string, data []byte, mk *markers, items *[]markItem) []byte {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
	default:
		return data
	}
	if isKustomizationFile(filepath.Base(path)) {
		return data
	}
	sites, err := yamlfile.Sites(path, data)
	if err != nil || len(sites) == 0 {
		return data
	}
	docs, err := yamlfile.Documents(data)
	if err != nil {
		return data
	}
	byPos := map[[2]int]*yaml.Node{}
	for _, d := range docs {
		scalars(d, byPos, 0)
	}
	n := 0
	for _, s := range sites {
		if !markedField(s.Field) {
			continue
		}
		v := byPos[[2]int{s.Value.Line, s.Value.Column}]
		if v == nil || v.Value != s.Value.Value || strings.HasPrefix(v.Value, "zq") {
			continue
		}
		*items = append(*items, markItem{file: path, line: s.Value.Line, col: s.Value.Column, alias: s.Alias, ref: v.Value})
		name, _, _ := splitRef(v.Value)
		v.Value, v.Tag, v.Style = name+":"+mk.next(len(*items)-1), "!!str", yaml.DoubleQuotedStyle
		n++
	}
	out, err := encodeDocs(docs)
	if n == 0 || err != nil {
		return data
	}
	return out
}

// markedField reports whether markLiterals marks the images of a
// yamlfile.Image Field: a pod spec's, and a custom kind's image field
// (Tekton's steps, sidecars, stepTemplate; Argo's container, script;
// imageName, package, image; Strimzi's kafka, zookeeper, cruiseControl,
// topicOperator, userOperator); not a GitOps object's Helm values, which
// are no image field of the object.
func markedField(field string) bool {
	switch field {
	case "containers", "initContainers", "ephemeralContainers", yamlfile.FieldImageVolumes,
		"steps", "sidecars", "stepTemplate", "container", "script", "imageName", "package", "image",
		"kafka", "zookeeper", "cruiseControl", "topicOperator", "userOperator":
		return true
	}
	return false
}

// encodeDocs writes documents as one stream.
func encodeDocs(docs []*yaml.Node) ([]byte, error) {
	var out bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			out.WriteString("---\n")
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// scalars indexes the scalar nodes under n by line and column.
func scalars(n *yaml.Node, into map[[2]int]*yaml.Node, depth int) {
	if n == nil || depth > 10_000 {
		return
	}
	if n.Kind == yaml.ScalarNode {
		into[[2]int{n.Line, n.Column}] = n
	}
	for _, c := range n.Content {
		scalars(c, into, depth+1)
	}
}

// prepare returns n's kustomization as the render reads it: with its
// deprecated fields in their current form (as kustomize edit fix writes
// them, so that kustomize has nothing to print), without the references
// left out (remote or missing) and without helmCharts; mark, when not
// nil, may change each images entry.
func (n *kust) prepare(o *options, mark func(i int, img *types.Image)) ([]byte, error) {
	var k types.Kustomization
	if err := k.Unmarshal(n.raw); err != nil {
		return nil, err
	}
	if n.flux != nil {
		k.Components = append(k.Components, n.flux.components...)
		k.Patches = append(k.Patches, n.flux.patches...)
	}
	psm := k.PatchesStrategicMerge
	k.PatchesStrategicMerge = nil
	k.FixKustomization()
	for _, p := range psm {
		s := string(p)
		if _, err := os.Stat(filepath.Join(n.dir, s)); err == nil && !strings.Contains(s, "\n") {
			k.Patches = append(k.Patches, types.Patch{Path: s})
		} else {
			k.Patches = append(k.Patches, types.Patch{Patch: s})
		}
	}
	if err := k.FixKustomizationPreMarshalling(filesys.MakeFsInMemory()); err != nil {
		return nil, err
	}
	keep := func(list []string) []string {
		return slices.DeleteFunc(list, func(s string) bool { return n.dropped[s] })
	}
	k.Resources, k.Components = keep(k.Resources), keep(k.Components)
	k.Generators, k.Transformers, k.Validators = keep(k.Generators), keep(k.Transformers), keep(k.Validators)
	k.Crds, k.Configurations = keep(k.Crds), keep(k.Configurations)
	k.Patches = slices.DeleteFunc(k.Patches, func(p types.Patch) bool { return n.dropped[cmp.Or(p.Path, p.Patch)] })
	k.Replacements = slices.DeleteFunc(k.Replacements, func(r types.ReplacementField) bool { return n.dropped[r.Path] })
	if n.dropped[k.OpenAPI["path"]] {
		delete(k.OpenAPI, "path")
	}
	keepSources := func(g *types.GeneratorArgs) {
		g.EnvSources = keep(g.EnvSources)
		g.FileSources = slices.DeleteFunc(g.FileSources, func(s string) bool {
			_, p, ok := strings.Cut(s, "=")
			return n.dropped[p] || !ok && n.dropped[s]
		})
	}
	for i := range k.ConfigMapGenerator {
		keepSources(&k.ConfigMapGenerator[i].GeneratorArgs)
	}
	for i := range k.SecretGenerator {
		keepSources(&k.SecretGenerator[i].GeneratorArgs)
	}
	k.HelmCharts, k.HelmGlobals = nil, nil
	if mark != nil {
		for i := range k.Images {
			mark(i, &k.Images[i])
		}
	}
	out, err := sigsyaml.Marshal(&k)
	if err != nil {
		return nil, err
	}
	var left types.Kustomization // empty lists written as none
	leftOut := len(n.dropped) > 0 || len(n.k.HelmCharts) > 0 || len(n.k.HelmChartInflationGenerator) > 0
	if leftOut && left.Unmarshal(out) == nil && left.CheckEmpty() != nil {
		return nil, errEmptied
	}
	return out, nil
}

// errEmptied is a kustomization with nothing left to render once the
// references left out are: its problems say why.
var errEmptied = errors.New("nothing left to render")

// applying lists the images entries that apply to what a manifest file
// holds: those of the kustomizations owning it (the nearest one whose
// folder holds it, and any naming it from outside), of every kustomization
// including them, and of the components any of those include.
func (g *kgraph) applying(file string) []entry {
	var owners []string
	nearest := ""
	for _, d := range g.order {
		n := g.nodes[d]
		if rel, err := filepath.Rel(d, file); err == nil && !strings.HasPrefix(rel, "..") && len(d) > len(nearest) {
			nearest = d
		}
		if slices.Contains(n.outside, file) {
			owners = append(owners, d)
		}
	}
	if nearest != "" {
		owners = append(owners, nearest)
	}
	seen := map[string]bool{}
	var out []entry
	var up func(d string)
	up = func(d string) {
		if seen[d] {
			return
		}
		seen[d] = true
		out = append(out, g.nodes[d].entries...)
		for _, c := range g.nodes[d].comps {
			if !seen[c] && g.nodes[c] != nil {
				seen[c] = true
				out = append(out, g.nodes[c].entries...)
			}
		}
		for _, e := range g.order {
			if slices.Contains(g.nodes[e].includes, d) {
				up(e)
			}
		}
	}
	for _, d := range owners {
		up(d)
	}
	return out
}

// matches reports whether an images entry named name matches ref, as
// kustomize matches them (the name, then any tag and digest).
func matches(ref, name string) bool {
	re, err := regexp.Compile("^" + name + `(:[a-zA-Z0-9_.{}-]*)?(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?$`)
	return err == nil && re.MatchString(ref)
}

// renderRoot renders the kustomization in folder dir twice, as it is and
// marked, and adds the App with the origin of each image.
func (t *Tree) renderRoot(g *kgraph, dir string, plain, marked filesys.FileSystem, mk *markers, items []markItem) {
	n := g.nodes[dir]
	if n.emptied || slices.ContainsFunc(g.reach([]string{dir}), func(d string) bool { return g.nodes[d].err != nil }) {
		return // nothing to render, or a kustomization kustomize cannot read: said once, by its read
	}
	kfile := display(g.root, n.file)
	defer t.recoverInput(kfile)
	k := krusty.MakeKustomizer(g.buildOptions(dir))
	res, err := k.Run(plain, dir)
	var out []byte
	if err == nil {
		out, err = res.AsYaml()
	}
	if err == nil && n.flux != nil {
		out = substitute(out, n.flux.vars)
	}
	if err != nil {
		t.Errs = append(t.Errs, &Error{File: kfile, Msg: "kustomize: " + err.Error()})
		return
	}
	app := &App{Kind: Kustomize, Dir: display(g.root, dir), Output: out}
	t.Apps = append(t.Apps, app)
	sites, err := yamlfile.Sites(kfile, out)
	if err != nil {
		t.Errs = append(t.Errs, &Error{File: kfile, Msg: "reading what kustomize rendered: " + err.Error()})
		return
	}
	var msites []yamlfile.Site
	if mres, err := k.Run(marked, dir); err == nil {
		if mout, err := mres.AsYaml(); err == nil {
			if n.flux != nil {
				mout = substitute(mout, n.flux.vars)
			}
			msites, _ = yamlfile.Sites(kfile, mout)
		}
	}
	same := len(msites) == len(sites)
	for i := 0; same && i < len(sites); i++ {
		a, b := sites[i].Image, msites[i].Image
		same = a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name && a.Container == b.Container && a.Field == b.Field
	}
	seen := map[int]bool{}
	for i, s := range sites {
		u := Use{Image: s.Image}
		u.File, u.Line, u.Column = kfile, 0, 0
		u.Origin = Origin{Kind: Untraced, Why: "set by something pin does not follow (a JSON patch, an inline patch, a replacement, a generator): pin it there by hand"}
		if same {
			_, tag, _ := splitRef(msites[i].Ref)
			if j, ok := mk.only(tag); ok {
				seen[j] = true
				t.origin(g, &u, items[j])
				if items[j].node == nil && substituted(n, items[j].ref) {
					u.Origin.Edit, u.Origin.Why = nil, "set through a Flux postBuild substitution ("+items[j].ref+"): pin it where the variable is set"
				}
			}
		}
		patchedBy(n.flux, &u)
		app.Uses = append(app.Uses, u)
	}
	if same {
		app.Uses = append(app.Uses, t.unmatched(g, dir, items, seen)...)
	}
}

// unmatched are, for a root some remote base was left out of, the images
// entries of its kustomizations that name a whole reference (a newTag or
// a digest) and that nothing rendered matched: most likely they name the
// images of the remote base, so they are read as written, as for a
// kustomization file on its own.
func (t *Tree) unmatched(g *kgraph, dir string, items []markItem, seen map[int]bool) []Use {
	reach := g.reach([]string{dir})
	if !slices.ContainsFunc(reach, func(d string) bool { return g.nodes[d].remote }) {
		return nil
	}
	var out []Use
	for j, it := range items {
		if it.node == nil || seen[j] || !slices.Contains(reach, it.node.dir) {
			continue
		}
		e := it.node.entries[it.entry]
		if e.NewTag == "" && e.Digest == "" {
			continue
		}
		ref := cmp.Or(e.NewName, e.Name)
		if e.NewTag != "" {
			ref += ":" + e.NewTag
		}
		if e.Digest != "" {
			ref += "@" + e.Digest
		}
		file := display(g.root, it.file)
		u := Use{Image: yamlfile.Image{Ref: ref, File: file, Line: it.line, Column: it.col, Kind: "Kustomization",
			Name: display(g.root, dir), Container: e.Name, Field: "images"}}
		u.Origin = Origin{Kind: ImagesEntry, Edit: &Edit{Op: EntryDigest, File: file, Line: it.line, Column: it.col}}
		if it.line == 0 {
			u.Origin.Edit, u.Origin.Why = nil, "an images entry whose place in the kustomization is not known (imageTags:?): pin it by hand"
		}
		out = append(out, u)
	}
	return out
}

// origin sets u's origin to the literal or images entry it marks.
func (t *Tree) origin(g *kgraph, u *Use, it markItem) {
	u.File, u.Line, u.Column = display(g.root, it.file), it.line, it.col
	if it.node != nil {
		e := it.node.entries[it.entry]
		u.Origin = Origin{Kind: ImagesEntry}
		ed := &Edit{Op: EntryDigest, File: u.File, Line: it.line, Column: it.col}
		if e.NewTag == "" && e.Digest == "" {
			_, tag, _ := splitRef(u.Ref)
			ed.Tag = cmp.Or(tag, "latest")
		}
		if it.line == 0 {
			u.Origin.Why = "an images entry whose place in the kustomization is not known (imageTags:?): pin it by hand"
			return
		}
		u.Origin.Edit = ed
		return
	}
	u.Origin = Origin{Kind: Literal}
	if it.alias {
		u.Origin.Why = "reached through a YAML alias"
		return
	}
	name, _, _ := splitRef(it.ref)
	for _, e := range g.applying(it.file) {
		if matches(it.ref, e.Name) && e.NewTag == "" && e.Digest == "" && e.TagSuffix == "" {
			u.Origin.Why = fmt.Sprintf("%s is renamed by an images entry (name: %s, newName: %s) that would carry its digest to the new name: "+
				"pin it with an images entry of the kustomization rendered", name, e.Name, e.NewName)
			return
		}
	}
	u.Origin.Edit = &Edit{Op: SetRef, File: u.File, Line: it.line, Column: it.col}
}
