package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/yamlfile"
)

// ValuesFile is a values file a Helm release uses (helm -f FILE).
type ValuesFile struct {
	// Chart is the folder of the chart it is for; "" for every chart.
	Chart string
	File  string
}

// ParseValuesFile reads "[CHART=]FILE": FILE for the chart in folder
// CHART, or for every chart. The part before "=" is a chart's folder only
// when it holds a Chart.yaml; otherwise the whole is a file name.
func ParseValuesFile(s string) ValuesFile {
	if chart, file, ok := strings.Cut(s, "="); ok && chart != "" && file != "" && isChart(chart) {
		return ValuesFile{Chart: chart, File: file}
	}
	return ValuesFile{File: s}
}

// Option configures Find.
type Option func(*options)

type options struct {
	values  []ValuesFile
	exclude func(rel string) bool
	files   map[string][]byte // by absolute path
	fetch   *fetcher          // nil: nothing fetched
	remote  bool              // kustomize fetches remote bases (WithRemote)
}

// WithValues renders charts with these values files after each chart's
// values.yaml, later files winning, as helm -f does. The default is
// values.yaml alone.
func WithValues(files ...ValuesFile) Option {
	return func(o *options) { o.values = append(o.values, files...) }
}

// WithExclude leaves out what exclude matches, as yamlfile.Files does: a
// folder excluded is neither searched for kustomizations and charts nor
// read. Folders a kustomization includes are read wherever they are. The
// default excludes nothing.
func WithExclude(exclude func(rel string) bool) Option {
	return func(o *options) { o.exclude = exclude }
}

// WithFiles renders as if the files named (any path; compared as absolute
// paths) held these bytes: pin renders its edits before it writes them.
// By default every file is read from disk.
func WithFiles(files map[string][]byte) Option {
	return func(o *options) {
		o.files = map[string][]byte{}
		for p, b := range files {
			if abs, err := filepath.Abs(p); err == nil {
				o.files[abs] = b
			}
		}
	}
}

func makeOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// read reads a file as yamlfile.ReadFile does, or gives what WithFiles
// says it holds.
func (o *options) read(path string) ([]byte, error) {
	if abs, err := filepath.Abs(path); err == nil {
		if b, ok := o.files[abs]; ok {
			return b, nil
		}
	}
	return yamlfile.ReadFile(path)
}

// Tree is a file or folder read as it is deployed.
type Tree struct {
	Root string
	// Plain are the manifest files no kustomization or chart owns, listed
	// as yamlfile.Files lists them: each is read as it is written.
	Plain []string
	// Apps are the kustomization roots and the charts, rendered, in the
	// order they were found.
	Apps []*App
	// Errs are the problems: walking the tree (*fs.PathError), and each
	// app's (*Error; a Notice for what was left out on purpose).
	Errs []error
	// GitOps are the charts of the tree rendered with the values of a
	// Flux HelmRelease or an Argo CD Application in a Plain file (see
	// gitops.go): Images reads them in place of those values read by the
	// chart conventions. Package pin edits those values as the
	// conventions read them, so these are not among Apps.
	GitOps []*App
	// GitOpsFiles are the files kustomizations of the tree render that
	// hold a Flux HelmRelease or an Argo CD Application: read as Plain
	// files are (Images reads their values where no chart is rendered),
	// and rendered as theirs are (GitOps).
	GitOpsFiles []string
	// gitops are the objects whose chart is rendered in GitOps.
	gitops []yamlfile.ChartSource
	// kfiles are the files read to render the kustomizations, as shown.
	kfiles []string
	// why says why a GitOps object's chart was not rendered, by the
	// notice that says it was not (see unrendered).
	why map[string]string
	// blocks are the values documents written in manifests that GitOps
	// charts were rendered with, by absolute path and first line.
	blocks map[string]map[int][]byte

	files map[string][]byte // every file read to render, by absolute path
}

// Kind says what rendered an App.
type Kind string

const (
	Kustomize Kind = "kustomize" // a kustomization no other kustomization of the tree includes
	Helm      Kind = "helm"      // a folder with a Chart.yaml
)

