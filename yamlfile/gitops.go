package yamlfile

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Notice is something in a file that was read in part, on purpose: a
// GitOps object whose chart is not rendered, values from a cluster's
// ConfigMaps not read. The images that could be read are still returned.
type Notice struct {
	File   string
	Line   int
	Column int // when known
	Msg    string
}

func (n *Notice) Error() string {
	if n.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", n.File, n.Line, n.Msg)
	}
	return n.File + ": " + n.Msg
}

// ChartSource is the chart (or path) a GitOps object deploys and the
// Helm values it gives, for a renderer that finds the chart in the same
// tree (see package render).
type ChartSource struct {
	File                  string
	Kind, Namespace, Name string // the object
	// Path is where the chart is in the source's repository: a
	// HelmRelease's spec.chart.spec.chart from a GitRepository or
	// Bucket, an Application's source.path; "" for a chart from a Helm
	// repository or an OCI registry.
	Path string
	// Values are the object's Helm values as YAML documents, in the
	// order Helm merges them, each laid out on the lines and columns it
	// has in File (blank lines before it), so that a key's place in one
	// is its place in the file. Nil when a value is not written so
	// (a flow mapping, a string not in a literal block).
	Values [][]byte
	// Fields are the Field of the images read from these values by the
	// conventions, and Notice the notice saying the chart was not
	// rendered: what a renderer that renders it replaces.
	Fields []string
	Notice *Notice
	// Unrendered says what the render cannot apply (an Application's
	// helm.parameters with a list index), or "".
	Unrendered string
	// Images are an Argo CD Application's kustomize.images entries, in
	// order, for a renderer that finds its path's kustomization in the
	// same tree; nil for a Helm source.
	Images []ImageArg
	// Chart, Version and Repository name a chart of a Helm repository
	// or an OCI registry: a HelmRelease's spec.chart.spec.chart and
	// version (its Repository is the URL of the source object, not
	// known here), an Application source's chart, targetRevision and
	// repoURL.
	Chart, Version, Repository string
	// Source is the Flux source object a HelmRelease's chart comes from
	// (spec.chart.spec.sourceRef, or spec.chartRef): HelmRepository,
	// OCIRepository, GitRepository, Bucket, HelmChart.
	Source ObjectRef
	// ValuesFrom are a HelmRelease's spec.valuesFrom, in order: merged
	// before Values.
	ValuesFrom []ValuesRef
}

// ObjectRef names a Kubernetes object; Line is where it is named.
type ObjectRef struct {
	Kind, Name, Namespace string
	Line                  int
}

// ValuesRef is one of a HelmRelease's spec.valuesFrom: the key (Key,
// values.yaml by default) of a ConfigMap or Secret.
type ValuesRef struct {
	ObjectRef
	Key      string
	Optional bool
}

// ImageArg is one of an Application's kustomize.images, as written
// ("ref" or "name=ref", the argument of kustomize edit set image), and
// where it is.
type ImageArg struct {
	Value        string
	Line, Column int
}

// Parts of a reference a Site's Value may hold (Site.Part).
const (
	PartTag    = "tag"    // the tag alone (Helm values image.tag)
	PartDigest = "digest" // the digest alone (Helm values image.digest)
)

// Written is what Value must read for the site to name ref: ref itself,
// after Prefix; for a PartTag site, ref's tag@digest; for a PartDigest
// site, ref's digest.
func (s Site) Written(ref string) string {
	rest, dgst, _ := strings.Cut(ref, "@")
	switch s.Part {
	case PartTag:
		tag := ""
		if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
			tag = rest[i+1:]
		}
		if dgst == "" {
			return tag
		}
		return tag + "@" + dgst
	case PartDigest:
		return dgst
	}
	return s.Prefix + ref
}

// gitops reads a Flux HelmRelease or an Argo CD Application, reporting
// whether obj is one. Neither's chart or path is rendered: the images
// its Helm values set are read by the common chart conventions (see
// values), with a notice.
func (w *walker) gitops(base Image, obj ref, gk groupKind) bool {
	switch gk {
	case groupKind{"helm.toolkit.fluxcd.io", "HelmRelease"}:
		w.helmRelease(base, obj)
	case groupKind{"argoproj.io", "Application"}:
		w.application(base, obj)
	case groupKind{"argoproj.io", "ApplicationSet"}:
		w.note(obj.node, "%s %s: an ApplicationSet's template is not read (its generators fill it in)", base.Kind, objName(base))
	default:
		return false
	}
	return true
}

