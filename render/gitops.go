package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/yamlfile"
)

// renderGitOps renders, for each Flux HelmRelease and Argo CD Application
// of the tree's Plain files and of the files its kustomizations list
// (GitOpsFiles), the chart it deploys with the object's Helm values: a
// folder of the same tree, or for a HelmRelease the chart its
// HelmRepository or OCIRepository (in the tree) names, fetched (see
// WithFetch), with the values of its valuesFrom ConfigMaps in the tree
// before its own; and for each Application whose path is a
// kustomization of the tree, that kustomization with its
// kustomize.images, into t.GitOps.
func (t *Tree) renderGitOps(o *options) {
	t.findGitOpsFiles(o)
	files := slices.Concat(t.Plain, t.GitOpsFiles)
	t.fluxKustomizations(o, slices.Concat(t.Plain, t.kfiles))
	var objs []object
	for _, p := range files {
		data, err := o.read(p)
		if err != nil {
			continue // Images reports it
		}
		_, _, charts := yamlfile.ReadCharts(p, data)
		if len(charts) > 0 && objs == nil {
			objs = t.objects(o, slices.Concat(files, t.kfiles), "HelmRepository", "OCIRepository", "ConfigMap")
		}
		for _, cs := range charts {
			if cs.Images != nil {
				if dir := t.dirOf(p, cs.Path, isKustomization); dir != "" && t.kustomized(o, dir, cs) {
					t.gitops = append(t.gitops, cs)
				}
				continue // a path of plain manifests is read as files; kustomize.images as written, with the notice
			}
			t.gitopsChart(o, p, data, cs, objs)
		}
	}
}

// fluxSelf is the GitRepository flux bootstrap creates for the repository
// it syncs: a Flux Kustomization of that source reads this tree.
const fluxSelf = "flux-system"

// fluxKustomizations gives a notice for each Flux Kustomization of files
// whose manifests are not in this tree: its source is another repository
// (a GitRepository other than flux-system, an OCIRepository, a Bucket),
// or its spec.path leaves the tree or is not in it. The manifests of a
// path in the tree are read where they are, as every file of the tree is.
func (t *Tree) fluxKustomizations(o *options, files []string) {
	for _, ob := range t.objects(o, files, "Kustomization") {
		if !strings.HasPrefix(scalar(ob.node, "apiVersion"), "kustomize.toolkit.fluxcd.io/") {
			continue
		}
		spec := child(ob.node, "spec")
		p, ref := cmpOr(scalar(spec, "path"), "./"), child(spec, "sourceRef")
		line := ob.node.Line
		if n := child(spec, "path"); n != nil {
			line = n.Line
		}
		name := ob.name
		if ob.ns != "" {
			name = ob.ns + "/" + ob.name
		}
		kind, src := scalar(ref, "kind"), scalar(ref, "name")
		var why string
		switch {
		case kind != "GitRepository" || src != fluxSelf:
			why = fmt.Sprintf("its source %s %s is another repository than this tree (flux-system's): spec.path %s is not read (a source outside this tree is not fetched)", cmpOr(kind, "(none)"), src, p)
		case t.dirOf(ob.file, p, isDir) == "":
			why = fmt.Sprintf("spec.path %s is not in this tree (it leaves it, or is not there): its manifests are not read", p)
		default:
			continue
		}
		t.Errs = append(t.Errs, &Error{File: ob.file, Line: line, Notice: true, Msg: "Kustomization " + name + ": " + why})
	}
}

