package render

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/cli"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// gitopsChart is a chart whose template builds its image from
// image.repository and image.tag, as most charts do.
var gitopsChart = map[string]string{
	"charts/app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
	"charts/app/values.yaml": "image:\n  repository: registry.example.com/app\n  tag: \"1.0\"\n",
	"charts/app/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n" +
		"        - name: app\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
}

func TestGitOpsRenderedInTree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		file    string
		want    []string // image uses, "file:line ref"
		notices []string // substrings of the problems
	}{
		{"HelmRelease of a chart in the tree", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: prod}\nspec:\n" +
			"  chart:\n    spec:\n      chart: ./charts/app\n      sourceRef: {kind: GitRepository, name: repo}\n" +
			"  values:\n    image:\n      tag: \"2.0\"\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:11 registry.example.com/app:2.0"}, nil},
		{"Application of a chart in the tree, values string and object", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app, namespace: argocd}\nspec:\n" +
			"  source:\n    repoURL: https://git.example.com/repo.git\n    path: charts/app\n    helm:\n      values: |\n        image:\n          tag: \"3.0\"\n" +
			"      valuesObject:\n        image:\n          repository: registry.example.com/other\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:11 registry.example.com/other:3.0"}, nil},
		{"Application with helm.parameters over its values", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app, namespace: argocd}\nspec:\n" +
			"  source:\n    repoURL: https://git.example.com/repo.git\n    path: charts/app\n    helm:\n      valuesObject:\n        image:\n          tag: \"3.0\"\n" +
			"      parameters:\n      - name: image.tag\n        value: \"3.1\"\n      - name: sidecars[0].image\n        value: x\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:14 registry.example.com/app:3.1"},
			[]string{"helm.parameters sidecars[0].image not applied to the chart rendered"}},
		{"HelmRelease of a chart from a Helm repository: read by the conventions", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: prod}\nspec:\n" +
			"  chart:\n    spec:\n      chart: app\n      sourceRef: {kind: HelmRepository, name: charts}\n" +
			"  values:\n    image:\n      repository: registry.example.com/app\n      tag: \"2.0\"\n",
			[]string{"charts/app/values.yaml:3 registry.example.com/app:1.0", "clusters/prod/release.yaml:12 registry.example.com/app:2.0"},
			[]string{"chart app not rendered; 1 image(s) read from spec.values"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"clusters/prod/release.yaml": tc.file}
			for k, v := range gitopsChart {
				files[k] = v
			}
			root := writeTree(t, files)
			imgs, errs := Images(root)
			var got, msgs []string
			for _, img := range imgs {
				rel, _ := filepath.Rel(root, img.File)
				got = append(got, fmt.Sprintf("%s:%d %s", filepath.ToSlash(rel), img.Line, img.Ref))
			}
			slices.Sort(got)
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("images:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(msgs) != len(tc.notices) {
				t.Errorf("problems: %q, want %d containing %q", msgs, len(tc.notices), tc.notices)
			}
			for i, n := range tc.notices {
				if i < len(msgs) && !strings.Contains(msgs[i], n) {
					t.Errorf("problem %q does not say %q", msgs[i], n)
				}
			}
		})
	}
}

// kustomizeApp is a kustomization whose own images entry sets the web
// image's tag, over a Deployment with a web and a proxy container.
var kustomizeApp = map[string]string{
	"apps/web/base/kustomization.yaml": "resources:\n- deploy.yaml\nimages:\n- name: registry.example.com/web\n  newTag: \"1.0\"\n",
	"apps/web/base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n" +
		"      - name: app\n        image: registry.example.com/web:0.9\n      - name: proxy\n        image: registry.example.com/proxy:2.0\n",
	"apps/plain/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: plain\nspec:\n  template:\n    spec:\n      containers:\n" +
		"      - name: app\n        image: registry.example.com/plain:1.0\n",
}

// application is an Argo CD Application of path with these
// kustomize.images, in spec.source or spec.sources[0]; its first entry is
// at line 10.
func application(path string, multi bool, images ...string) string {
	src := "  source:\n    repoURL: https://git.example.com/repo.git\n"
	if multi {
		src = "  sources:\n  - repoURL: https://git.example.com/repo.git\n"
	}
	s := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n" + src +
		"    path: " + path + "\n    kustomize:\n      images:\n"
	for _, img := range images {
		s += "      - " + img + "\n"
	}
	return s
}