func objName(b Image) string { return path.Join(b.Namespace, b.Name) }

func (w *walker) note(at *yaml.Node, format string, args ...any) {
	n := &Notice{File: w.file, Msg: fmt.Sprintf(format, args...)}
	if at != nil && at.Line > 0 {
		n.Line = at.Line
	}
	w.notes = append(w.notes, n)
}

// helmRelease reads spec.values of a Flux HelmRelease.
func (w *walker) helmRelease(base Image, obj ref) {
	spec := w.getOr(obj, "spec")
	chart := w.str(w.getOr(w.getOr(spec, "chart"), "spec"), "chart")
	if chart == "" {
		chart = w.str(w.getOr(spec, "chartRef"), "kind") + "/" + w.str(w.getOr(spec, "chartRef"), "name")
	}
	at := obj.node
	if c, ok := w.get(spec, "chart"); ok {
		at = c.node
	}
	if vf, ok := w.get(spec, "valuesFrom"); ok {
		w.note(vf.node, "%s %s: spec.valuesFrom (ConfigMaps and Secrets in the cluster) not read", base.Kind, objName(base))
	}
	found := 0
	cs := ChartSource{File: w.file, Kind: base.Kind, Namespace: base.Namespace, Name: base.Name, Fields: []string{"spec.values"}, Values: [][]byte{}}
	w.releaseSource(spec, &cs)
	switch cs.Source.Kind {
	case "GitRepository", "Bucket":
		cs.Path = chart
	}
	if vals, ok := w.get(spec, "values"); ok {
		found = w.values(base, vals, "spec.values", nil)
		cs.Values = w.laidOut(cs.Values, vals)
	}
	w.note(at, "%s %s: chart %s not rendered; %d image(s) read from spec.values (the chart's own defaults unknown)",
		base.Kind, objName(base), chart, found)
	cs.Notice = w.notes[len(w.notes)-1].(*Notice)
	w.charts = append(w.charts, cs)
}

// laidOut adds to docs the values mapping v as a YAML document on the
// lines and columns it has in the file; nil when v is not a block
// mapping of lines of its own.
func (w *walker) laidOut(docs [][]byte, v ref) [][]byte {
	if docs == nil || v.alias || v.node.Kind != yaml.MappingNode || v.node.Style&yaml.FlowStyle != 0 || v.node.Line < 1 || len(v.node.Content) == 0 {
		return nil
	}
	from, to := v.node.Line, lastLine(v.node)
	lines := w.fileLines()
	if to > len(lines) {
		return nil
	}
	if before := lines[from-1][:max(0, v.node.Column-1)]; strings.TrimSpace(before) != "" && strings.TrimSpace(before) != "-" {
		return nil // the mapping shares its first line with something else
	}
	var doc strings.Builder
	doc.WriteString(strings.Repeat("\n", from-1) + strings.Repeat(" ", v.node.Column-1) + strings.TrimLeft(lines[from-1], " -") + "\n")
	for l := from + 1; l <= to; l++ {
		doc.WriteString(lines[l-1] + "\n")
	}
	return append(docs, []byte(doc.String()))
}

// lastLine is the last line of n's text (its last scalar's).
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}

// application reads each Helm and kustomize source of an Argo CD
// Application.
func (w *walker) application(base Image, obj ref) {
	spec := w.getOr(obj, "spec")
	var sources []ref
	var names []string
	if s, ok := w.get(spec, "source"); ok {
		sources, names = append(sources, s), append(names, "spec.source")
	}
	if list, ok := w.get(spec, "sources"); ok && list.node.Kind == yaml.SequenceNode {
		for i, e := range list.node.Content {
			sources = append(sources, w.resolve(e, list.alias, list.pos))
			names = append(names, fmt.Sprintf("spec.sources[%d]", i))
		}
	}
	for i, src := range sources {
		w.appSource(base, src, names[i])
	}
}