// isDir reports whether dir is a folder.
func isDir(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// gitopsChart renders the chart of cs, a GitOps object of file p, with
// its values, when the chart is in the tree or fetched.
func (t *Tree) gitopsChart(o *options, p string, data []byte, cs yamlfile.ChartSource, objs []object) {
	if cs.Values == nil {
		return
	}
	dir := t.dirOf(p, cs.Path, isChart)
	why := ""
	switch {
	case dir == "" && cs.Path != "":
		t.unrendered(cs, fmt.Sprintf("%s of %s %s is not in this tree (a source outside it is not fetched)", cs.Path, cmpOr(cs.Source.Kind, "its source"), cs.Source.Name))
		return
	case dir == "" && (cs.Kind == "HelmRelease" || cs.Chart != ""):
		if dir = t.remoteChart(o, cs, objs); dir == "" {
			return
		}
		why = fmt.Sprintf("set in the default values of chart %s, fetched (not in this tree): set it in %s %s's values to pin it", cmpOr(cs.Chart, filepath.Base(dir)), cs.Kind, objectName(cs))
	case dir == "":
		return
	}
	extra, all := t.valuesFrom(cs, objs)
	for _, v := range cs.Values {
		extra = append(extra, t.block(p, v))
	}
	if abs, err := filepath.Abs(p); err == nil {
		t.files[abs] = data
	}
	n := len(t.GitOps)
	t.chart(dir, o, &t.GitOps, extra, why)
	if len(t.GitOps) == n {
		return // not rendered: its errors say why, and the values are read as written
	}
	if all && len(cs.ValuesFrom) > 0 {
		cs.Fields = append(cs.Fields, "spec.valuesFrom")
	}
	t.gitops = append(t.gitops, cs)
	if cs.Unrendered != "" {
		t.Errs = append(t.Errs, &Error{File: p, Line: cs.Notice.Line, Notice: true,
			Msg: cs.Kind + " " + objectName(cs) + ": " + cs.Unrendered + " not applied to the chart rendered (" + display(t.Root, dir) + ")"})
	}
}

// block is the values document data written in file p (a GitOps object's
// values, a ConfigMap's literal block), laid out on its lines there, as a
// source of a chart's render: kept for pin (see Values).
func (t *Tree) block(p string, data []byte) source {
	s := source{file: p, data: data, block: bytes.Count(data, []byte("\n")) - bytes.Count(bytes.TrimLeft(data, "\n"), []byte("\n")) + 1}
	abs, err := filepath.Abs(p)
	if err != nil {
		return source{file: p, data: data, why: "values not edited: " + err.Error()}
	}
	if t.blocks == nil {
		t.blocks = map[string]map[int][]byte{}
	}
	if t.blocks[abs] == nil {
		t.blocks[abs] = map[int][]byte{}
	}
	t.blocks[abs][s.block] = data
	return s
}

// Values is the values document that starts at line block of file (an
// Edit's File and Block), as a GitOps chart was rendered with it: laid
// out on the lines it has in file, blank lines before it. Nil when no
// render read one there.
func (t *Tree) Values(file string, block int) []byte {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil
	}
	return t.blocks[abs][block]
}

// findGitOpsFiles sets t.GitOpsFiles: the files kustomizations render
// (t.kfiles) that hold a Flux HelmRelease or an Argo CD Application a
// kustomization of the tree renders; and takes those objects' images out
// of the kustomizations' uses: they are read from the files, at their
// lines, as in a Plain file.
func (t *Tree) findGitOpsFiles(o *options) {
	rendered := map[string]bool{} // kind/name
	for _, a := range t.Apps {
		if a.Kind != Kustomize {
			continue
		}
		docs, _ := yamlfile.Documents(a.Output)
		for _, d := range docs {
			if d.Kind == yaml.DocumentNode && len(d.Content) == 1 {
				rendered[scalar(d.Content[0], "kind")+"/"+scalar(child(d.Content[0], "metadata"), "name")] = true
			}
		}
	}
	found := map[string]bool{}
	for _, ob := range t.objects(o, t.kfiles, "HelmRelease", "Application") {
		if !rendered[ob.kind+"/"+ob.name] || !gitopsKind(ob) {
			continue
		}
		found[ob.kind+"/"+ob.name] = true
		if !slices.Contains(t.GitOpsFiles, ob.file) {
			t.GitOpsFiles = append(t.GitOpsFiles, ob.file)
		}
	}
	for _, a := range t.Apps {
		if a.Kind == Kustomize {
			a.Uses = slices.DeleteFunc(a.Uses, func(u Use) bool { return found[u.Kind+"/"+u.Name] })
		}
	}
}

// gitopsKind reports whether ob is a Flux HelmRelease or an Argo CD
// Application.
func gitopsKind(ob object) bool {
	api := scalar(ob.node, "apiVersion")
	return ob.kind == "HelmRelease" && strings.HasPrefix(api, "helm.toolkit.fluxcd.io/") ||
		ob.kind == "Application" && strings.HasPrefix(api, "argoproj.io/")
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
				return strings.Contains(n.Msg, ": "+f+".") || strings.Contains(n.Msg, ": "+f+" (") // a key of the values the render read, or they themselves
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
				u.Origin = Origin{Kind: ImagesEntry, Edit: &Edit{Op: SetRef, File: cs.File, Line: arg.Line, Column: arg.Column}}
				if _, ref, renamed := strings.Cut(arg.Value, "="); renamed && ref != u.Ref || !renamed && arg.Value != u.Ref {
					// The entry does not write the reference whole (a
					// rename that keeps the tag): its tag is not there.
					u.Origin.Edit = nil
					u.Origin.Why = fmt.Sprintf("set by the %s's kustomize.images entry %s, which does not write the tag %s uses: write it there to pin it", cs.Kind, arg.Value, u.Ref)
				}
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
