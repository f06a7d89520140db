package render

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/regcheck/regcheck/yamlfile"
)

// chartDir is a chart folder being rendered.
type chartDir struct {
	t          *Tree
	dir        string // absolute
	disp       string // as shown
	raw        []*common.File
	name       string
	release    []source // values files, in order
	appVersion string
	errs       []error  // the last run's: templates whose output is not YAML
	missing    []string // dependencies left out (see dependencies), stubbed
	// local are the file:// dependencies read from the tree: the folder
	// of each (as shown), by its path in the chart (charts/NAME).
	localDirs map[string]string
	apps      *[]*App // where its App goes: Tree.Apps, or Tree.GitOps
	// why is set when pin must not edit the chart's values.yaml: a chart
	// fetched for a GitOps object, not in the tree.
	why string
}

// source is a values file and what it holds.
type source struct {
	file string // as shown
	data []byte
	// block is, for values written in a manifest (a Flux HelmRelease's
	// spec.values, an Argo CD Application's helm values, a ConfigMap's
	// literal block), the line of file data's first line of text is at:
	// data is laid out on its lines in file. 0 for a values file.
	block int
	// why is set when pin must not edit these values' keys (see valueKey).
	why string
}

// rendered is one render of a chart: the images of each template, by the
// template's name.
type rendered map[string][]yamlfile.Site

// helm renders the chart in folder dir (absolute) and adds it to t.
func (t *Tree) helm(dir string, o *options) { t.chart(dir, o, &t.Apps, nil, "") }

// chart renders the chart in folder dir (absolute) with extra values
// after the options', adding its App to apps; why, when set, says why
// pin must not edit its values.yaml.
func (t *Tree) chart(dir string, o *options, apps *[]*App, extra []source, why string) {
	h := &chartDir{t: t, dir: dir, disp: display(t.Root, dir), apps: apps, why: why}
	chartFile := filepath.Join(h.disp, "Chart.yaml")
	defer t.recoverInput(chartFile)
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Errs = append(t.Errs, &Error{File: chartFile, Msg: "helm: " + err.Error()})
		return
	}
	if c.Metadata.Type == "library" {
		t.Errs = append(t.Errs, &Error{File: chartFile, Msg: "a library chart: nothing to render on its own", Notice: true})
		return
	}
	h.name, h.appVersion = c.Name(), c.Metadata.AppVersion
	for _, f := range c.Raw {
		abs := filepath.Join(dir, filepath.FromSlash(f.Name))
		if b, ok := o.files[abs]; ok {
			f = &common.File{Name: f.Name, ModTime: f.ModTime, Data: b}
		}
		h.raw = append(h.raw, f)
		if f.Name == "values.yaml" {
			t.files[abs] = f.Data
		}
	}
	for _, v := range o.values {
		if v.Chart != "" {
			if abs, err := filepath.Abs(v.Chart); err != nil || abs != dir {
				continue
			}
		}
		data, err := o.read(v.File)
		if err != nil {
			t.Errs = append(t.Errs, &Error{File: v.File, Msg: err.Error()})
			return
		}
		if abs, err := filepath.Abs(v.File); err == nil {
			t.files[abs] = data
		}
		h.release = append(h.release, source{file: v.File, data: data})
	}
	h.release = append(h.release, extra...)
	h.dependencies(c, o)
	h.render()
}