// appSource reads one source of an Application: helm.valuesObject,
// helm.values (a YAML string), helm.parameters over both, and
// kustomize.images.
func (w *walker) appSource(base Image, src ref, name string) {
	what := w.str(src, "chart")
	if what == "" {
		what = w.str(src, "path")
	}
	what = strings.TrimSuffix(w.str(src, "repoURL"), "/") + " " + what
	if k, ok := w.get(src, "kustomize"); ok {
		args := w.kustomizeImages(base, k, name+".kustomize.images")
		w.note(src.node, "%s %s: %s (%s) not rendered; %d image(s) read from kustomize.images", base.Kind, objName(base), name, what, len(args))
		w.charts = append(w.charts, ChartSource{File: w.file, Kind: base.Kind, Namespace: base.Namespace, Name: base.Name, Path: w.str(src, "path"),
			Fields: []string{name + ".kustomize.images"}, Notice: w.notes[len(w.notes)-1].(*Notice), Images: args})
	}
	if d, ok := w.get(src, "directory"); ok {
		if _, ok := w.get(d, "jsonnet"); ok {
			w.note(src.node, "%s %s: %s (%s) is rendered by jsonnet: not rendered, its images not read", base.Kind, objName(base), name, what)
		}
	}
	h, ok := w.get(src, "helm")
	if !ok && w.str(src, "chart") == "" {
		return
	}
	if !ok { // a chart with no values of the Application's own
		h = ref{node: &yaml.Node{Kind: yaml.MappingNode}}
	}
	if vf, ok := w.get(h, "valueFiles"); ok {
		w.note(vf.node, "%s %s: %s.helm.valueFiles not read", base.Kind, objName(base), name)
	}
	params := w.parameters(h)
	found := 0
	seen := map[string]bool{}
	cs := ChartSource{File: w.file, Kind: base.Kind, Namespace: base.Namespace, Name: base.Name, Path: w.str(src, "path"),
		Fields: []string{name + ".helm.valuesObject", name + ".helm.values", name + ".helm.parameters"}, Values: [][]byte{},
		Chart: w.str(src, "chart"), Version: w.str(src, "targetRevision"), Repository: w.str(src, "repoURL")}
	if vo, ok := w.get(h, "valuesObject"); ok {
		found += w.values(base, vo, name+".helm.valuesObject", params, seen)
	}
	if vs, ok := w.get(h, "values"); ok && isValue(vs.node) {
		found += w.valuesString(base, vs, name+".helm.values", params, seen)
		cs.Values = w.stringLaidOut(cs.Values, vs)
	}
	if vo, ok := w.get(h, "valuesObject"); ok && cs.Values != nil {
		cs.Values = w.laidOut(cs.Values, vo) // over values, as Argo CD merges them
	}
	found += w.values(base, ref{node: &yaml.Node{Kind: yaml.MappingNode}}, name+".helm.parameters", params, seen)
	cs.Values = w.parameterDocs(cs.Values, h, &cs)
	w.note(src.node, "%s %s: %s (%s) not rendered; %d image(s) read from its Helm values (the chart's own defaults unknown)",
		base.Kind, objName(base), name, what, found)
	cs.Notice = w.notes[len(w.notes)-1].(*Notice)
	w.charts = append(w.charts, cs)
}

// parameterDocs adds to docs each of helm.parameters (name: image.tag,
// value: "2.1") as a values document of its own, on the line of its
// value, after the values, as Argo CD gives them to Helm (--set, so a
// value is a string here, where Helm's --set would read 7 as a number).
// A name with a list index or an escaped dot is not applied: cs says so.
func (w *walker) parameterDocs(docs [][]byte, h ref, cs *ChartSource) [][]byte {
	list, ok := w.get(h, "parameters")
	if docs == nil || !ok || list.node.Kind != yaml.SequenceNode {
		return docs
	}
	for _, e := range list.node.Content {
		p := w.resolve(e, list.alias, list.pos)
		name := w.str(p, "name")
		v, ok := w.get(p, "value")
		if name == "" || !ok || !isValue(v.node) {
			continue
		}
		if strings.ContainsAny(name, "[]\\") {
			cs.Unrendered = "helm.parameters " + name
			continue
		}
		keys := strings.Split(name, ".")
		quoted, _ := json.Marshal(v.node.Value)
		doc := string(quoted)
		for i := len(keys) - 1; i >= 0; i-- {
			k, _ := json.Marshal(keys[i])
			doc = "{" + string(k) + ": " + doc + "}"
		}
		docs = append(docs, []byte(strings.Repeat("\n", max(0, v.node.Line-1))+doc+"\n"))
	}
	return docs
}