// App is one kustomization root or chart, rendered.
type App struct {
	Kind Kind
	// Dir is the kustomization's or the chart's folder, under Tree.Root.
	Dir string
	// Uses are the images its objects use, in the order rendered.
	Uses []Use
	// Output is what it renders, every object (multi-document YAML).
	Output []byte
}

// Use is one container image of a rendered object.
type Use struct {
	// Image is the reference as rendered (Ref) and the object and
	// container using it; File, Line and Column say where the reference
	// is set: Origin.Edit's place, else the first of Origin.Keys, else the
	// kustomization or template rendered.
	yamlfile.Image
	Origin Origin
}

// OriginKind says what sets a rendered reference.
type OriginKind string

const (
	Literal     OriginKind = "literal"      // an image: written in a manifest a kustomization reads (a resource, a patch)
	ImagesEntry OriginKind = "images-entry" // a kustomization's images: entry
	Values      OriginKind = "values"       // Helm values keys
	Template    OriginKind = "template"     // written in a chart's template
	Untraced    OriginKind = "untraced"     // something else: a JSON patch, a replacement, a generator
)

// Origin is where a rendered reference is set, and what pin edits to
// pin it.
type Origin struct {
	Kind OriginKind
	// Keys are the Helm values keys the reference is built from.
	Keys []Key
	// Edit is what to change to pin the reference; nil when pin must not
	// (Why says why).
	Edit *Edit
	Why  string
}

// Key is a Helm values key that sets part of a reference.
type Key struct {
	// Part is "reference" (the whole, or its end), "repository", "tag" or
	// "digest".
	Part string
	File string
	Line int
	// Path is the key's path: image.tag.
	Path ValuesPath
}

func (k Key) String() string { return fmt.Sprintf("%s (%s:%d)", k.Path, k.File, k.Line) }

// EditOp is one way to pin a reference where it is set.
type EditOp string

const (
	// SetRef pins the image: scalar at Line:Column as written
	// (repo:tag@digest).
	SetRef EditOp = "set-ref"
	// EntryDigest sets the digest: of the kustomization images: entry
	// whose name: value is at Line:Column; with Tag, also its newTag:.
	EntryDigest EditOp = "entry-digest"
	// AppendDigest appends @digest to the values scalar at Line:Column
	// (Path), after ":latest" when Latest, replacing any digest it holds.
	AppendDigest EditOp = "append-digest"
	// DigestKey sets the values key Path (a digest key the chart's
	// template uses) to the digest, adding it when it is not in File.
	DigestKey EditOp = "digest-key"
)

// Edit is one change pin makes to pin a rendered reference.
type Edit struct {
	Op           EditOp
	File         string
	Line, Column int
	Path         ValuesPath
	Tag          string
	Latest       bool
	// Block, for a values key written in a manifest (a Flux
	// HelmRelease's spec.values, an Argo CD Application's helm values, a
	// ConfigMap's literal block of values), is the line of File where
	// those values start: Path is a path in the values document
	// Tree.Values gives, laid out on the lines it has in File. 0 for a
	// values file.
	Block int
}

// Error is a problem with a kustomization or chart, at a file and line
// when known. A Notice is something left out on purpose: a remote base
// not fetched.
type Error struct {
	File   string
	Line   int
	Msg    string
	Notice bool
}

