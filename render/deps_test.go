package render

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/cli"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// TestFindHelmDependenciesOffline: with nothing fetched, a file://
// dependency is read from the tree and rendered; a remote one is named in
// a notice; the parent renders without it when its templates can (the
// dependency's values a mapping), else its values are read by the image
// conventions: a chart is never lost whole.
func TestFindHelmDependenciesOffline(t *testing.T) {
	t.Parallel()
	deploy := func(image string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: " + image + "\n"
	}
	chart := func(name, deps string) string {
		return "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\ndependencies:\n" + deps
	}
	remote := "- name: common\n  version: 2.x.x\n  repository: oci://registry.example.com/charts\n"
	tests := []struct {
		name        string
		files       map[string]string
		uses, notes []string
	}{{
		name: "file dependency from the tree",
		files: map[string]string{
			"app/Chart.yaml":            chart("app", "- name: sub\n  version: 0.1.0\n  repository: file://../sub\n"),
			"app/values.yaml":           "sub:\n  tag: \"2\"\n",
			"app/templates/x.yaml":      deploy("reg.example.com/app:1"),
			"sub/Chart.yaml":            chart("sub", ""),
			"sub/values.yaml":           "tag: \"1\"\n",
			"sub/templates/deploy.yaml": deploy(`"reg.example.com/sub:{{ .Values.tag }}"`),
		},
		uses: []string{
			"D/app/values.yaml:2 Deployment /x c reg.example.com/sub:2 values",
			"D/app/templates/x.yaml:10 Deployment /x c reg.example.com/app:1 template",
			"D/sub/values.yaml:1 Deployment /x c reg.example.com/sub:1 values",
		},
	}, {
		// A file:// dependency's use names the file that holds the
		// line, not a charts/ folder the tree does not have.
		name: "file dependency's own values",
		files: map[string]string{
			"app/Chart.yaml":            chart("app", "- name: sub\n  version: 0.1.0\n  repository: file://../libs/sub\n"),
			"libs/sub/Chart.yaml":       chart("sub", ""),
			"libs/sub/values.yaml":      "tag: \"1\"\n",
			"libs/sub/templates/x.yaml": deploy(`"reg.example.com/sub:{{ .Values.tag }}"`) + "---\n" + deploy("reg.example.com/lit:1"),
		},
		uses: []string{
			"D/libs/sub/values.yaml:1 Deployment /x c reg.example.com/sub:1 values",
			"D/libs/sub/templates/x.yaml:21 Deployment /x c reg.example.com/lit:1 template",
			"D/libs/sub/values.yaml:1 Deployment /x c reg.example.com/sub:1 values",
			"D/libs/sub/templates/x.yaml:21 Deployment /x c reg.example.com/lit:1 template",
		},
	}, {
		name: "remote dependency, parent renders without it",
		files: map[string]string{
			"app/Chart.yaml":       chart("app", remote),
			"app/templates/x.yaml": deploy(`"reg.example.com/app:{{ if .Values.common.enabled }}on{{ else }}off{{ end }}"`),
		},
		uses:  []string{"D/app/templates/x.yaml:0 Deployment /x c reg.example.com/app:off template"},
		notes: []string{"notice D/app/Chart.yaml:5: dependency common (oci://registry.example.com/charts) not rendered: not fetched: offline"},
	}, {
		name: "remote dependency whose helper the parent needs",
		files: map[string]string{
			"app/Chart.yaml":       chart("app", remote),
			"app/values.yaml":      "image:\n  registry: reg.example.com\n  repository: app\n  tag: \"3\"\n",
			"app/templates/x.yaml": deploy(`{{ include "common.images.image" (dict "imageRoot" .Values.image) }}`),
		},
		uses: []string{"D/app/values.yaml:4 Chart /app image reg.example.com/app:3 values"},
		notes: []string{
			"notice D/app/Chart.yaml:5: dependency common (oci://registry.example.com/charts) not rendered: not fetched: offline",
			"notice D/app/Chart.yaml: not rendered without its dependencies common",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tc.files)
			tr := Find(dir)
			var got []string
			for _, a := range tr.Apps {
				for _, u := range a.Uses {
					if strings.Contains(a.Dir, "app") || strings.Contains(u.File, "sub") {
						s := strings.SplitN(show(u), " (", 2)[0]
						got = append(got, strings.Join(strings.Fields(s)[:6], " "))
					}
				}
			}
			check(t, "uses", under(dir, got), tc.uses)
			notes := under(dir, errs(tr))
			for i, n := range notes {
				if strings.Contains(n, "not rendered without") {
					notes[i] = n[:strings.Index(n, " (")]
				}
			}
			check(t, "notes", notes, tc.notes)
		})
	}
}

