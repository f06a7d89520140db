package render

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// markedValues are the chart's values with every value that could be
// part of an image replaced by a marker (see markValues): its
// values.yaml's, each dependency's (by its path under the chart: charts/a,
// charts/a/charts/b) and the release's files'.
type markedValues struct {
	top     []byte // nil: the chart has no values.yaml
	deps    map[string][]byte
	release [][]byte
}

// marked renders the chart with its values marked (see markValues), for
// the key that sets each part of each image. A template whose render
// fails with marked values (a helper that inspects a value, as Bitnami's
// common.warnings.modifiedImages does; a required or fail) is left out
// and the others rendered without it (see withoutFailing): failed gives,
// by template name, why each left out failed; every template when the
// values could not be marked.
func (h *chartDir) marked(refs []string, mk *markers, keys *[]valueKey) (rendered, map[string]error) {
	mv, err := h.markValues(refs, mk, keys)
	if err != nil {
		failed := map[string]error{}
		if c, lerr := h.load(); lerr == nil {
			for _, name := range templateNames(c, c.Name(), 0) {
				failed[name] = err
			}
		}
		return nil, failed
	}
	return h.withoutFailing(mv)
}

// markValues marks the values of the chart, its dependencies and the
// release's files.
func (h *chartDir) markValues(refs []string, mk *markers, keys *[]valueKey) (*markedValues, error) {
	c, err := h.load()
	if err != nil {
		return nil, err
	}
	mv := &markedValues{deps: map[string][]byte{}}
	if data := h.file("values.yaml"); data != nil {
		if mv.top, err = markValues(filepath.Join(h.disp, "values.yaml"), data, refs, mk, keys, h.why); err != nil {
			return nil, err
		}
	}
	if err := h.markDependencies(c, "", refs, mk, keys, mv.deps); err != nil {
		return nil, err
	}
	for _, s := range h.release {
		n := len(*keys)
		m, err := markValues(s.file, s.data, refs, mk, keys, s.why)
		if err != nil {
			return nil, err
		}
		for i := n; i < len(*keys); i++ {
			(*keys)[i].block = s.block
		}
		mv.release = append(mv.release, m)
	}
	return mv, nil
}

// markDependencies marks the values of c's dependencies into deps, by
// path: a key there is not pin's to edit (a dependency is another
// project's chart).
func (h *chartDir) markDependencies(c *chart.Chart, prefix string, refs []string, mk *markers, keys *[]valueKey, deps map[string][]byte) error {
	for _, sub := range c.Dependencies() {
		var data []byte
		for _, f := range sub.Raw {
			if f.Name == "values.yaml" {
				data = f.Data
			}
		}
		name := path.Join(prefix, "charts", sub.Name())
		if data != nil {
			why := fmt.Sprintf("set in the values of dependency %s: override it in %s's values under %s", sub.Name(), h.name, sub.Name())
			m, err := markValues(h.shown(path.Join(name, "values.yaml")), data, refs, mk, keys, why)
			if err != nil {
				return err
			}
			deps[name] = m
		}
		if err := h.markDependencies(sub, name, refs, mk, keys, deps); err != nil {
			return err
		}
	}
	return nil
}

// runMarked renders the chart, loaded afresh, with the marked values mv
// and without the templates named in skip.
func (h *chartDir) runMarked(mv *markedValues, skip []string) (rendered, error) {
	c, err := h.load()
	if err != nil {
		return nil, err
	}
	if mv.top != nil {
		if c.Values, err = loader.LoadValues(bytes.NewReader(mv.top)); err != nil {
			return nil, err
		}
	}
	if err := setDependencyValues(c, "", mv.deps, 0); err != nil {
		return nil, err
	}
	dropTemplates(c, c.Name(), skip, 0)
	user, err := values(mv.release)
	if err != nil {
		return nil, err
	}
	r, _, err := h.run(c, user)
	return r, err
}