// stringLaidOut adds to docs helm.values, a literal block, as a YAML
// document on the lines and columns its text has in the file; nil when
// it is not a literal block.
func (w *walker) stringLaidOut(docs [][]byte, vs ref) [][]byte {
	lineOff, _, ok := w.blockOffset(vs.node)
	if !ok || docs == nil {
		return nil
	}
	n := strings.Count(strings.TrimRight(vs.node.Value, "\n"), "\n") + 1
	lines := w.fileLines()
	if lineOff+n > len(lines) {
		return nil
	}
	var doc strings.Builder
	doc.WriteString(strings.Repeat("\n", lineOff))
	for l := lineOff + 1; l <= lineOff+n; l++ {
		doc.WriteString(lines[l-1] + "\n")
	}
	return append(docs, []byte(doc.String()))
}

// parameters are helm.parameters by name (image.tag), their value nodes.
func (w *walker) parameters(h ref) map[string]ref {
	list, ok := w.get(h, "parameters")
	if !ok || list.node.Kind != yaml.SequenceNode {
		return nil
	}
	out := map[string]ref{}
	for _, e := range list.node.Content {
		p := w.resolve(e, list.alias, list.pos)
		if v, ok := w.get(p, "value"); ok && isValue(v.node) && w.str(p, "name") != "" {
			out[w.str(p, "name")] = v
		}
	}
	return out
}

// kustomizeImages reads an Application's kustomize.images: "ref" or
// "name=ref" each; those read ([] when there are none).
func (w *walker) kustomizeImages(base Image, k ref, field string) []ImageArg {
	args := []ImageArg{}
	list, ok := w.get(k, "images")
	if !ok || list.node.Kind != yaml.SequenceNode {
		return args
	}
	for _, e := range list.node.Content {
		v := w.resolve(e, list.alias, list.pos)
		if !isValue(v.node) {
			continue
		}
		s := w.site(base, v)
		s.Field = field
		if name, img, ok := strings.Cut(v.node.Value, "="); ok {
			s.Prefix, s.Ref, s.Container = name+"=", img, name
		}
		w.sites = append(w.sites, s)
		args = append(args, ImageArg{Value: v.node.Value, Line: v.node.Line, Column: v.node.Column})
	}
	return args
}

// valuesString reads helm.values, Helm values written as a YAML string.
// Its keys' places are lines of the file when it is a literal block
// (|): pin edits those; any other style is read but not edited.
func (w *walker) valuesString(base Image, vs ref, field string, params map[string]ref, seen map[string]bool) int {
	docs, err := decode([]byte(vs.node.Value))
	if err != nil || len(docs) == 0 || len(docs[0].Content) == 0 {
		if err != nil {
			w.note(vs.node, "%s %s: %s is not YAML, not read: %v", base.Kind, objName(base), field, err)
		}
		return 0
	}
	inner := &walker{file: w.file, base: w.base, referenced: map[*yaml.Node]bool{}}
	collectAliases(docs[0], inner.referenced, 0)
	n := inner.values(base, inner.resolve(docs[0].Content[0], false, nil), field, params, seen)
	fixed := ""
	lineOff, colOff, ok := w.blockOffset(vs.node)
	if !ok {
		fixed = "set in a Helm values string that is not a literal block (|)"
	}
	outer := map[*yaml.Node]bool{}
	for _, v := range params {
		outer[v.node] = true
	}
	for _, s := range inner.sites {
		switch {
		case outer[s.Value]: // a parameter's own node, in this file
		case ok:
			moved := *s.Value
			moved.Line, moved.Column = s.Value.Line+lineOff, s.Value.Column+colOff
			s.Value, s.Line, s.Column = &moved, moved.Line, moved.Column
			s.PullPolicy = nil
		default:
			s.Line, s.Column, s.Fixed = vs.node.Line, vs.node.Column, fixed
		}
		s.Alias = s.Alias || vs.alias
		w.sites = append(w.sites, s)
	}
	for _, e := range inner.notes {
		if n, isNote := e.(*Notice); isNote {
			if n.Line += lineOff; !ok {
				n.Line = vs.node.Line
			}
		}
	}
	w.notes = append(w.notes, inner.notes...)
	return n
}