// TestFetchCredentials: a dependency in an HTTP chart repository that
// asks for basic auth is fetched with the credentials Helm's
// repositories file holds for it; with a wrong password the notice says
// the fetch failed and never shows the password.
func TestFetchCredentials(t *testing.T) {
	t.Parallel()
	repoDir := t.TempDir()
	sub := writeTree(t, map[string]string{
		"sub/Chart.yaml":         "apiVersion: v2\nname: sub\nversion: 0.2.0\n",
		"sub/values.yaml":        "image: reg.example.com/sub:5\n",
		"sub/templates/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sub\nspec:\n  containers:\n    - name: c\n      image: {{ .Values.image }}\n",
	})
	c, err := loader.LoadDir(filepath.Join(sub, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(c, repoDir); err != nil {
		t.Fatal(err)
	}
	files := http.FileServer(http.Dir(repoDir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "s3cret-pass" {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	idx, err := repo.IndexDirectory(repoDir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(repoDir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, password string
		want           string // the image, or the notice
	}{
		{"the repositories file's credentials", "s3cret-pass", "reg.example.com/sub:5"},
		{"a wrong password", "wr0ng-pass", "dependency sub (" + srv.URL + ") not rendered: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			helm := t.TempDir()
			settings := cli.New()
			settings.RepositoryConfig = filepath.Join(helm, "repositories.yaml")
			settings.RepositoryCache = filepath.Join(helm, "cache")
			settings.RegistryConfig = filepath.Join(helm, "registry.json")
			f := repo.NewFile()
			f.Add(&repo.Entry{Name: "private", URL: srv.URL, Username: "ci", Password: tc.password})
			if err := f.WriteFile(settings.RepositoryConfig, 0o600); err != nil {
				t.Fatal(err)
			}
			dir := writeTree(t, map[string]string{
				"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: ~0.2.0\n  repository: " + srv.URL + "\n",
			})
			tr := Find(dir, WithFetch(Fetch{Dir: t.TempDir(), Helm: settings}))
			var got []string
			for _, a := range tr.Apps {
				for _, u := range a.Uses {
					got = append(got, u.Ref)
				}
			}
			for _, e := range tr.Errs {
				got = append(got, e.Error())
				if strings.Contains(e.Error(), tc.password) {
					t.Errorf("the password in %q", e)
				}
			}
			t.Logf("%q", got)
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Errorf("got %q, want one %q", got, tc.want)
			}
		})
	}
}

// TestFindHelmFailingNotes: a NOTES.txt whose helper fails on a value
// the attribution render marks (a tag that must look like a version, as
// Bitnami's checks do) changes nothing: the image is at its values key.
func TestFindHelmFailingNotes(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"app/values.yaml": "image:\n  repository: reg.example.com/app\n  tag: \"1.2\"\n",
		"app/templates/_helpers.tpl": "{{- define \"app.check\" -}}{{- if not (regexMatch \"^[0-9.]+$\" .Values.image.tag) -}}" +
			"{{- fail (printf \"tag %s is not a version\" .Values.image.tag) -}}{{- end -}}{{- end -}}\n",
		"app/templates/NOTES.txt":   "{{ include \"app.check\" . }}\n",
		"app/templates/deploy.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n    - name: c\n      image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
	})
	tr := Find(dir)
	got := under(dir, uses(tr))
	check(t, "uses", got, []string{"D/app/values.yaml:3 Pod /app c reg.example.com/app:1.2 values repository=image.repository:2 tag=image.tag:3 append-digest image.tag"})
	check(t, "errors", errs(tr), nil)
}

// TestFindHelmFailingHelperNoMarkers: a template whose helper fails on
// a marked value leaves the image untraced, and the reason names the
// values key, never regcheck's marker.
func TestFindHelmFailingHelperNoMarkers(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"app/values.yaml": "image:\n  repository: reg.example.com/app\n  tag: \"1.2\"\n",
		"app/templates/deploy.yaml": "{{- if not (regexMatch \"^[0-9.]+$\" .Values.image.tag) }}{{ fail (printf \"tag %s is not a version\" .Values.image.tag) }}{{ end }}\n" +
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n    - name: c\n      image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n",
	})
	got := uses(Find(dir))
	if len(got) != 1 || !strings.Contains(got[0], "tag <the value of image.tag> is not a version") {
		t.Errorf("uses %q: want one, untraced, its reason naming image.tag", got)
	}
}

