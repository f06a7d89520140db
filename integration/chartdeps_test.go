//go:build integration

package integration

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/getter"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/render"
	"github.com/regcheck/regcheck/yamlfile"
)

// chartDepsRig is testdata/chartdeps served as Helm serves charts: the
// library chart common pushed to distribution 3.x as an OCI chart, the
// chart metrics in an HTTP chart repository (index.yaml and package) on
// loopback, and app (depending on both, on metrics twice, once under an
// alias whose condition is false, and on local by file://) in a tree
// with local beside it.
type chartDepsRig struct {
	root     string // the tree: app/ and local/
	src      string // testdata/chartdeps with the hosts filled in
	repl     *strings.Replacer
	host     string // the registry
	settings *cli.EnvSettings
	// appTemplate is the digest of app-template 4.2.0's manifest, pushed
	// to charts/app-template and served by the HTTP repository too.
	appTemplate string
}

func newChartDepsRig(t *testing.T) *chartDepsRig {
	t.Helper()
	reg := startEmpty(t, registry.V3)
	host := reg.Host()
	repoDir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(repoDir)))
	t.Cleanup(srv.Close)
	repl := strings.NewReplacer("oci://127.0.0.1:5055/", "oci://"+host+"/", "127.0.0.1:5055", host, "http://127.0.0.1:5056", srv.URL)
	src := t.TempDir()
	copyTree(t, "testdata/chartdeps", src, repl)

	helm := t.TempDir()
	r := &chartDepsRig{root: t.TempDir(), host: host, settings: cli.New()}
	r.settings.RepositoryConfig = filepath.Join(helm, "repositories.yaml")
	r.settings.RepositoryCache = filepath.Join(helm, "cache")
	r.settings.RegistryConfig = filepath.Join(helm, "registry.json")

	// common: packaged with chartutil.Save, pushed with Helm's client.
	pkg := saveChart(t, filepath.Join(src, "common"), t.TempDir())
	data, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	rc := r.registryClient(t)
	if _, err := rc.Push(data, host+"/charts/common:1.0.0"); err != nil {
		t.Fatalf("pushing common: %v", err)
	}
	// local: pushed too, for a HelmRelease whose HelmRepository is OCI.
	data, err = os.ReadFile(saveChart(t, filepath.Join(src, "local"), t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Push(data, host+"/charts/local:0.1.0"); err != nil {
		t.Fatalf("pushing local: %v", err)
	}
	// app-template: pushed as Helm pushes a chart, and in the HTTP
	// repository, for Flux's three ways to a chart.
	data, err = os.ReadFile(saveChart(t, filepath.Join(src, "app-template"), repoDir))
	if err != nil {
		t.Fatal(err)
	}
	res, err := rc.Push(data, host+"/charts/app-template:4.2.0")
	if err != nil {
		t.Fatalf("pushing app-template: %v", err)
	}
	r.appTemplate = res.Manifest.Digest
	r.src, r.repl = src, repl
	// metrics: packaged into the HTTP repository, with its index.
	saveChart(t, filepath.Join(src, "metrics"), repoDir)
	idx, err := repo.IndexDirectory(repoDir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(repoDir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"app", "local"} {
		copyTree(t, filepath.Join(src, d), filepath.Join(r.root, d), strings.NewReplacer())
	}
	return r
}

func (r *chartDepsRig) registryClient(t *testing.T) *helmregistry.Client {
	t.Helper()
	rc, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard),
		helmregistry.ClientOptCredentialsFile(r.settings.RegistryConfig))
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// copyTree copies folder from into to, each file's text through repl.
func copyTree(t *testing.T, from, to string, repl *strings.Replacer) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		out := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(repl.Replace(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// saveChart packages the chart in folder dir into folder out.
func saveChart(t *testing.T, dir, out string) string {
	t.Helper()
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := chartutil.Save(c, out)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// helmImages is the oracle: app copied with local beside it, its
// dependencies fetched by Helm's downloader.Manager as helm dependency
// build does (no Chart.lock: an update, whose Chart.lock is then put in
// the tree), rendered by Helm's engine as helm template does; the image
// of each container rendered, sorted.
func (r *chartDepsRig) helmImages(t *testing.T) []string {
	t.Helper()
	work := t.TempDir()
	copyTree(t, r.root, work, strings.NewReplacer())
	m := &downloader.Manager{Out: io.Discard, ChartPath: filepath.Join(work, "app"), Getters: getter.All(r.settings),
		RegistryClient: r.registryClient(t), RepositoryConfig: r.settings.RepositoryConfig, RepositoryCache: r.settings.RepositoryCache,
		ContentCache: t.TempDir()}
	if err := m.Build(); err != nil {
		t.Fatalf("helm dependency build: %v", err)
	}
	// The Chart.lock Helm wrote pins the versions regcheck fetches.
	lock, err := os.ReadFile(filepath.Join(work, "app", "Chart.lock"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(r.root, "app"), "Chart.lock", string(lock))
	c, err := loader.Load(filepath.Join(work, "app"))
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependencies(c, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	vals, err := util.ToRenderValues(c, map[string]any{}, common.ReleaseOptions{Name: "app", Namespace: "default", IsInstall: true}, common.DefaultCapabilities.Copy())
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Engine{}.RenderWithContext(context.Background(), c, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		imgs, err := yamlfile.Parse(name, []byte(files[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, img := range imgs {
			out = append(out, img.Ref)
		}
	}
	slices.Sort(out)
	return out
}

// appUses are the uses of the chart app in t.
func appUses(t *render.Tree) []render.Use {
	for _, a := range t.Apps {
		if filepath.Base(a.Dir) == "app" {
			return a.Uses
		}
	}
	return nil
}

// lineIn is the line of the first occurrence of s in file.
func lineIn(t *testing.T, file, s string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(s))
	if i < 0 {
		t.Fatalf("%s: no %q", file, s)
	}
	return bytes.Count(b[:i], []byte("\n")) + 1
}

// TestChartDependenciesFetched: app's dependencies, none vendored, are
// fetched as helm dependency build fetches them (OCI from distribution
// 3.x over plain HTTP, HTTP from a chart repository, file:// from the
// tree); the images regcheck renders for app are those Helm's engine
// renders after Helm's downloader built them: the condition and the
// alias honoured, the library's helper used. Each image is at the values
// key that ends it. With no fetch (--offline), the notice names each
// remote dependency, and app's own image is still read (by the
// conventions, its template needing the library), never a lost chart.
func TestChartDependenciesFetched(t *testing.T) {
	r := newChartDepsRig(t)
	want := r.helmImages(t)
	if len(want) != 3 {
		t.Fatalf("helm renders %v: want 3 images (web, the exporter, the agent)", want)
	}
	cache := t.TempDir()
	tree := render.Find(r.root, render.WithFetch(render.Fetch{Dir: cache, Helm: r.settings, Insecure: []string{r.host}}))
	for _, e := range tree.Errs {
		t.Errorf("problem: %v", e)
	}
	var got []string
	values := filepath.Join(r.root, "app", "values.yaml")
	wantAt := map[string]string{ // image → text of the key that ends it
		r.host + "/charts/web:1.0":      `tag: "1.0"`,
		r.host + "/charts/exporter:1.1": `tag: "1.1"`,
		r.host + "/charts/agent:2.0":    `tag: "2.0"`,
	}
	for _, u := range appUses(tree) {
		got = append(got, u.Ref)
		at, ok := wantAt[u.Ref]
		if !ok {
			continue
		}
		if line := lineIn(t, values, at); u.File != values || u.Line != line {
			t.Errorf("%s at %s:%d, want %s:%d (%s)", u.Ref, u.File, u.Line, values, line, at)
		}
	}
	slices.Sort(got)
	t.Logf("regcheck %v\nhelm     %v", got, want)
	if !slices.Equal(got, want) {
		t.Errorf("regcheck renders %v\nhelm renders     %v", got, want)
	}
	if entries, err := os.ReadDir(filepath.Join(cache, "deps")); err != nil || len(entries) != 2 {
		t.Errorf("cache %s/deps: %d folders (%v), want one for each remote chart (common; metrics, for itself and its alias)", cache, len(entries), err)
	}

	// Offline: nothing fetched, each remote dependency named.
	offline := render.Find(r.root)
	var notices []string
	for _, e := range offline.Errs {
		notices = append(notices, e.Error())
	}
	for _, dep := range []string{"dependency common (oci://", "dependency metrics (http://", "not rendered without its dependencies common, metrics"} {
		if !slices.ContainsFunc(notices, func(n string) bool { return strings.Contains(n, dep) }) {
			t.Errorf("offline: no notice %q in %q", dep, notices)
		}
	}
	uses := appUses(offline)
	if len(uses) != 1 || uses[0].Ref != r.host+"/charts/web:1.0" || uses[0].Line != lineIn(t, values, `tag: "1.0"`) {
		t.Errorf("offline uses %+v: want app's own image, read from its values at its tag", uses)
	}
	if code, out, errs := runCLI(t, "scan", "--offline", "--fail-on", "never", "-f", filepath.Join(r.root, "app")); code != 0 && code != 3 || !strings.Contains(out+errs, "not fetched: offline") {
		t.Errorf("scan --offline: exit %d, want the notice\n%s%s", code, out, errs)
	}
}
