package render

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/yamlfile"
)

// renderGitOps renders, for each Flux HelmRelease and Argo CD Application
// of the tree's Plain files whose chart is a folder of the same tree,
// that chart with the object's Helm values, and for each Application
// whose path is a kustomization of the tree, that kustomization with its
// kustomize.images, into t.GitOps.
func (t *Tree) renderGitOps(o *options) {
	for _, p := range t.Plain {
		data, err := o.read(p)
		if err != nil {
			continue // Images reports it
		}
		_, _, charts := yamlfile.ReadCharts(p, data)
		for _, cs := range charts {
			if cs.Images != nil {
				if dir := t.dirOf(p, cs.Path, isKustomization); dir != "" && t.kustomized(o, dir, cs) {
					t.gitops = append(t.gitops, cs)
				}
				continue // a path of plain manifests is read as files; kustomize.images as written, with the notice
			}
			dir := t.dirOf(p, cs.Path, isChart)
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

// isKustomization reports whether folder dir holds a kustomization.
func isKustomization(dir string) bool { return kustomizationFile(dir) != "" }

// dirOf is the folder (absolute) a GitOps object in file names by path,
// relative to a repository's root, that is a chart or a kustomization
// (is): the first folder from the file's up to the tree's root under
// which path is one; "" when none is, or path leaves the tree.
func (t *Tree) dirOf(file, path string, is func(dir string) bool) string {
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
		if rel, err := filepath.Rel(root, c); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && is(c) {
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

// kustomized renders the kustomization in folder dir (absolute) as Argo
// CD deploys it for the Application cs: with cs's kustomize.images
// applied after the kustomization's own images entries, into t.GitOps.
// The images an entry of cs sets are at that entry's line in cs.File;
// the uses the tree's own render of dir has already are left out (with
// no entries, all are: nothing is rendered again). It reports whether
// the kustomization was rendered; when not, the reason is in t.Errs (or
// already there, from the tree's own render of dir).
//
// The entries are the images entries of an overlay kustomization, in
// memory, whose only resource is dir: kustomize applies them after those
// of dir, as kustomize edit set image in dir then kustomize build do,
// but for an entry of cs naming an image a kustomization under dir
// renames, which matches by the new name only when cs names it so.
func (t *Tree) kustomized(o *options, dir string, cs yamlfile.ChartSource) bool {
	if len(cs.Images) == 0 {
		return slices.ContainsFunc(t.Apps, func(a *App) bool { return a.Kind == Kustomize && a.Dir == display(t.Root, dir) })
	}
	g := &kgraph{o: o, root: t.Root, nodes: map[string]*kust{}}
	g.walk([]string{dir})
	reach := g.reach([]string{dir})
	files, err := g.load(reach)
	if err != nil {
		t.Errs = append(t.Errs, &Error{File: cs.File, Line: cs.Notice.Line, Msg: cs.Kind + " " + objectName(cs) + ": " + err.Error()})
		return false
	}
	over, lines, err := overlay(dir, cs)
	if err != nil {
		t.Errs = append(t.Errs, &Error{File: cs.File, Line: cs.Notice.Line, Msg: cs.Kind + " " + objectName(cs) + ": kustomize.images: " + err.Error()})
		return false
	}
	g.nodes[over.dir] = over
	files[over.file] = over.raw
	var mk markers
	var items []markItem
	plain, marked := g.filesystems(files, append([]string{over.dir}, reach...), &mk, &items)
	sub := &Tree{Root: t.Root, files: t.files}
	sub.renderRoot(g, over.dir, plain, marked, &mk, items)
	overFile := display(t.Root, over.file)
	for _, e := range sub.Errs {
		if re, ok := e.(*Error); ok && re.File == overFile {
			re.File, re.Line, re.Msg = cs.File, cs.Notice.Line, cs.Kind+" "+objectName(cs)+": rendering "+cs.Path+" with its kustomize.images: "+re.Msg
		}
		t.Errs = append(t.Errs, e)
	}
	if len(sub.Apps) == 0 {
		return false
	}
	rendered := map[yamlfile.Image]bool{} // the tree's own render of dir
	for _, a := range t.Apps {
		for _, u := range a.Uses {
			rendered[u.Image] = true
		}
	}
	for _, a := range sub.Apps {
		a.Dir = display(t.Root, dir)
		a.Uses = slices.DeleteFunc(a.Uses, func(u Use) bool { return rendered[u.Image] }) // no entry of cs changed it
		for i := range a.Uses {
			u := &a.Uses[i]
			if u.File != overFile {
				continue // set in dir's own files: at its place there
			}
			arg, ok := lines[u.Line] // the overlay's line of the entry that set it
			u.File, u.Line, u.Column = cs.File, cs.Notice.Line, 0
			if ok && u.Origin.Kind == ImagesEntry {
				u.Line, u.Column = arg.Line, arg.Column
				u.Origin = Origin{Kind: ImagesEntry, Why: "set by the " + cs.Kind + "'s kustomize.images: pin pins it there"}
			}
		}
	}
	t.GitOps = append(t.GitOps, sub.Apps...)
	return true
}

// overlay is the kustomization, in memory, in a folder beside dir that
// no file is in, whose resource is dir and whose images entries are
// cs.Images; and, by the line of each entry's name: in it, the argument
// it comes from.
func overlay(dir string, cs yamlfile.ChartSource) (*kust, map[int]yamlfile.ImageArg, error) {
	odir := filepath.Join(filepath.Dir(dir), ".regcheck-"+strings.ToLower(cs.Kind)+"-"+filepath.Base(dir))
	rel, err := filepath.Rel(odir, dir)
	if err != nil {
		return nil, nil, err
	}
	k := types.Kustomization{TypeMeta: types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{filepath.ToSlash(rel)}}
	for _, a := range cs.Images {
		k.Images = append(k.Images, imageArg(a.Value))
	}
	raw, err := sigsyaml.Marshal(&k)
	if err != nil {
		return nil, nil, err
	}
	n := &kust{dir: odir, file: filepath.Join(odir, kustomizationFiles[0]), raw: raw, k: k, dropped: map[string]bool{}}
	n.entries = entries(raw, &n.k)
	n.includes = []string{dir}
	lines := map[int]yamlfile.ImageArg{}
	for i, e := range n.entries {
		if e.line > 0 && i < len(cs.Images) {
			lines[e.line] = cs.Images[i]
		}
	}
	return n, lines, nil
}

// imageArg is the images entry of an argument of kustomize edit set
// image, as an Application's kustomize.images holds them: "ref" (the
// image named ref's repository gets its tag or digest) or "name=ref"
// (the image name becomes ref).
func imageArg(s string) types.Image {
	name, ref, renamed := strings.Cut(s, "=")
	if !renamed {
		ref = s
	}
	repo, tag, digest := splitRef(ref)
	img := types.Image{Name: repo, NewTag: tag, Digest: digest}
	if renamed {
		img.Name, img.NewName = name, repo
	}
	return img
}