// recoverInput is deferred at each input boundary (a chart, a
// kustomization root): a panic while reading or rendering it becomes an
// input error naming file, redacted as every message built from input is,
// and the run goes on with the other inputs.
//
// Values and templates are decoded by Helm's and kustomize's own code, not
// yamlfile.Object.Map: a key that is not a string ("1: x") is what helm
// template and kustomize build make of it ("1"), so regcheck renders what
// they render.
func (t *Tree) recoverInput(file string) {
	if r := recover(); r != nil {
		t.Errs = append(t.Errs, &Error{File: file, Msg: redact.String(fmt.Sprintf("could not be rendered (a panic in the renderer: %v)", r))})
	}
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Find reads root, a file or a folder (walked as yamlfile.Files walks it):
// every folder with a kustomization is rendered with kustomize from its
// roots (the kustomizations no other kustomization in the tree includes)
// and every folder with a Chart.yaml with Helm's engine; the files they own
// are not read on their own. Remote bases are left out with a notice; a
// chart's dependencies not in its charts/ folder are read from the tree
// (file://) or fetched with WithFetch, else left out with a notice (see
// Fetch). A tree with no kustomization and no chart is only its Plain
// files.
func Find(root string, opts ...Option) *Tree {
	o := makeOptions(opts)
	t := &Tree{Root: root, files: map[string][]byte{}}
	kdirs, charts, ownsRoot := discover(root, o.exclude)
	if !ownsRoot {
		owned := map[string]bool{}
		rabs, _ := filepath.Abs(root)
		for _, d := range append(append([]string{}, kdirs...), charts...) {
			if rel, err := filepath.Rel(rabs, d); err == nil {
				owned[rel] = true
			}
		}
		exclude := func(rel string) bool { return owned[rel] || o.exclude != nil && o.exclude(rel) }
		var errs []error
		t.Plain, errs = yamlfile.Files([]string{root}, exclude)
		t.Errs = append(t.Errs, errs...)
	}
	if len(kdirs) > 0 {
		t.kustomize(root, kdirs, &o)
		// A file a kustomization names outside its folder (a patch of
		// ../../patches) is read through it only.
		t.Plain = slices.DeleteFunc(t.Plain, func(p string) bool {
			abs, err := filepath.Abs(p)
			_, read := t.files[abs]
			return err == nil && read
		})
	}
	for _, dir := range charts {
		t.helm(dir, &o)
	}
	t.renderGitOps(&o)
	return t
}

// Images is Find's images: each Plain file's as yamlfile.Find reads it
// (with Tekton and Argo Workflows parameters filled in across the Plain
// files, see yamlfile.ResolveParams), then each App's; and the problems, each Plain file's after the tree's.
// For a tree with no kustomization and no chart, it is yamlfile.Find of
// root.
func Images(root string, opts ...Option) ([]yamlfile.Image, []error) {
	t := Find(root, opts...)
	var imgs []yamlfile.Image
	var params []yamlfile.Source
	errs := t.Errs
	for _, p := range slices.Concat(t.Plain, t.GitOpsFiles) {
		data, err := yamlfile.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found, problems := yamlfile.Read(p, data)
		if slices.Contains(t.GitOpsFiles, p) {
			found, problems = gitopsOnly(found, problems) // the rest is the kustomization's
		}
		found, problems = t.withoutRendered(p, found, problems)
		t.withWhy(problems)
		errs = append(errs, problems...)
		imgs = append(imgs, found...)
		if yamlfile.MayHoldParams(data) {
			params = append(params, yamlfile.Source{Name: p, Data: data})
		}
	}
	// Tekton and Argo Workflows parameters, filled in from the whole tree:
	// a Pipeline may pass a value to a Task of another file.
	imgs, notes := yamlfile.ResolveParams(imgs, params)
	errs = append(errs, notes...)
	kparams := t.kustomizedParams()
	for _, a := range slices.Concat(t.Apps, t.GitOps) {
		var found []yamlfile.Image
		for _, u := range a.Uses {
			found = append(found, u.Image)
		}
		if a.Kind == Kustomize && len(kparams) > 0 {
			found, notes = yamlfile.ResolveParams(found, kparams)
			errs = append(errs, notes...)
		}
		imgs = append(imgs, found...)
	}
	return imgs, errs
}

// kustomizedParams are the files the kustomizations read that may hold
// Tekton or Argo Workflows objects: kustomize passes their parameters
// through as written, so each image a kustomization renders from such a
// file (a use at the line of its literal) is filled in from these files
// as a Plain file's is from the Plain files.
func (t *Tree) kustomizedParams() []yamlfile.Source {
	var out []yamlfile.Source
	for _, p := range t.kfiles {
		abs, err := filepath.Abs(p)
		if data, ok := t.files[abs]; err == nil && ok && yamlfile.MayHoldParams(data) {
			out = append(out, yamlfile.Source{Name: p, Data: data})
		}
	}
	return out
}

// discover finds the kustomization folders and the chart folders under
// root (absolute paths; a chart's folder is not searched further), and
// whether root itself is one (or a kustomization or Chart.yaml file).
func discover(root string, exclude func(string) bool) (kdirs, charts []string, ownsRoot bool) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, nil, false
	}
	if !fi.IsDir() {
		dir, _ := filepath.Abs(filepath.Dir(root))
		switch base := filepath.Base(root); {
		case isKustomizationFile(base):
			return []string{dir}, nil, true
		case base == "Chart.yaml":
			return nil, []string{dir}, true
		}
		return nil, nil, false
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if p != root && (strings.HasPrefix(d.Name(), ".") || exclude != nil && exclude(rel)) {
			return filepath.SkipDir
		}
		abs, _ := filepath.Abs(p)
		if isChart(p) {
			charts = append(charts, abs)
			ownsRoot = ownsRoot || p == root
			return filepath.SkipDir
		}
		if kustomizationFile(p) != "" {
			kdirs = append(kdirs, abs)
			ownsRoot = ownsRoot || p == root
		}
		return nil
	})
	return kdirs, charts, ownsRoot
}