// blockOffset is how a literal block scalar's own lines and columns map
// to the file's: line L of its text is line L+lineOff of the file.
func (w *walker) blockOffset(n *yaml.Node) (lineOff, colOff int, ok bool) {
	lines := w.fileLines()
	if n.Style&yaml.LiteralStyle == 0 || n.Line >= len(lines) {
		return 0, 0, false
	}
	for l := n.Line; l < len(lines); l++ { // lines[l] is line l+1
		text := lines[l]
		if strings.TrimSpace(text) == "" {
			continue
		}
		indent := len(text) - len(strings.TrimLeft(text, " "))
		return n.Line, indent, indent > 0
	}
	return 0, 0, false
}

// imageKeys are the keys of an image mapping in Helm values.
var imageKeys = []string{"registry", "repository", "tag", "digest"}

// values reads the images Helm values set by the common chart
// conventions: image: "ref", or image: {registry, repository, tag,
// digest}, at any depth (controller.image, sidecars[0].image), with
// Argo CD's helm.parameters (image.tag) over the values; the number read.
func (w *walker) values(base Image, vals ref, field string, params map[string]ref, seen ...map[string]bool) int {
	done := map[string]bool{}
	if len(seen) > 0 {
		done = seen[0]
	}
	n := 0
	budget := maxSearch
	read := func(p string, img ref) {
		if !done[p] && w.valuesImage(base, img, p, field, params) {
			done[p] = true
			n++
		}
	}
	w.valuesAt(base, vals, "", 0, &budget, read)
	for _, p := range paramImages(params) {
		read(p, ref{})
	}
	return n
}