// An Application whose path is a kustomization of the tree is rendered
// with its kustomize.images applied after the kustomization's own
// entries; each image one of them sets is at that entry's line. A path
// of plain manifests is read as files, and the entries as written, with
// the notice.
func TestGitOpsKustomizeInTree(t *testing.T) {
	t.Parallel()
	// The tree renders the kustomization as it is, too.
	base := []string{
		"apps/plain/deploy.yaml:10 Deployment/plain registry.example.com/plain:1.0",
		"apps/web/base/deploy.yaml:12 Deployment/web registry.example.com/proxy:2.0",
		"apps/web/base/kustomization.yaml:4 Deployment/web registry.example.com/web:1.0",
	}
	for _, tc := range []struct {
		name    string
		file    string
		want    []string // beside base: image uses, "file:line kind/name ref"
		notices []string // substrings of the problems
	}{
		{"a tag and a rename", application("apps/web/base", false, "registry.example.com/web:3.0", "registry.example.com/proxy=mirror.example.com/proxy:2.1"),
			[]string{
				"clusters/prod/app.yaml:10 Deployment/web registry.example.com/web:3.0",
				"clusters/prod/app.yaml:11 Deployment/web mirror.example.com/proxy:2.1",
			}, nil},
		{"spec.sources and a digest", application("apps/web/base", true, "registry.example.com/proxy@sha256:"+strings.Repeat("a", 64)),
			[]string{"clusters/prod/app.yaml:10 Deployment/web registry.example.com/proxy@sha256:" + strings.Repeat("a", 64)}, nil},
		{"an entry that matches nothing", application("apps/web/base", false, "registry.example.com/other:9"), nil, nil},
		{"no entries", application("apps/web/base", false), nil, nil},
		{"a path of plain manifests", application("apps/plain", false, "registry.example.com/plain:2.0"),
			[]string{"clusters/prod/app.yaml:10 Application/web registry.example.com/plain:2.0"},
			[]string{"spec.source (https://git.example.com/repo.git apps/plain) not rendered; 1 image(s) read from kustomize.images"}},
		{"a path not in the tree", application("apps/elsewhere", false, "registry.example.com/web:3.0"),
			[]string{"clusters/prod/app.yaml:10 Application/web registry.example.com/web:3.0"},
			[]string{"not rendered; 1 image(s) read from kustomize.images"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"clusters/prod/app.yaml": tc.file}
			for k, v := range kustomizeApp {
				files[k] = v
			}
			root := writeTree(t, files)
			imgs, errs := Images(root)
			var got, msgs []string
			for _, img := range imgs {
				rel, _ := filepath.Rel(root, img.File)
				got = append(got, fmt.Sprintf("%s:%d %s/%s %s", filepath.ToSlash(rel), img.Line, img.Kind, img.Name, img.Ref))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(append(slices.Clone(base), tc.want...)))
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			if !slices.Equal(got, want) {
				t.Errorf("images:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if len(msgs) != len(tc.notices) {
				t.Errorf("problems: %q, want %d containing %q", msgs, len(tc.notices), tc.notices)
			}
			for i, n := range tc.notices {
				if i < len(msgs) && !strings.Contains(msgs[i], n) {
					t.Errorf("problem %q does not say %q", msgs[i], n)
				}
			}
		})
	}
}

