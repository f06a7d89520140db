package render

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/yamlfile"
)

// renderGitOps renders, for each Flux HelmRelease and Argo CD Application
// of the tree's Plain files whose chart is a folder of the same tree,
// that chart with the object's Helm values, into t.GitOps.
func (t *Tree) renderGitOps(o *options) {
	for _, p := range t.Plain {
		data, err := o.read(p)
		if err != nil {
			continue // Images reports it
		}
		_, _, charts := yamlfile.ReadCharts(p, data)
		for _, cs := range charts {
			dir := t.chartOf(p, cs.Path)
			if dir == "" || cs.Values == nil {
				continue
			}
			var extra []source
			for _, v := range cs.Values {
				extra = append(extra, source{file: p, data: v})
			}
			if abs, err := filepath.Abs(p); err == nil {
				t.files[abs] = data
			}
			n := len(t.GitOps)
			t.chart(dir, o, &t.GitOps, extra)
			if len(t.GitOps) == n {
				continue // not rendered: its errors say why, and the values are read as written
			}
			t.gitops = append(t.gitops, cs)
			if cs.Unrendered != "" {
				t.Errs = append(t.Errs, &Error{File: p, Line: cs.Notice.Line, Notice: true,
					Msg: cs.Kind + " " + objectName(cs) + ": " + cs.Unrendered + " not applied to the chart rendered (" + display(t.Root, dir) + ")"})
			}
		}
	}
}

func objectName(cs yamlfile.ChartSource) string {
	if cs.Namespace == "" {
		return cs.Name
	}
	return cs.Namespace + "/" + cs.Name
}

// chartOf is the chart folder (absolute) a GitOps object in file names
// by path, relative to a repository's root: the first folder from the
// file's up to the tree's root under which path is a chart; "" when
// none is, or path leaves the tree.
func (t *Tree) chartOf(file, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return ""
	}
	root, err := filepath.Abs(t.Root)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		root = filepath.Dir(root)
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return ""
	}
	for {
		c := filepath.Join(dir, filepath.FromSlash(path))
		if rel, err := filepath.Rel(root, c); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && isChart(c) {
			return c
		}
		if dir == root || filepath.Dir(dir) == dir {
			return ""
		}
		dir = filepath.Dir(dir)
	}
}

// withoutRendered leaves out of a Plain file's images and notices those
// of the GitOps objects whose chart is rendered in t.GitOps: the images
// their values set by the chart conventions, and the notice that the
// chart was not rendered.
func (t *Tree) withoutRendered(file string, imgs []yamlfile.Image, notes []error) ([]yamlfile.Image, []error) {
	for _, cs := range t.gitops {
		if cs.File != file {
			continue
		}
		imgs = slices.DeleteFunc(imgs, func(img yamlfile.Image) bool {
			return img.Kind == cs.Kind && img.Namespace == cs.Namespace && img.Name == cs.Name && slices.Contains(cs.Fields, img.Field)
		})
		notes = slices.DeleteFunc(notes, func(err error) bool {
			if err.Error() == cs.Notice.Error() {
				return true
			}
			n, ok := err.(*yamlfile.Notice)
			return ok && strings.HasPrefix(n.Msg, cs.Kind+" "+objectName(cs)+": ") && slices.ContainsFunc(cs.Fields, func(f string) bool {
				return strings.Contains(n.Msg, ": "+f+".") // a key of the values the render read
			})
		})
	}
	return imgs, notes
}