// withoutFailing renders the chart with the marked values mv; while the
// render fails, it finds the template that fails (the templates the
// error names first, then the others) as the one whose leaving out
// changes the error, and renders without it. Each template's failure is
// in failed; a failure no template explains fails them all. Bounded:
// at most two renders per template, and a few more.
func (h *chartDir) withoutFailing(mv *markedValues) (rendered, map[string]error) {
	failed := map[string]error{}
	r, err := h.runMarked(mv, nil)
	if err == nil {
		return r, failed
	}
	c, lerr := h.load()
	if lerr != nil {
		return nil, failed
	}
	names := templateNames(c, c.Name(), 0)
	var skip []string
	budget := 2*len(names) + 4
	for err != nil && budget > 0 {
		cands := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(skip, n) })
		slices.SortStableFunc(cands, func(a, b string) int { return mentioned(err, b) - mentioned(err, a) })
		found := false
		for _, name := range cands {
			if budget--; budget < 0 {
				break
			}
			r2, err2 := h.runMarked(mv, append(slices.Clone(skip), name))
			if err2 == nil || err2.Error() != err.Error() {
				failed[name], skip, r, err, found = err, append(skip, name), r2, err2, true
				break
			}
		}
		if !found {
			break
		}
	}
	if err != nil {
		for _, name := range names {
			if failed[name] == nil {
				failed[name] = err
			}
		}
		return nil, failed
	}
	return r, failed
}

// mentioned is 1 when err's message names template name, else 0.
func mentioned(err error, name string) int {
	if strings.Contains(err.Error(), name) {
		return 1
	}
	return 0
}

// templateNames are the names Helm renders c's templates under (chart
// name, then the template's path: app/templates/deploy.yaml,
// app/charts/sub/templates/x.yaml), partials (_*.tpl) left out.
func templateNames(c *chart.Chart, prefix string, depth int) []string {
	if depth > 16 {
		return nil
	}
	var out []string
	for _, f := range c.Templates {
		if !strings.HasPrefix(path.Base(f.Name), "_") {
			out = append(out, prefix+"/"+f.Name)
		}
	}
	for _, sub := range c.Dependencies() {
		out = append(out, templateNames(sub, prefix+"/charts/"+sub.Name(), depth+1)...)
	}
	return out
}

// dropTemplates takes the templates named in skip out of c and its
// dependencies.
func dropTemplates(c *chart.Chart, prefix string, skip []string, depth int) {
	if depth > 16 || len(skip) == 0 {
		return
	}
	c.Templates = slices.DeleteFunc(c.Templates, func(f *common.File) bool { return slices.Contains(skip, prefix+"/"+f.Name) })
	for _, sub := range c.Dependencies() {
		dropTemplates(sub, prefix+"/charts/"+sub.Name(), skip, depth+1)
	}
}

// setDependencyValues sets the values of c's dependencies to their
// marked ones, by path.
func setDependencyValues(c *chart.Chart, prefix string, deps map[string][]byte, depth int) error {
	if depth > 16 {
		return nil
	}
	for _, sub := range c.Dependencies() {
		name := path.Join(prefix, "charts", sub.Name())
		if data, ok := deps[name]; ok {
			v, err := loader.LoadValues(bytes.NewReader(data))
			if err != nil {
				return err
			}
			sub.Values = v
		}
		if err := setDependencyValues(sub, name, deps, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// failedNotices says, for each template of the chart whose attribution
// render failed and that renders images, that its images are at the
// template with no line: once for the chart when every such template
// failed alike.
func (h *chartDir) failedNotices(real rendered, failed map[string]error, mk *markers, keys []valueKey) {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		if len(real[name]) > 0 {
			names = append(names, name)
		}
	}
	const what = "its values could not be followed to its images (%s): they are at the template, with no line, and pin leaves them as they are"
	if len(names) == 0 {
		return
	}
	if len(names) == len(withImages(real)) && len(names) > 1 && sameErrors(failed, names) {
		h.t.Errs = append(h.t.Errs, &Error{File: filepath.Join(h.disp, "Chart.yaml"), Notice: true,
			Msg: fmt.Sprintf(what, unmarked(failed[names[0]].Error(), mk, keys))})
		return
	}
	for _, name := range names {
		h.t.Errs = append(h.t.Errs, &Error{File: h.template(name), Notice: true,
			Msg: fmt.Sprintf(what, unmarked(failed[name].Error(), mk, keys))})
	}
}

// withImages are the templates of r that render an image.
func withImages(r rendered) []string {
	var out []string
	for name, sites := range r {
		if len(sites) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// sameErrors reports whether the templates named failed with one error.
func sameErrors(failed map[string]error, names []string) bool {
	for _, n := range names {
		if failed[n].Error() != failed[names[0]].Error() {
			return false
		}
	}
	return true
}