// file is the chart's file name (slash-separated, from its folder), or nil.
func (h *chartDir) file(name string) []byte {
	for _, f := range h.raw {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// load loads the chart afresh from its files: rendering changes it.
func (h *chartDir) load() (*chart.Chart, error) {
	files := make([]*archive.BufferedFile, len(h.raw))
	for i, f := range h.raw {
		files[i] = &archive.BufferedFile{Name: f.Name, ModTime: f.ModTime, Data: f.Data}
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, err
	}
	stub(c, h.missing)
	withoutNotes(c, 0)
	return c, nil
}

// withoutNotes takes the NOTES.txt out of c and its dependencies: they
// hold no object, and a helper they call may fail on values the
// attribution render marks (as Bitnami's common.warnings.modifiedImages
// does), which would fail the whole render.
func withoutNotes(c *chart.Chart, depth int) {
	if depth > 16 {
		return
	}
	c.Templates = slices.DeleteFunc(c.Templates, func(f *common.File) bool { return path.Base(f.Name) == "NOTES.txt" })
	for _, sub := range c.Dependencies() {
		withoutNotes(sub, depth+1)
	}
}

// values merges values files as helm -f does.
func values(files [][]byte) (map[string]any, error) {
	out := map[string]any{}
	for _, data := range files {
		v, err := loader.LoadValues(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		out = loader.MergeMaps(out, v)
	}
	return out, nil
}

// run renders c with the user's values as helm template does, offline:
// no cluster (lookup finds nothing), no DNS, values.schema.json not read
// (it may name schemas to fetch).
func (h *chartDir) run(c *chart.Chart, user map[string]any) (rendered, []byte, error) {
	h.errs = nil
	if err := chartutil.ProcessDependencies(c, user); err != nil {
		return nil, nil, err
	}
	opts := common.ReleaseOptions{Name: c.Name(), Namespace: "default", Revision: 1, IsInstall: true}
	vals, err := util.ToRenderValuesWithSchemaValidation(c, user, opts, common.DefaultCapabilities.Copy(), true)
	if err != nil {
		return nil, nil, err
	}
	files, err := engine.Engine{CustomTemplateFuncs: boundedFuncs()}.RenderWithContext(context.Background(), c, vals)
	if err != nil {
		return nil, nil, err
	}
	out := rendered{}
	var all bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(files)) {
		content := files[name]
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(content) == "" {
			continue
		}
		fmt.Fprintf(&all, "---\n# Source: %s\n%s\n", name, content)
		sites, err := yamlfile.Sites(h.template(name), []byte(content))
		if err != nil {
			h.errs = append(h.errs, &Error{File: h.template(name), Msg: "what it renders is not YAML: " + err.Error()})
			continue
		}
		out[name] = sites
	}
	return out, all.Bytes(), nil
}

// template is where a rendered template's source is, as shown.
func (h *chartDir) template(name string) string {
	return h.shown(strings.TrimPrefix(name, h.name+"/"))
}

// shown is where the chart's file name (a path in the chart) is, as
// shown: in the folder of a file:// dependency for one of its files.
func (h *chartDir) shown(name string) string {
	for in, dir := range h.localDirs {
		if rest, ok := strings.CutPrefix(name, in+"/"); ok {
			return filepath.Join(dir, filepath.FromSlash(rest))
		}
	}
	return filepath.Join(h.disp, filepath.FromSlash(name))
}

// render renders the chart three times: as it is; with its values marked,
// for the key that sets each part of each image; and with a digest under
// each key's mapping, for the templates that use one.
func (h *chartDir) render() {
	chartFile := filepath.Join(h.disp, "Chart.yaml")
	fail := func(err error) {
		h.t.Errs = append(h.t.Errs, &Error{File: chartFile, Msg: "helm: " + err.Error()})
	}
	user := map[string]any{}
	for _, s := range h.release {
		v, err := values([][]byte{s.data})
		if err != nil {
			h.t.Errs = append(h.t.Errs, &Error{File: s.file, Msg: err.Error()})
			return
		}
		user = loader.MergeMaps(user, v)
	}
	c, err := h.load()
	if err != nil {
		fail(err)
		return
	}
	real, out, err := h.run(c, user)
	if err != nil && len(h.missing) > 0 {
		h.conventions(err)
		return
	}
	if err != nil {
		fail(err)
		return
	}
	h.t.Errs = append(h.t.Errs, h.errs...)
	app := &App{Kind: Helm, Dir: h.disp, Output: out}
	*h.apps = append(*h.apps, app)
	var refs []string
	for _, sites := range real {
		for _, s := range sites {
			refs = append(refs, s.Ref)
		}
	}
	var mk markers
	var keys []valueKey
	marked, failed := h.marked(refs, &mk, &keys)
	h.failedNotices(real, failed, &mk, keys)
	probe, fakes := h.probe(user, real, marked, &mk, keys)
	for _, name := range slices.Sorted(maps.Keys(real)) {
		for i, s := range real[name] {
			u := Use{Image: s.Image}
			switch m, ok := at(marked, real, name, i); {
			case ok:
				p, _ := at(probe, real, name, i)
				h.origin(&u, name, m.Ref, p.Ref, &mk, keys, fakes)
			default:
				u.File, u.Line, u.Column = h.template(name), 0, 0
				u.Origin = Origin{Kind: Untraced, Why: "the chart's values could not be followed to its images"}
				if err := failed[name]; err != nil {
					u.Origin.Why += ": " + unmarked(err.Error(), &mk, keys)
				}
			}
			app.Uses = append(app.Uses, u)
		}
	}
}

// at is the i-th image of template name in r, when r renders that
// template's images as real does (same objects, same containers).
func at(r, real rendered, name string, i int) (yamlfile.Site, bool) {
	a, b := r[name], real[name]
	if len(a) != len(b) || i >= len(a) {
		return yamlfile.Site{}, false
	}
	x, y := a[i].Image, b[i].Image
	return a[i], x.Kind == y.Kind && x.Field == y.Field && x.Container == y.Container
}

// probe renders the chart as it is plus a digest under the mapping of
// each key found in an image that has none, to see which templates add a
// digest key to the reference. fakes maps each fake digest to the
// mapping's path.
func (h *chartDir) probe(user map[string]any, real, marked rendered, mk *markers, keys []valueKey) (rendered, map[string]ValuesPath) {
	c, err := h.load()
	if err != nil {
		return nil, nil
	}
	defaults := loader.MergeMaps(c.Values, user)
	inject := map[string]any{}
	fakes := map[string]ValuesPath{}
	for name, sites := range real {
		for i, s := range sites {
			m, ok := at(marked, real, name, i)
			if _, _, d := splitRef(s.Ref); !ok || d != "" {
				continue
			}
			for _, k := range mk.find(m.Ref) {
				p, _, ok := keys[k].Path.Split()
				ks, plain := p.keys()
				if !ok || !plain || keys[k].why != "" || slices.Contains(slices.Collect(maps.Values(fakes)), p) || !isTable(defaults, ks) {
					continue
				}
				fake := fmt.Sprintf("sha256:%064x", 0xdead0000+len(fakes))
				fakes[fake] = p
				setPath(inject, ks, "digest", fake)
			}
		}
	}
	if len(fakes) == 0 {
		return nil, nil
	}
	r, _, err := h.run(c, loader.MergeMaps(user, inject))
	if err != nil {
		return nil, nil
	}
	return r, fakes
}

// isTable reports whether the values at the path of keys are a mapping.
func isTable(v map[string]any, keys []string) bool {
	for _, k := range keys {
		next, ok := v[k].(map[string]any)
		if !ok {
			return false
		}
		v = next
	}
	return true
}

// setPath sets key under the path of keys in m, making mappings on the way.
func setPath(m map[string]any, path []string, key string, value any) {
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[key] = value
}

// origin sets u's origin from its reference rendered with markers
// (marked) and with digests under the keys' mappings (probed, "" when not
// rendered).
func (h *chartDir) origin(u *Use, tpl, marked, probed string, mk *markers, keys []valueKey, fakes map[string]ValuesPath) {
	u.Origin = Origin{Kind: Values}
	_, tag, dig := splitRef(marked)
	key := func(i int) Key { return keys[i].Key }
	found := mk.find(marked)
	for _, i := range found {
		k := key(i)
		switch {
		case marked == mk.text(i):
			k.Part = "reference"
		case dig != "" && strings.Contains(dig, mk.text(i)):
			k.Part = "digest"
		case tag != "" && strings.Contains(tag, mk.text(i)):
			k.Part = "tag"
		case strings.HasSuffix(marked, mk.text(i)):
			k.Part = "reference"
		default:
			k.Part = "repository"
		}
		u.Origin.Keys = append(u.Origin.Keys, k)
	}
	at := func(i int) {
		u.File, u.Line, u.Column = keys[i].File, keys[i].Line, keys[i].column
	}
	if len(found) == 0 {
		u.Origin.Kind = Template
		u.File, u.Line, u.Column = h.template(tpl), lineOf(h.file(strings.TrimPrefix(tpl, h.name+"/")), u.Ref), 0
		u.Origin.Why = "written in the chart's template: templates are never edited; set it from values"
		return
	}
	at(found[len(found)-1])
	edit := func(i int, ed *Edit) {
		at(i)
		if keys[i].why != "" {
			u.Origin.Why = keys[i].why
			return
		}
		ed.File, ed.Line, ed.Column, ed.Path, ed.Block = keys[i].File, keys[i].Line, keys[i].column, keys[i].Path, keys[i].block
		u.Origin.Edit = ed
	}
	_, realTag, _ := splitRef(u.Ref)
	// The digest: a key of its own, or written in the template.
	if dig != "" {
		if i, ok := mk.only(dig); ok {
			edit(i, &Edit{Op: DigestKey})
			return
		}
		u.Origin.Why = "the digest is written in the chart's template: templates are never edited"
		return
	}
	// A template that adds a digest key when it is set.
	for fake, p := range fakes {
		if probed != "" && strings.Contains(probed, "@"+fake) {
			h.digestKey(u, p, found, keys, edit)
			return
		}
	}
	// The value that ends the reference gains the digest.
	last := found[len(found)-1]
	if strings.HasSuffix(marked, mk.text(last)) {
		edit(last, &Edit{Op: AppendDigest, Latest: realTag == ""})
		return
	}
	switch {
	case tag == "":
		u.Origin.Why = "the reference ends with text written in the chart's template: no values key sets its end"
	case len(mk.find(tag)) == 0 && realTag == h.appVersion:
		u.Origin.Why = fmt.Sprintf("the tag %s is the chart's appVersion (Chart.yaml), not a values key: set the tag in values, or give the template a digest key", realTag)
	case len(mk.find(tag)) == 0:
		u.Origin.Why = fmt.Sprintf("the tag %s is written in the chart's template, not in values: set it from values, or give the template a digest key", realTag)
	default:
		u.Origin.Why = fmt.Sprintf("the tag %s is built from %s and text in the chart's template: no single values key sets it", realTag, joinKeys(u.Origin.Keys, "tag"))
	}
}

// digestKey points u's edit at the digest key under mapping p, in the
// file that sets the tag (a release's file pins that release), else in
// the file of the key that ends the reference.
func (h *chartDir) digestKey(u *Use, p ValuesPath, found []int, keys []valueKey, edit func(int, *Edit)) {
	i := found[len(found)-1]
	for n, j := range found {
		if u.Origin.Keys[n].Part == "tag" {
			i = j
			break
		}
	}
	ed := &Edit{Op: DigestKey}
	edit(i, ed)
	if u.Origin.Edit == nil {
		return
	}
	ed.Path, ed.Line, ed.Column = p.Key("digest"), 0, 0
	if docs, err := yamlfile.Documents(h.source(keys[i].File, keys[i].block)); err == nil {
		if m, at := p.Mapping(docs); m != nil {
			if v := ed.Path.Find(docs[at]); v != nil {
				ed.Line, ed.Column = v.Line, v.Column
			}
		}
	}
	// The use stays at the tag's key: the reference used is the tag's
	// (the digest key is empty); pin writes the digest at ed.
}

// source is what a values file of this chart holds (the values laid
// out from line block of file, for values written in a manifest).
func (h *chartDir) source(file string, block int) []byte {
	for _, s := range h.release {
		if s.file == file && s.block == block {
			return s.data
		}
	}
	if file == filepath.Join(h.disp, "values.yaml") {
		return h.file("values.yaml")
	}
	return nil
}

// joinKeys lists the keys of one part.
func joinKeys(keys []Key, part string) string {
	var out []string
	for _, k := range keys {
		if k.Part == part {
			out = append(out, string(k.Path))
		}
	}
	return strings.Join(out, ", ")
}

// conventions reads the images of the chart's values (values.yaml, then
// the release's files) by the common chart conventions, for a chart
// whose render failed (err) with dependencies left out: the chart is
// never lost whole. The uses are at their values keys, not pinned.
func (h *chartDir) conventions(err error) {
	h.t.Errs = append(h.t.Errs, &Error{File: filepath.Join(h.disp, "Chart.yaml"), Notice: true,
		Msg: fmt.Sprintf("not rendered without its dependencies %s (%v): images read from its values by the common chart conventions (image.repository/tag/digest, image.registry)",
			strings.Join(h.missing, ", "), err)})
	app := &App{Kind: Helm, Dir: h.disp}
	srcs := append([]source{{file: filepath.Join(h.disp, "values.yaml"), data: h.file("values.yaml")}}, h.release...)
	for _, s := range srcs {
		if s.data == nil {
			continue
		}
		imgs, notes := yamlfile.ValuesImages(s.file, h.name, s.data)
		h.t.Errs = append(h.t.Errs, notes...)
		for _, img := range imgs {
			// A later file's image at the same values path replaces it.
			app.Uses = slices.DeleteFunc(app.Uses, func(u Use) bool { return u.Container == img.Container })
			app.Uses = append(app.Uses, Use{Image: img, Origin: Origin{Kind: Values,
				Why: "read from the values by the chart conventions: the chart was not rendered without its dependencies"}})
		}
	}
	*h.apps = append(*h.apps, app)
}

// unmarked is msg with each marker the attribution render put in a value
// replaced by the values key it stands for: a message never shows one.
func unmarked(msg string, mk *markers, keys []valueKey) string {
	for _, i := range mk.find(msg) {
		msg = strings.ReplaceAll(msg, mk.text(i), "<the value of "+string(keys[i].Path)+">")
	}
	return msg
}