// TestGitOpsApplicationHelmRepository: an Argo CD Application whose
// source is a chart of a Helm repository (repoURL, chart,
// targetRevision; in spec.source or spec.sources[], with values or none)
// has the chart fetched, as a HelmRelease's is, from a chart repository
// on loopback, and rendered with its values: the image its values set is
// at their line, the chart's default one rendered too. Offline, the
// notice names the chart and its repository.
func TestGitOpsApplicationHelmRepository(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	src := writeTree(t, map[string]string{
		"web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.2.0\n",
		"web/values.yaml": "image:\n  repository: reg.example.com/web\n  tag: \"1.0\"\n",
		"web/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n" +
			"        - name: web\n          image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
	})
	c, err := loader.LoadDir(filepath.Join(src, "web"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(c, repoDir); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(repoDir)))
	defer srv.Close()
	idx, err := repo.IndexDirectory(repoDir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(repoDir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	single := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n" +
		"  source:\n    repoURL: " + srv.URL + "\n    chart: web\n    targetRevision: 1.2.0\n    helm:\n      valuesObject:\n        image:\n          tag: \"2.0\"\n"
	multi := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: multi, namespace: argocd}\nspec:\n" +
		"  sources:\n  - repoURL: https://git.example.com/values.git\n    ref: values\n" +
		"  - repoURL: " + srv.URL + "\n    chart: web\n    targetRevision: \"~1.2.0\"\n"
	root := writeTree(t, map[string]string{"apps/web.yaml": single, "apps/multi.yaml": multi})
	helm := t.TempDir()
	settings := cli.New()
	settings.RepositoryConfig = filepath.Join(helm, "repositories.yaml")
	settings.RepositoryCache = filepath.Join(helm, "cache")
	settings.RegistryConfig = filepath.Join(helm, "registry.json")

	imgs, errs := Images(root, WithFetch(Fetch{Dir: t.TempDir(), Helm: settings}))
	var got []string
	for _, img := range imgs {
		at := "(the chart's values)"
		if strings.HasPrefix(img.File, root) {
			rel, _ := filepath.Rel(root, img.File)
			at = fmt.Sprintf("%s:%d", filepath.ToSlash(rel), img.Line)
		}
		got = append(got, at+" "+img.Ref)
	}
	slices.Sort(got)
	want := []string{"(the chart's values) reg.example.com/web:1.0", "apps/web.yaml:12 reg.example.com/web:2.0"}
	if !slices.Equal(got, want) {
		t.Errorf("images %q, want %q", got, want)
	}
	for _, e := range errs {
		t.Errorf("problem: %v", e)
	}

	_, errs = Images(root)
	var notes []string
	for _, e := range errs {
		notes = append(notes, e.Error())
	}
	for _, app := range []string{"Application argocd/web: spec.source", "Application argocd/multi: spec.sources[1]"} {
		if !slices.ContainsFunc(notes, func(n string) bool {
			return strings.Contains(n, app) && strings.Contains(n, "web from "+srv.URL+" not fetched: offline")
		}) {
			t.Errorf("offline: no notice for %s naming web from %s in %q", app, srv.URL, notes)
		}
	}
}

// TestFluxKustomizationPaths: a Flux Kustomization whose manifests are
// not in the tree (a path that leaves it or is not there, a source that
// is another repository) is a notice naming it; one whose path is in the
// tree, of the repository flux bootstrap syncs, is none (its files are
// read where they are).
func TestFluxKustomizationPaths(t *testing.T) {
	t.Parallel()
	ks := func(name, path, kind, src string) string {
		return "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name + ", namespace: flux-system}\nspec:\n" +
			"  interval: 1h\n  path: " + path + "\n  sourceRef: {kind: " + kind + ", name: " + src + "}\n"
	}
	root := writeTree(t, map[string]string{
		"clusters/prod/sync.yaml": ks("apps", "./apps", "GitRepository", "flux-system") + ks("up", "../../outside", "GitRepository", "flux-system") +
			ks("gone", "./infrastructure", "GitRepository", "flux-system") + ks("other", "./apps", "GitRepository", "platform") +
			ks("oci", "./", "OCIRepository", "manifests"),
		"apps/app.yaml": deployment("app", "reg.example.com/app:1"),
	})
	_, errs := Images(root)
	var got []string
	for _, e := range errs {
		got = append(got, strings.TrimPrefix(filepath.ToSlash(e.Error()), filepath.ToSlash(root)+"/"))
	}
	want := []string{
		"clusters/prod/sync.yaml:15: Kustomization flux-system/up: spec.path ../../outside is not in this tree (it leaves it, or is not there): its manifests are not read",
		"clusters/prod/sync.yaml:23: Kustomization flux-system/gone: spec.path ./infrastructure is not in this tree (it leaves it, or is not there): its manifests are not read",
		"clusters/prod/sync.yaml:31: Kustomization flux-system/other: its source GitRepository platform is another repository than this tree (flux-system's): spec.path ./apps is not read (a source outside this tree is not fetched)",
		"clusters/prod/sync.yaml:39: Kustomization flux-system/oci: its source OCIRepository manifests is another repository than this tree (flux-system's): spec.path ./ is not read (a source outside this tree is not fetched)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
