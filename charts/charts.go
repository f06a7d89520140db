package charts

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// Name is the chart's name and its folder beside this file.
const Name = "regcheck"

// files is the chart: every file under regcheck/.
//
//go:embed all:regcheck
var files embed.FS

// Release is what helm install takes besides values: the release's name
// and namespace (-n).
type Release struct{ Name, Namespace string }

// Rendered is one render of the chart: each template's output by its path
// in the chart (templates/rbac.yaml), without those that render nothing.
type Rendered map[string]string

// File returns the chart's file name (slash-separated, from the chart's
// folder), as the chart holds it.
func File(name string) ([]byte, error) {
	return files.ReadFile(path.Join(Name, name))
}

// Load loads the chart from its files, as helm does from its folder.
func Load() (*chart.Chart, error) {
	var bufs []*archive.BufferedFile
	err := fs.WalkDir(files, Name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		bufs = append(bufs, &archive.BufferedFile{Name: strings.TrimPrefix(p, Name+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading chart %s: %w", Name, err)
	}
	c, err := loader.LoadFiles(bufs)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", Name, err)
	}
	return c, nil
}

// Render renders the chart as rel with values over values.yaml (as helm
// install --set and -f give them), after checking them against
// values.schema.json, offline: no cluster is asked (lookup finds nothing)
// and the capabilities are Helm's defaults.
func Render(ctx context.Context, rel Release, values map[string]any) (Rendered, error) {
	c, err := Load()
	if err != nil {
		return nil, err
	}
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(c, values); err != nil {
		return nil, err
	}
	opts := common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}
	vals, err := util.ToRenderValuesWithSchemaValidation(c, values, opts, common.DefaultCapabilities.Copy(), false)
	if err != nil {
		return nil, fmt.Errorf("values of chart %s: %w", Name, err)
	}
	out, err := engine.Engine{}.RenderWithContext(ctx, c, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", Name, err)
	}
	r := Rendered{}
	for name, content := range out {
		name = strings.TrimPrefix(name, Name+"/")
		if strings.TrimSpace(content) == "" || path.Base(name) == "NOTES.txt" {
			continue
		}
		r[name] = content
	}
	return r, nil
}

// Templates are the paths of the templates that rendered something, sorted.
func (r Rendered) Templates() []string { return slices.Sorted(maps.Keys(r)) }

// Manifest is every object of the render as multi-document YAML, in the
// order helm install creates them (Namespace, ServiceAccount, roles and
// bindings, ConfigMaps, Service, workloads, then custom resources), each
// after a "# Source:" line naming its template.
func (r Rendered) Manifest() ([]byte, error) {
	_, manifests, err := releaseutil.SortManifests(r, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("sorting the objects of chart %s: %w", Name, err)
	}
	var b bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s/%s\n%s\n", Name, m.Name, strings.TrimSpace(m.Content))
	}
	return b.Bytes(), nil
}