// kustomizationFiles are the names kustomize looks for, in its order.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

func isKustomizationFile(base string) bool {
	for _, n := range kustomizationFiles {
		if base == n {
			return true
		}
	}
	return false
}

// kustomizationFile is the kustomization file of folder dir, or "".
func kustomizationFile(dir string) string {
	for _, n := range kustomizationFiles {
		p := filepath.Join(dir, n)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// isChart reports whether folder dir holds a Chart.yaml.
func isChart(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil && fi.Mode().IsRegular()
}

// Source is what file (a path as Find gives it) held when Find read it
// to render; a file it did not read is read now, as yamlfile.ReadFile
// reads it.
func (t *Tree) Source(file string) ([]byte, error) {
	if abs, err := filepath.Abs(file); err == nil {
		if b, ok := t.files[abs]; ok {
			return b, nil
		}
	}
	return yamlfile.ReadFile(file)
}

// display turns an absolute path into one under root as given: what a
// user reads, and what pin writes.
func display(root, abs string) string {
	rabs, err := filepath.Abs(root)
	if err != nil {
		return abs
	}
	fi, err := os.Stat(root)
	if err == nil && !fi.IsDir() {
		root, rabs = filepath.Dir(root), filepath.Dir(rabs)
	}
	rel, err := filepath.Rel(rabs, abs)
	if err != nil {
		return abs
	}
	return filepath.Join(root, rel)
}

var errTooMuch = errors.New("the folders to render hold more than 256 MiB")

// Own keeps, of the images yamlfile reads in file (one of Plain or
// GitOpsFiles, as Find gives it), those Images reports as the file's
// own: in a file of GitOpsFiles only its HelmReleases' and
// Applications'; never those read by the chart conventions from the
// values of a GitOps object whose chart GitOps renders (its uses there
// replace them).
func (t *Tree) Own(file string, imgs []yamlfile.Image) []yamlfile.Image {
	if slices.Contains(t.GitOpsFiles, file) {
		imgs, _ = gitopsOnly(imgs, nil)
	}
	imgs, _ = t.withoutRendered(file, imgs, nil)
	return imgs
}

// gitopsOnly keeps, of what a file a kustomization renders holds, the
// images and notices of its HelmReleases and Applications.
func gitopsOnly(imgs []yamlfile.Image, notes []error) ([]yamlfile.Image, []error) {
	kinds := []string{"HelmRelease", "Application"}
	imgs = slices.DeleteFunc(imgs, func(img yamlfile.Image) bool { return !slices.Contains(kinds, img.Kind) })
	notes = slices.DeleteFunc(notes, func(err error) bool {
		n, ok := err.(*yamlfile.Notice)
		return !ok || !strings.HasPrefix(n.Msg, "HelmRelease ") && !strings.HasPrefix(n.Msg, "Application ")
	})
	return imgs, notes
}
