package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/yamlfile"
)

// object is a Kubernetes object of the tree's files: a Flux source, a
// ConfigMap a HelmRelease reads its values from.
type object struct {
	file           string // as shown
	data           []byte // the file
	kind, name, ns string
	node           *yaml.Node // its mapping
}

// objects are the objects of files (as shown) of the kinds named.
func (t *Tree) objects(o *options, files []string, kinds ...string) []object {
	var out []object
	for _, f := range files {
		data, err := o.read(f)
		if err != nil || !slices.ContainsFunc(kinds, func(k string) bool { return bytes.Contains(data, []byte(k)) }) {
			continue
		}
		docs, err := yamlfile.Documents(data)
		if err != nil {
			continue
		}
		for _, d := range docs {
			if d.Kind != yaml.DocumentNode || len(d.Content) != 1 || d.Content[0].Kind != yaml.MappingNode {
				continue
			}
			m := d.Content[0]
			kind := scalar(m, "kind")
			if !slices.Contains(kinds, kind) {
				continue
			}
			meta := child(m, "metadata")
			out = append(out, object{file: f, data: data, kind: kind, name: scalar(meta, "name"), ns: scalar(meta, "namespace"), node: m})
		}
	}
	return out
}

// child is the value of key in mapping m, or nil.
func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalar is the scalar value of key in mapping m, or "".
func scalar(m *yaml.Node, key string) string {
	if v := child(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// findObject is the object of kind named ref's name, in ref's namespace when
// one of that namespace is in the tree (a kustomization may set it).
func findObject(objs []object, kind string, ref yamlfile.ObjectRef) *object {
	var found *object
	for i, ob := range objs {
		if ob.kind != kind || ob.name != ref.Name {
			continue
		}
		if ob.ns == ref.Namespace {
			return &objs[i]
		}
		if found == nil {
			found = &objs[i]
		}
	}
	return found
}

// chartRef is the chart a HelmRelease's source object names, as a
// dependency Helm's downloader fetches: a HelmRepository's URL (HTTP, or
// type: oci) and the release's chart and version. "" why when it names
// one; else why not. An OCIRepository is fetched by fetcher.oci.
func chartRef(cs yamlfile.ChartSource, objs []object) (*chart.Dependency, string) {
	if cs.Kind == "Application" {
		return appChartRef(cs)
	}
	switch cs.Source.Kind {
	case "HelmRepository":
		ob := findObject(objs, "HelmRepository", cs.Source)
		if ob == nil {
			return nil, fmt.Sprintf("its HelmRepository %s is not in this tree", cs.Source.Name)
		}
		spec := child(ob.node, "spec")
		url := scalar(spec, "url")
		if url == "" {
			return nil, fmt.Sprintf("HelmRepository %s (%s) has no spec.url", cs.Source.Name, ob.file)
		}
		return &chart.Dependency{Name: cs.Chart, Version: cmpOr(cs.Version, "*"), Repository: url}, ""
	case "OCIRepository":
		return nil, "an OCIRepository is fetched as Flux pulls it (see fetcher.oci)"
	case "":
		return nil, "it names no chart source"
	}
	return nil, fmt.Sprintf("its source %s %s is not read (a chart's folder in a Git repository or bucket is read only when it is in this tree)", cs.Source.Kind, cs.Source.Name)
}

// appChartRef is the chart an Argo CD Application's source names: its
// chart, targetRevision (a version or a range) and repoURL, an HTTP chart
// repository (http:// or https://) or an OCI registry (oci://, or with no
// scheme, as Argo CD writes an OCI Helm repository).
func appChartRef(cs yamlfile.ChartSource) (*chart.Dependency, string) {
	repo := strings.TrimSuffix(cs.Repository, "/")
	switch {
	case repo == "":
		return nil, "its source names no repoURL"
	case strings.HasPrefix(repo, "http://"), strings.HasPrefix(repo, "https://"), strings.HasPrefix(repo, "oci://"):
	case strings.Contains(repo, "://"):
		return nil, fmt.Sprintf("its repoURL %s is not a Helm chart repository (http://, https:// or oci://)", repo)
	default:
		repo = "oci://" + repo
	}
	return &chart.Dependency{Name: cs.Chart, Version: cmpOr(cs.Version, "*"), Repository: repo}, ""
}

// remoteChart fetches the chart cs's source names and unpacks it into a
// folder of the fetch cache, giving that folder; "" and a notice when it
// cannot.
func (t *Tree) remoteChart(o *options, cs yamlfile.ChartSource, objs []object) string {
	notice := func(format string, args ...any) string {
		t.unrendered(cs, fmt.Sprintf(format, args...))
		return ""
	}
	var data []byte
	var name, url string
	if cs.Kind == "HelmRelease" && cs.Source.Kind == "OCIRepository" {
		ob := findObject(objs, "OCIRepository", cs.Source)
		if ob == nil {
			return notice("its OCIRepository %s is not in this tree", cs.Source.Name)
		}
		src, err := ociSourceOf(ob)
		if err != nil {
			return notice("%v", err)
		}
		name, url = path.Base(src.url), src.url
		if o.fetch == nil {
			return notice("%s %v", url, errOffline)
		}
		if data, err = o.fetch.oci(src); err != nil {
			return notice("%s not fetched: %s", url, cause(err))
		}
	} else {
		dep, why := chartRef(cs, objs)
		if dep == nil {
			return notice("%s", why)
		}
		name, url = dep.Name, dep.Repository
		if o.fetch == nil {
			return notice("%s from %s %v", name, url, errOffline)
		}
		var err error
		if data, _, err = o.fetch.get(dep, ""); err != nil {
			return notice("%s from %s not fetched: %s", name, url, cause(err))
		}
	}
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return notice("%s: %v", name, err)
	}
	sum := sha256.Sum256(data)
	dir := filepath.Join(o.fetch.Dir, "charts", hex.EncodeToString(sum[:8]))
	if err := chartutil.SaveDir(c, dir); err != nil {
		return notice("unpacking %s: %v", name, err)
	}
	return filepath.Join(dir, c.Name())
}

// valuesFrom are the values documents of cs's spec.valuesFrom found in
// the tree's ConfigMaps, each laid out on its lines in its file, and
// whether every one was found.
func (t *Tree) valuesFrom(cs yamlfile.ChartSource, objs []object) ([]source, bool) {
	var out []source
	all := true
	for _, v := range cs.ValuesFrom {
		ob := findObject(objs, "ConfigMap", v.ObjectRef)
		if v.Kind != "ConfigMap" || v.Key == "" || ob == nil {
			all = all && v.Optional && ob == nil && v.Kind == "ConfigMap"
			continue
		}
		val := child(child(ob.node, "data"), v.Key)
		if val == nil || val.Kind != yaml.ScalarNode {
			all = all && v.Optional
			continue
		}
		if val.Style&yaml.LiteralStyle == 0 {
			out = append(out, source{file: ob.file, data: []byte(val.Value),
				why: fmt.Sprintf("set in ConfigMap %s's %s, not a literal block (key: |): pin it by hand", ob.name, v.Key)})
		} else {
			out = append(out, t.block(ob.file, laidOutBlock(ob.data, val)))
		}
		if abs, err := filepath.Abs(ob.file); err == nil {
			t.files[abs] = ob.data
		}
	}
	return out, all
}

// laidOutBlock is the text of scalar v, a literal block (key: |), on the
// lines and at the columns it has in data: blank lines before it, each
// line indented as in the file. Another style is given as its value.
func laidOutBlock(data []byte, v *yaml.Node) []byte {
	if v.Style&yaml.LiteralStyle == 0 {
		return []byte(v.Value)
	}
	lines := strings.Split(string(data), "\n")
	indent := ""
	if v.Line < len(lines) {
		l := lines[v.Line] // the block's first line (v.Line is its key's, 1-based)
		indent = l[:len(l)-len(strings.TrimLeft(l, " "))]
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("\n", v.Line))
	for _, l := range strings.Split(strings.TrimSuffix(v.Value, "\n"), "\n") {
		if l != "" {
			b.WriteString(indent)
		}
		b.WriteString(l + "\n")
	}
	return []byte(b.String())
}

// unrendered says why the chart of cs is not rendered: in the notice
// that reading cs's file gives (see Images).
func (t *Tree) unrendered(cs yamlfile.ChartSource, why string) {
	if t.why == nil {
		t.why = map[string]string{}
	}
	t.why[cs.Notice.Error()] = redact.String(why)
}

// withWhy adds to each notice that a chart was not rendered why it was
// not, when t knows.
func (t *Tree) withWhy(notes []error) {
	for _, err := range notes {
		if n, ok := err.(*yamlfile.Notice); ok && t.why[n.Error()] != "" {
			n.Msg += "; " + t.why[n.Error()]
		}
	}
}

// helmNoIndex is Helm's error for a repository whose index it has not
// fetched: its cache's file names, and advice (helm repo update) that is
// wrong for an OCI source and not what to run for regcheck.
var helmNoIndex = regexp.MustCompile(`no cached repository for \S+ found\. \(try 'helm repo update'\): open \S+: no such file or directory`)

// cause is what a notice says of a fetch that failed: the network
// error at its root when there is one (connection refused, no such
// host), else err without Helm's cache file names.
func cause(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "dial tcp "); i >= 0 {
		s = strings.TrimRight(s[i:], ")")
		return s[strings.LastIndex(s, ": ")+2:] // the URL names the host
	}
	return helmNoIndex.ReplaceAllString(s, "the repository's index.yaml was not fetched")
}