// valuesAt calls found with the path of every image: key under m.
func (w *walker) valuesAt(base Image, m ref, at string, depth int, budget *int, found func(string, ref)) {
	if m.node == nil || depth > maxSearchDepth || *budget <= 0 {
		return
	}
	*budget--
	switch m.node.Kind {
	case yaml.MappingNode:
		c := m.node.Content
		for i := 0; i+1 < len(c); i += 2 {
			k := c[i].Value
			v := w.resolve(c[i+1], m.alias, m.pos)
			p := join(at, k)
			if k == "image" && (isValue(v.node) || v.node.Kind == yaml.MappingNode) {
				found(p, v)
				continue
			}
			w.valuesAt(base, v, p, depth+1, budget, found)
		}
	case yaml.SequenceNode:
		for i, e := range m.node.Content {
			w.valuesAt(base, w.resolve(e, m.alias, m.pos), fmt.Sprintf("%s[%d]", at, i), depth+1, budget, found)
		}
	}
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// paramImages are the image paths helm.parameters set on their own.
func paramImages(params map[string]ref) []string {
	var out []string
	for name := range params {
		if name == "image" || strings.HasSuffix(name, ".image") {
			out = append(out, name)
			continue
		}
		for _, k := range imageKeys {
			if p, ok := strings.CutSuffix(name, ".image."+k); ok {
				out = append(out, p+".image")
			} else if name == "image."+k {
				out = append(out, "image")
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// valuesImage adds the image at values path p (img its node, or none
// when only parameters set it), reporting whether one was read.
func (w *walker) valuesImage(base Image, img ref, p, field string, params map[string]ref) bool {
	if v, ok := params[p]; ok {
		img = v
	}
	if img.node != nil && isValue(img.node) {
		s := w.site(base, img)
		s.Field, s.Container = field, p
		w.sites = append(w.sites, s)
		return true
	}
	parts := map[string]ref{}
	for _, k := range imageKeys {
		if v, ok := params[p+"."+k]; ok {
			parts[k] = v
		} else if v, ok := w.get(img, k); ok && isValue(v.node) {
			parts[k] = v
		}
		// An empty registry, tag or digest is absent, as a chart's
		// template treats it ({{ with .Values.image.digest }}@{{ . }}).
		if v, ok := parts[k]; ok && v.node.Value == "" {
			delete(parts, k)
		}
	}
	repo, ok := parts["repository"]
	if !ok {
		return false
	}
	r := repo.node.Value
	if reg, ok := parts["registry"]; ok {
		r = strings.TrimSuffix(reg.node.Value, "/") + "/" + r
	}
	at, part := parts["tag"], PartTag
	if tag, ok := parts["tag"]; ok {
		r += ":" + tag.node.Value
	}
	if d, ok := parts["digest"]; ok {
		r += "@" + d.node.Value
		if _, ok := parts["tag"]; !ok {
			at, part = d, PartDigest
		}
	}
	if at.node == nil {
		w.note(repo.node, "%s %s: %s.%s.repository has no tag: the chart's default (its appVersion) is not known; not read", base.Kind, objName(base), field, p)
		return false
	}
	s := w.site(base, at)
	s.Ref, s.Part, s.Field, s.Container = r, part, field, p
	for _, v := range parts {
		s.Alias = s.Alias || v.alias
	}
	w.sites = append(w.sites, s)
	return true
}

// fileLines are the file's lines (lines[0] is line 1), split when first
// asked for: only a GitOps object's values need them.
func (w *walker) fileLines() []string {
	if w.lines == nil && w.data != nil {
		w.lines = strings.Split(string(w.data), "\n")
	}
	return w.lines
}

// ValuesImages reads the images a chart's values file sets by the
// common chart conventions (see values): for a chart that cannot be
// rendered. Each image is of kind "Chart", named chart, with Field
// "values" and Container the values path; at the line of the key that
// ends its reference (the tag, else the digest, else the image).
func ValuesImages(file, chart string, data []byte) ([]Image, []error) {
	docs, err := decode(data)
	if err != nil {
		return nil, []error{parseErrorAt(file, data, err)}
	}
	w := &walker{file: file, base: filepath.Base(file), referenced: map[*yaml.Node]bool{}, data: data}
	for _, d := range docs {
		collectAliases(d, w.referenced, 0)
	}
	base := Image{File: file, Kind: "Chart", Name: chart}
	for _, d := range docs {
		if d.Kind == yaml.DocumentNode && len(d.Content) == 1 {
			w.values(base, w.resolve(d.Content[0], false, nil), "values", nil)
		}
	}
	imgs := make([]Image, len(w.sites))
	for i, s := range w.sites {
		imgs[i] = s.Image
	}
	return imgs, w.notes
}

// releaseSource reads where a HelmRelease's chart and values come from:
// spec.chart.spec (chart, version, sourceRef) or spec.chartRef, and
// spec.valuesFrom.
func (w *walker) releaseSource(spec ref, cs *ChartSource) {
	objRef := func(m ref, ns string) ObjectRef {
		r := ObjectRef{Kind: w.str(m, "kind"), Name: w.str(m, "name"), Namespace: w.str(m, "namespace"), Line: m.node.Line}
		if r.Namespace == "" {
			r.Namespace = ns
		}
		return r
	}
	if c, ok := w.get(w.getOr(w.getOr(spec, "chart"), "spec"), "sourceRef"); ok {
		cspec := w.getOr(w.getOr(spec, "chart"), "spec")
		cs.Chart, cs.Version, cs.Source = w.str(cspec, "chart"), w.str(cspec, "version"), objRef(c, cs.Namespace)
	} else if c, ok := w.get(spec, "chartRef"); ok {
		cs.Source = objRef(c, cs.Namespace)
	}
	if vf, ok := w.get(spec, "valuesFrom"); ok && vf.node.Kind == yaml.SequenceNode {
		for _, e := range vf.node.Content {
			m := w.resolve(e, vf.alias, vf.pos)
			v := ValuesRef{ObjectRef: objRef(m, cs.Namespace), Key: w.str(m, "valuesKey"), Optional: w.str(m, "optional") == "true"}
			if v.Key == "" {
				v.Key = "values.yaml"
			}
			if w.str(m, "targetPath") != "" {
				v.Key = "" // a value set at a path, not a values file: not read
			}
			cs.ValuesFrom = append(cs.ValuesFrom, v)
		}
	}
}