// TestFindHelmPerTemplateFallback: a chart whose one template calls a
// helper that fails on a marked value (a tag that must look like a
// version, as Bitnami's common.warnings.modifiedImages inspects values;
// a required) beside templates that do not: the others keep their
// values keys and lines; only the failing template's image is at the
// template with no line, and its notice names that template and the
// values key, never a marker.
func TestFindHelmPerTemplateFallback(t *testing.T) {
	t.Parallel()
	pod := func(name, image string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n    - name: c\n      image: " + image + "\n"
	}
	for _, tc := range []struct{ name, check string }{
		{"a helper that fails", `{{ include "app.check" . }}`},
		{"a required value", `{{- $_ := required "worker.tag must be a version" (regexFind "^[0-9.]+$" .Values.worker.tag) }}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, map[string]string{
				"app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
				"app/values.yaml": "image:\n  repository: reg.example.com/app\n  tag: \"1.2\"\nworker:\n  repository: reg.example.com/worker\n  tag: \"2.0\"\nside: reg.example.com/side:3.0\n",
				"app/templates/_helpers.tpl": "{{- define \"app.check\" -}}{{- if not (regexMatch \"^[0-9.]+$\" .Values.worker.tag) -}}" +
					"{{- fail (printf \"tag %s is not a version\" .Values.worker.tag) -}}{{- end -}}{{- end -}}\n",
				"app/templates/a.yaml": pod("a", `"{{ .Values.image.repository }}:{{ .Values.image.tag }}"`),
				"app/templates/b.yaml": tc.check + "\n" + pod("b", `"{{ .Values.worker.repository }}:{{ .Values.worker.tag }}"`),
				"app/templates/c.yaml": pod("c", `{{ .Values.side }}`),
			})
			tr := Find(dir)
			got := under(dir, uses(tr))
			if len(got) != 3 {
				t.Fatalf("uses %q, want 3", got)
			}
			check(t, "traced uses", []string{got[0], got[2]}, []string{
				"D/app/values.yaml:3 Pod /a c reg.example.com/app:1.2 values repository=image.repository:2 tag=image.tag:3 append-digest image.tag",
				"D/app/values.yaml:7 Pod /c c reg.example.com/side:3.0 values reference=side:7 append-digest side",
			})
			if want := "D/app/templates/b.yaml:0 Pod /b c reg.example.com/worker:2.0 untraced (the chart's values could not be followed to its images: "; !strings.HasPrefix(got[1], want) {
				t.Errorf("use %q, want it to start %q", got[1], want)
			}
			notes := under(dir, errs(tr))
			if len(notes) != 1 || !strings.HasPrefix(notes[0], "notice D/app/templates/b.yaml: its values could not be followed") ||
				!strings.Contains(notes[0], "worker.tag") || markerPattern.MatchString(notes[0]) || markerPattern.MatchString(got[1]) {
				t.Errorf("notices %q: want one, at b.yaml, naming worker.tag and no marker", notes)
			}
		})
	}
}

// TestFetchTimeout: a chart repository that never answers holds a fetch no
// longer than Fetch.Timeout: the chart gets a notice naming the dependency
// and the bound, and the rest of the tree is read (before: Helm's own
// 120 s per dependency, past --timeout).
func TestFetchTimeout(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hold)
	helm := t.TempDir()
	settings := cli.New()
	settings.RepositoryConfig = filepath.Join(helm, "repositories.yaml")
	settings.RepositoryCache = filepath.Join(helm, "cache")
	settings.RegistryConfig = filepath.Join(helm, "registry.json")
	dir := writeTree(t, map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: ~0.2.0\n  repository: " + srv.URL + "\n",
		"pod.yaml":       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: c\n      image: reg.example.com/p:1\n",
	})
	tr := Find(dir, WithFetch(Fetch{Dir: t.TempDir(), Helm: settings, Timeout: 200 * time.Millisecond}))
	var errs []string
	for _, e := range tr.Errs {
		errs = append(errs, e.Error())
	}
	want := "dependency sub (" + srv.URL + ") not rendered: "
	if len(errs) != 1 || !strings.Contains(errs[0], want) || !strings.Contains(errs[0], "no answer within 200ms (--timeout)") {
		t.Fatalf("errors %q; want one notice %q naming the bound", errs, want)
	}
	if !slices.Contains(tr.Plain, filepath.Join(dir, "pod.yaml")) {
		t.Errorf("plain files %q: the rest of the tree is not read", tr.Plain)
	}
}

// TestFetchMaxSize: a chart repository serving an endless index.yaml is
// read to Fetch.MaxSize and no further: the chart gets a notice naming the
// bound, and the rest of the tree is read (before: Helm's getter read it
// into memory until the process ran out).
func TestFetchMaxSize(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := []byte("  x-" + strings.Repeat("a", 100) + ": []\n")
		if _, err := w.Write([]byte("apiVersion: v1\nentries:\n")); err != nil {
			return
		}
		for r.Context().Err() == nil {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	helm := t.TempDir()
	settings := cli.New()
	settings.RepositoryConfig = filepath.Join(helm, "repositories.yaml")
	settings.RepositoryCache = filepath.Join(helm, "cache")
	settings.RegistryConfig = filepath.Join(helm, "registry.json")
	dir := writeTree(t, map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: ~0.2.0\n  repository: " + srv.URL + "\n",
		"pod.yaml":       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: c\n      image: reg.example.com/p:1\n",
	})
	tr := Find(dir, WithFetch(Fetch{Dir: t.TempDir(), Helm: settings, MaxSize: 1 << 20}))
	var errs []string
	for _, e := range tr.Errs {
		errs = append(errs, e.Error())
	}
	want := "dependency sub (" + srv.URL + ") not rendered: "
	if len(errs) != 1 || !strings.Contains(errs[0], want) || !strings.Contains(errs[0], "larger than 1 MiB") {
		t.Fatalf("errors %q; want one notice %q naming the bound", errs, want)
	}
	if !slices.Contains(tr.Plain, filepath.Join(dir, "pod.yaml")) {
		t.Errorf("plain files %q: the rest of the tree is not read", tr.Plain)
	}
}
