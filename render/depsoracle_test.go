package render

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/regcheck/regcheck/yamlfile"
)

// helmImages is what Helm's engine renders for the chart in folder dir
// with the user values files (merged as helm -f merges them): the images
// of its objects, sorted. Helm's own steps: ProcessDependencies (tags,
// conditions, import-values), ToRenderValues, engine.Render.
func helmImages(t *testing.T, dir string, files ...string) []string {
	t.Helper()
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	user := map[string]any{}
	for _, f := range files {
		v, err := common.ReadValuesFile(f)
		if err != nil {
			t.Fatal(err)
		}
		user = loader.MergeMaps(user, v)
	}
	if err := chartutil.ProcessDependencies(c, user); err != nil {
		t.Fatal(err)
	}
	vals, err := util.ToRenderValues(c, user, common.ReleaseOptions{Name: "r", Namespace: "default", IsInstall: true}, common.DefaultCapabilities.Copy())
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Engine{}.RenderWithContext(context.Background(), c, vals)
	if err != nil {
		t.Fatal(err)
	}
	var imgs []string
	for _, name := range slices.Sorted(maps.Keys(out)) {
		found, err := yamlfile.Parse(name, []byte(out[name]))
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range found {
			imgs = append(imgs, img.Ref)
		}
	}
	slices.Sort(imgs)
	return imgs
}

// pod is a template of a Pod whose container's image is image.
func pod(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n    - name: c\n      image: " + image + "\n"
}

// TestFindHelmTagsImportValues: a chart whose vendored dependencies are
// turned off and on by tags (the parent's tags, a release's values over
// them, a condition winning over a tag) and feed an image value from
// child to parent by import-values (the child/parent form, and the
// exports form): regcheck renders the images Helm's engine renders, and
// an image imported from a child is at the child's values key.
func TestFindHelmTagsImportValues(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n" +
			"- name: metrics\n  version: 0.1.0\n  tags: [monitoring]\n" +
			"- name: logs\n  version: 0.1.0\n  tags: [monitoring, logging]\n  condition: logs.enabled\n" +
			"- name: lib\n  version: 0.1.0\n  import-values:\n  - child: image\n    parent: fromChild\n  - data\n",
		"app/values.yaml":                     "tags:\n  monitoring: false\nimage: reg.example.com/app:1.0\n",
		"app/templates/pod.yaml":              pod("app", "{{ .Values.image }}"),
		"app/templates/from.yaml":             pod("from", `"{{ .Values.fromChild.repository }}:{{ .Values.fromChild.tag }}"`) + "---\n" + pod("exported", `{{ .Values.exported.image }}`),
		"app/charts/metrics/Chart.yaml":       "apiVersion: v2\nname: metrics\nversion: 0.1.0\n",
		"app/charts/metrics/values.yaml":      "image: reg.example.com/metrics:2.0\n",
		"app/charts/metrics/templates/p.yaml": pod("metrics", "{{ .Values.image }}"),
		"app/charts/logs/Chart.yaml":          "apiVersion: v2\nname: logs\nversion: 0.1.0\n",
		"app/charts/logs/values.yaml":         "enabled: true\nimage: reg.example.com/logs:3.0\n",
		"app/charts/logs/templates/p.yaml":    pod("logs", "{{ .Values.image }}"),
		"app/charts/lib/Chart.yaml":           "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
		"app/charts/lib/values.yaml":          "image:\n  repository: reg.example.com/child\n  tag: \"4.1\"\nexports:\n  data:\n    exported:\n      image: reg.example.com/exported:5.0\n",
		"values/monitoring-on.yaml":           "tags:\n  monitoring: true\n",
		"values/logs-off.yaml":                "tags:\n  monitoring: true\nlogs:\n  enabled: false\n",
	})
	chart := filepath.Join(dir, "app")
	for _, tc := range []struct {
		name  string
		files []string
		want  []string // the images, sorted, as the test expects Helm to render them
	}{
		{"tags off", nil, []string{"reg.example.com/app:1.0", "reg.example.com/child:4.1", "reg.example.com/exported:5.0", "reg.example.com/logs:3.0"}},
		{"tags on by a release's values", []string{"values/monitoring-on.yaml"},
			[]string{"reg.example.com/app:1.0", "reg.example.com/child:4.1", "reg.example.com/exported:5.0", "reg.example.com/logs:3.0", "reg.example.com/metrics:2.0"}},
		{"a condition over a tag", []string{"values/logs-off.yaml"},
			[]string{"reg.example.com/app:1.0", "reg.example.com/child:4.1", "reg.example.com/exported:5.0", "reg.example.com/metrics:2.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var files []string
			var vf []ValuesFile
			for _, f := range tc.files {
				files = append(files, filepath.Join(dir, f))
				vf = append(vf, ValuesFile{Chart: chart, File: filepath.Join(dir, f)})
			}
			helm := helmImages(t, chart, files...)
			if !slices.Equal(helm, tc.want) {
				t.Fatalf("helm renders %q, the test expects %q", helm, tc.want)
			}
			tr := Find(chart, WithValues(vf...))
			for _, e := range tr.Errs {
				t.Errorf("problem: %v", e)
			}
			var got []string
			for _, a := range tr.Apps {
				for _, u := range a.Uses {
					got = append(got, u.Ref)
					if u.Ref == "reg.example.com/child:4.1" && (filepath.ToSlash(u.File) != filepath.ToSlash(filepath.Join(chart, "charts/lib/values.yaml")) || u.Line != 3) {
						t.Errorf("%s at %s:%d, want the child's image.tag (charts/lib/values.yaml:3)", u.Ref, u.File, u.Line)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, helm) {
				t.Errorf("regcheck renders %q\nhelm renders     %q", got, helm)
			}
		})
	}
}
