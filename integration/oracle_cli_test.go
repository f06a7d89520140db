//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v4/pkg/cli"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// The real CLIs hack/build-bins.sh builds (targets helm and kustomize).
const (
	helmCLI      = "helm-v3.21.4"
	kustomizeCLI = "kustomize-v5.8.2"
)

// oracleRig is the ground truth of issue 25: the real helm (v3) and
// kustomize (v5) CLIs, with charts served as Helm users get them: the
// library chart common and the chart local pushed by helm push to
// distribution 3.1.2 on loopback, the charts metrics, logs and tracing in
// an HTTP chart repository (helm package, helm repo index) served on
// loopback and added by helm repo add.
type oracleRig struct {
	helm, kustomize string
	host            string // the registry, host:port
	repl            *strings.Replacer
	src             string   // the charts, with the hosts filled in
	env             []string // helm's own config, cache and data folders
	settings        *cli.EnvSettings
}

func newOracleRig(t *testing.T) *oracleRig {
	t.Helper()
	r := &oracleRig{}
	var err error
	if r.helm, err = bins.Ensure("..", helmCLI, "helm"); err != nil {
		t.Fatal(err)
	}
	if r.kustomize, err = bins.Ensure("..", kustomizeCLI, "kustomize"); err != nil {
		t.Fatal(err)
	}
	reg := startEmpty(t, registry.V3)
	r.host = reg.Host()
	repoDir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(repoDir)))
	t.Cleanup(srv.Close)
	r.repl = strings.NewReplacer("oci://127.0.0.1:5055/", "oci://"+r.host+"/", "127.0.0.1:5055", r.host, "http://127.0.0.1:5056", srv.URL)

	home := t.TempDir()
	r.settings = cli.New()
	r.settings.RepositoryConfig = filepath.Join(home, "repositories.yaml")
	r.settings.RegistryConfig = filepath.Join(home, "registry.json")
	r.settings.RepositoryCache = t.TempDir() // regcheck's, not the CLI's
	r.env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"), "HELM_REPOSITORY_CONFIG="+r.settings.RepositoryConfig,
		"HELM_REPOSITORY_CACHE="+filepath.Join(home, "cache", "repository"), "HELM_REGISTRY_CONFIG="+r.settings.RegistryConfig)

	r.src = t.TempDir()
	for _, c := range []string{"chartdeps/common", "chartdeps/metrics", "chartdeps/local", "oracle/charts/logs", "oracle/charts/tracing", "oracle/charts/app"} {
		copyTree(t, filepath.Join("testdata", c), filepath.Join(r.src, filepath.Base(c)), r.repl)
	}
	pkgs := t.TempDir()
	for _, c := range []string{"common", "local"} {
		r.run(t, r.helm, "package", filepath.Join(r.src, c), "-d", pkgs)
	}
	tgzs, _ := filepath.Glob(filepath.Join(pkgs, "*.tgz"))
	for _, p := range tgzs {
		r.run(t, r.helm, "push", p, "oci://"+r.host+"/charts", "--plain-http")
	}
	for _, c := range []string{"metrics", "logs", "tracing"} {
		r.run(t, r.helm, "package", filepath.Join(r.src, c), "-d", repoDir)
	}
	r.run(t, r.helm, "repo", "index", repoDir, "--url", srv.URL)
	r.run(t, r.helm, "repo", "add", "oracle", srv.URL)
	return r
}

// run runs a CLI with the rig's helm folders; its standard output.
func (r *oracleRig) run(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = r.env, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// oracleCase is one fixture tree: render copies it where regcheck reads
// it (root) and renders it with the real CLIs (what they printed).
type oracleCase struct {
	tree   string
	render func(r *oracleRig, t *testing.T) (root string, out [][]byte)
}

var oracleCases = []oracleCase{
	{"chart", (*oracleRig).chartTree},
	{"flux", (*oracleRig).fluxTree},
	{"kustomize", kustomizeTree("kustomize", "overlays/prod", "overlays/staging")},
	{"tekton", kustomizeTree("tekton", ".")},
	{"argo", kustomizeTree("argo", ".")},
	{"tekton-plain", generatedTree("tekton")},
	{"argo-plain", generatedTree("argo")},
	{"notices", (*oracleRig).noticesTree},
}

// TestOracleCLI holds regcheck's image inventory of each fixture tree to
// what the real helm template and kustomize build render (issue 25's
// ground truth): the image: values (and the CRD image fields regcheck
// knows) of the rendered objects, Tekton's $(params.x) and Argo's
// {{inputs.parameters.x}} resolved by the test from the rendered
// objects by those projects' documented rules, strings that are no
// image reference (placeholders) set apart as notices. Each image
// regcheck reports must be one the CLIs render (no extra), each the
// CLIs render must be reported (no missed), at the line where the tree
// writes it when the tree writes it once (no wrong line).
func TestOracleCLI(t *testing.T) {
	start := time.Now()
	r := newOracleRig(t)
	t.Logf("rig (registry, chart repository, helm package/push/index) up in %s", time.Since(start).Round(time.Millisecond))
	for _, tc := range oracleCases {
		t.Run(tc.tree, func(t *testing.T) {
			began := time.Now()
			root, out := tc.render(r, t)
			want, placeholders := cliImages(t, out)
			if len(want) == 0 {
				t.Fatalf("the CLIs render no image: the fixture is broken")
			}
			got, notices, code := r.scan(t, root)
			if code != 0 {
				t.Errorf("scan --fail-on never -f %s: exit %d, want 0 (an input not read makes it 3)", root, code)
			}
			t.Logf("tree=%s the CLIs render %q", tc.tree, want)
			c := compareWithCLI(t, root, want, got)
			c.notices = checkPlaceholders(t, root, placeholders, notices)
			t.Logf("tree=%s cli=%d regcheck=%d missed=%d extra=%d wrong-lines=%d (lines checked %d) placeholders=%d notices-missed=%d exit=%d (%s)",
				tc.tree, len(want), len(got), len(c.missed), len(c.extra), len(c.wrong), c.checked, len(placeholders), c.notices, code, time.Since(began).Round(time.Millisecond))
			for _, m := range c.missed {
				t.Errorf("missed: the CLIs render %s, regcheck does not report it", m)
			}
			for _, e := range c.extra {
				t.Errorf("extra: regcheck reports %s at %v, the CLIs render no such image", e, got[e])
			}
			for _, w := range c.wrong {
				t.Errorf("wrong line: %s", w)
			}
		})
	}
	t.Logf("TestOracleCLI took %s", time.Since(start).Round(time.Millisecond))
}

// comparison is one tree's differences.
type comparison struct {
	missed, extra, wrong []string
	checked, notices     int
}

// compareWithCLI compares the image sets, and the line of each image the
// tree writes once (sourceLine) with the uses regcheck reports; a use at a
// file of the tree with no line is wrong too (no fixture sets an image
// where a line cannot be told: a JSON patch, a generator).
func compareWithCLI(t *testing.T, root string, want []string, got map[string][]string) comparison {
	t.Helper()
	var c comparison
	for _, ref := range want {
		uses, ok := got[ref]
		if !ok {
			c.missed = append(c.missed, ref)
			continue
		}
		at, ok := sourceLine(t, root, ref, want)
		if !ok {
			continue
		}
		c.checked++
		if !slices.Contains(uses, at) {
			c.wrong = append(c.wrong, fmt.Sprintf("%s: regcheck at %v, the tree writes it at %s", ref, uses, at))
		}
	}
	for _, ref := range slices.Sorted(maps.Keys(got)) {
		if !slices.Contains(want, ref) {
			c.extra = append(c.extra, ref)
		}
		for _, u := range got[ref] {
			i := strings.LastIndex(u, ":")
			file, line := u[:i], u[i+1:]
			if _, err := os.Stat(file); err != nil {
				// A chart fetched into regcheck's cache: its templates are
				// not in the tree.
				t.Logf("%s: regcheck at %s, a file not in the tree", ref, u)
			} else if line == "0" { // no fixture sets an image where a line cannot be told
				c.wrong = append(c.wrong, fmt.Sprintf("%s: regcheck at %s, no line", ref, u))
			}
		}
	}
	return c
}

// checkPlaceholders checks that each string of an image field that is no
// image reference is a notice of the scan's at the line the tree writes
// it; the number that is not.
func checkPlaceholders(t *testing.T, root string, placeholders []string, notices []types.InputError) int {
	t.Helper()
	missed := 0
	for _, p := range placeholders {
		at, ok := literalLine(t, root, p)
		found := slices.ContainsFunc(notices, func(n types.InputError) bool {
			return n.Notice && fmt.Sprintf("%s:%d", n.Source, n.Line) == at && strings.Contains(n.Message, "not an image reference")
		})
		if !ok || !found {
			missed++
			t.Errorf("placeholder %q (written at %s): no notice \"not an image reference\" there", p, at)
		}
	}
	return missed
}

// scan is regcheck's inventory of the tree at root as scan -f reports
// it: each image (the walk's verdict aside) with the file:line of its
// uses, the input notices, the exit code. Charts are fetched with the
// rig's Helm files (Helm's environment variables) over plain HTTP from
// the rig's registry, into a cache of the test's.
func (r *oracleRig) scan(t *testing.T, root string) (map[string][]string, []types.InputError, int) {
	t.Helper()
	t.Setenv("REGCHECK_BIN", bins.Dir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HELM_REPOSITORY_CONFIG", r.settings.RepositoryConfig)
	t.Setenv("HELM_REGISTRY_CONFIG", r.settings.RegistryConfig)
	t.Setenv("HELM_REPOSITORY_CACHE", r.settings.RepositoryCache)
	code, out, errs := runCLI(t, "scan", "-o", "json", "--fail-on", "never", "--insecure-registry", r.host, "-f", root)
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("scan -f %s: exit %d, %v\n%s%s", root, code, err, out, errs)
	}
	got := map[string][]string{}
	for _, im := range doc.Images {
		for _, u := range im.Uses {
			got[im.Reference] = append(got[im.Reference], fmt.Sprintf("%s:%d", u.File, u.Line))
		}
	}
	for _, ie := range doc.InputErrors {
		t.Logf("scan says: %s:%d: %s (notice %v)", ie.Source, ie.Line, ie.Message, ie.Notice)
	}
	return got, doc.InputErrors, code
}

// chartTree is testdata/oracle/charts/app, none of its dependencies
// vendored: helm dependency build fetches them (common from the OCI
// registry, metrics twice, logs and tracing from the HTTP repository),
// helm template renders it. regcheck reads app with the Chart.lock helm
// wrote, as a user commits it.
func (r *oracleRig) chartTree(t *testing.T) (string, [][]byte) {
	root, work := t.TempDir(), t.TempDir()
	copyTree(t, filepath.Join(r.src, "app"), filepath.Join(root, "app"), strings.NewReplacer())
	copyTree(t, filepath.Join(r.src, "app"), filepath.Join(work, "app"), strings.NewReplacer())
	r.run(t, r.helm, "dependency", "build", filepath.Join(work, "app"))
	writeFile(t, filepath.Join(root, "app"), "Chart.lock", readFile(t, filepath.Join(work, "app", "Chart.lock")))
	return root, [][]byte{r.run(t, r.helm, "template", "app", filepath.Join(work, "app"), "--namespace", "default")}
}

// kustomizeTree is the case of testdata/oracle/dir: kustomize build of
// each of builds (folders of the tree).
func kustomizeTree(dir string, builds ...string) func(*oracleRig, *testing.T) (string, [][]byte) {
	return func(r *oracleRig, t *testing.T) (string, [][]byte) {
		root := t.TempDir()
		copyTree(t, filepath.Join("testdata", "oracle", dir), root, r.repl)
		var out [][]byte
		for _, b := range builds {
			out = append(out, r.run(t, r.kustomize, "build", filepath.Join(root, b)))
		}
		return root, out
	}
}

// generatedTree is the case of testdata/oracle/dir read as a folder of
// manifests with no kustomization (its kustomization.yaml, if any, left
// out of the tree regcheck reads): the CLI's render is kustomize build of
// a copy given the kustomization Flux's kustomize-controller generates
// for such a folder (every YAML manifest a resource; JSON is none).
func generatedTree(dir string) func(*oracleRig, *testing.T) (string, [][]byte) {
	return func(r *oracleRig, t *testing.T) (string, [][]byte) {
		root, work := t.TempDir(), t.TempDir()
		copyTree(t, filepath.Join("testdata", "oracle", dir), root, r.repl)
		if err := os.Remove(filepath.Join(root, "kustomization.yaml")); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		copyTree(t, root, work, strings.NewReplacer())
		manifests, _ := filepath.Glob(filepath.Join(work, "*.yaml"))
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
		for _, m := range manifests {
			k += "  - " + filepath.Base(m) + "\n"
		}
		writeFile(t, work, "kustomization.yaml", k)
		return root, [][]byte{r.run(t, r.kustomize, "build", work)}
	}
}

// noticesTree is testdata/oracle/notices, manifests with placeholders
// and a Grafana dashboard beside them, as generatedTree renders it. Its
// one image is pushed to the registry, and a scan of the tree must be
// clean: neither broken (the placeholders) nor incomplete (the
// dashboard, a notice).
func (r *oracleRig) noticesTree(t *testing.T) (string, [][]byte) {
	root, out := generatedTree("notices")(r, t)
	pushSingle(t, r.host+"/notices/app:1.0", "oracle-notices")
	code, stdout, stderr := runCLI(t, "scan", "-o", "json", "-f", root)
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("scan -f %s: exit %d, %v\n%s%s", root, code, err, stdout, stderr)
	}
	if code != 0 || len(doc.Images) != 1 || doc.Images[0].Verdict != types.OK {
		t.Errorf("scan -f %s: exit %d, images %+v; want 0, the one image ok (placeholders and the dashboard are notices)", root, code, doc.Images)
	}
	dashboard := filepath.Join(root, "dashboard.json")
	if !slices.ContainsFunc(doc.InputErrors, func(ie types.InputError) bool {
		return ie.Source == dashboard && ie.Notice && strings.Contains(ie.Message, "holds no Kubernetes object")
	}) {
		t.Errorf("scan -f: no notice for %s in %+v", dashboard, doc.InputErrors)
	}
	return root, out
}

// fluxTree is testdata/flux: Flux's kustomize-controller runs kustomize
// build on the path of each Flux Kustomization under clusters/, then
// helm-controller renders each HelmRelease built: here helm template of
// its chart from the HelmRepository built beside it (HTTP, or OCI), with
// the values of its valuesFrom ConfigMaps then its spec.values. A release
// whose source is not in the tree (a GitRepository elsewhere) cannot be
// rendered by the CLIs either.
func (r *oracleRig) fluxTree(t *testing.T) (string, [][]byte) {
	root := t.TempDir()
	copyTree(t, "testdata/flux", root, r.repl)
	var out [][]byte
	for _, obj := range objectsIn(t, filepath.Join(root, "clusters")) {
		if kind(obj) != "kustomize.toolkit.fluxcd.io/Kustomization" {
			continue
		}
		built := r.run(t, r.kustomize, "build", filepath.Join(root, str(obj, "spec", "path")))
		out = append(out, built)
		out = append(out, r.helmReleases(t, decodeAll(t, built))...)
	}
	return root, out
}

// helmReleases is helm template of each HelmRelease in objs whose
// HelmRepository is in objs.
func (r *oracleRig) helmReleases(t *testing.T, objs []map[string]any) [][]byte {
	t.Helper()
	byName := map[string]map[string]any{} // kind/namespace/name
	for _, o := range objs {
		byName[fmt.Sprintf("%s/%s/%s", o["kind"], str(o, "metadata", "namespace"), str(o, "metadata", "name"))] = o
	}
	var out [][]byte
	for _, hr := range objs {
		if kind(hr) != "helm.toolkit.fluxcd.io/HelmRelease" {
			continue
		}
		ns, spec := str(hr, "metadata", "namespace"), "spec"
		srcNS := str(hr, spec, "chart", "spec", "sourceRef", "namespace")
		if srcNS == "" {
			srcNS = ns
		}
		src := byName[fmt.Sprintf("%s/%s/%s", str(hr, spec, "chart", "spec", "sourceRef", "kind"), srcNS, str(hr, spec, "chart", "spec", "sourceRef", "name"))]
		if src == nil || src["kind"] != "HelmRepository" {
			t.Logf("HelmRelease %s/%s: source not in the tree, the CLIs render nothing", ns, str(hr, "metadata", "name"))
			continue
		}
		args := []string{"template", str(hr, "metadata", "name")}
		chart, url := str(hr, spec, "chart", "spec", "chart"), str(src, "spec", "url")
		if str(src, "spec", "type") == "oci" {
			args = append(args, url+"/"+chart, "--plain-http")
		} else {
			args = append(args, chart, "--repo", url)
		}
		args = append(args, "--version", str(hr, spec, "chart", "spec", "version"), "--namespace", ns)
		out = append(out, r.run(t, r.helm, append(args, releaseValueFiles(t, hr, byName)...)...))
	}
	return out
}

// releaseValueFiles are -f flags for a HelmRelease's values as Flux
// merges them: each valuesFrom ConfigMap's key (values.yaml unless
// valuesKey says), then spec.values.
func releaseValueFiles(t *testing.T, hr map[string]any, byName map[string]map[string]any) []string {
	t.Helper()
	dir := t.TempDir()
	var flags []string
	from, _ := at(hr, "spec", "valuesFrom").([]any)
	for i, f := range from {
		ref, _ := f.(map[string]any)
		key := str(ref, "valuesKey")
		if key == "" {
			key = "values.yaml"
		}
		cm := byName[fmt.Sprintf("%s/%s/%s", str(ref, "kind"), str(hr, "metadata", "namespace"), str(ref, "name"))]
		if cm == nil {
			t.Fatalf("HelmRelease %s: valuesFrom %s not built", str(hr, "metadata", "name"), str(ref, "name"))
		}
		flags = append(flags, "-f", writeFile(t, dir, fmt.Sprintf("from%d.yaml", i), str(cm, "data", key)))
	}
	if v, ok := at(hr, "spec", "values").(map[string]any); ok {
		b, err := sigsyaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "-f", writeFile(t, dir, "values.yaml", string(b)))
	}
	return flags
}

// cliImages are the images in what the CLIs printed: every string of an
// image: field (and of the CRD image fields below), Tekton's and Argo's
// parameters resolved by the rules of tektonImages and argoImages;
// sorted, each once. A string that does not parse as an image reference
// (go-containerregistry's parser) is a placeholder, not an image.
func cliImages(t *testing.T, out [][]byte) (images, placeholders []string) {
	t.Helper()
	var objs []map[string]any
	for _, o := range out {
		objs = append(objs, decodeAll(t, o)...)
	}
	var all []string
	for _, o := range objs {
		for _, s := range imageStrings(o) {
			if !strings.Contains(s, "$(params") && !strings.Contains(s, "{{") {
				all = append(all, s)
			}
		}
		if kind(o) == "postgresql.cnpg.io/Cluster" {
			all = append(all, str(o, "spec", "imageName"))
		}
	}
	all = append(all, tektonImages(objs)...)
	all = append(all, argoImages(objs)...)
	for _, s := range all {
		if _, err := name.ParseReference(s); err != nil {
			placeholders = append(placeholders, s)
		} else {
			images = append(images, s)
		}
	}
	slices.Sort(images)
	slices.Sort(placeholders)
	return slices.Compact(images), slices.Compact(placeholders)
}

// imageStrings are the string values of every image key in v.
func imageStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "image" {
				out = append(out, s)
			}
			out = append(out, imageStrings(e)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, imageStrings(e)...)
		}
	}
	return out
}

// decodeAll are the objects of a YAML stream (at most 10000).
func decodeAll(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var objs []map[string]any
	for range 10000 {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decoding the CLI's output: %v\n%s", err, b)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	t.Fatal("more than 10000 objects")
	return nil
}

// objectsIn are the objects of the YAML files under dir.
func objectsIn(t *testing.T, dir string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	for _, f := range files {
		objs = append(objs, decodeAll(t, []byte(readFile(t, f)))...)
	}
	return objs
}

// kind is an object's API group and kind, "group/Kind" ("/Kind" for the
// core group).
func kind(o map[string]any) string {
	g, _, _ := strings.Cut(str(o, "apiVersion"), "/")
	if !strings.Contains(str(o, "apiVersion"), "/") {
		g = ""
	}
	return g + "/" + str(o, "kind")
}

// at is the value at path in v, or nil.
func at(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// str is the string at path in v, or "".
func str(v any, path ...string) string {
	switch s := at(v, path...).(type) {
	case string:
		return s
	case int, float64, bool:
		return fmt.Sprint(s)
	}
	return ""
}

// list is the list of maps at path in v.
func list(v any, path ...string) []map[string]any {
	var out []map[string]any
	l, _ := at(v, path...).([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// sourceLine is "file:line" where the tree at root writes ref: the one
// scalar equal to ref; else, for a digest, the one equal to its digest;
// else, when no other image of want has ref's tag, the one scalar equal
// to its tag under a key tag, newTag, default or value. false when there
// is no one such line (the image is made of several values, or written
// in a chart outside the tree).
func sourceLine(t *testing.T, root, ref string, want []string) (string, bool) {
	t.Helper()
	if l, n := scalarLines(t, root, func(_, v string) bool { return v == ref }); n > 0 {
		return l, n == 1
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", false
	}
	if d, ok := r.(name.Digest); ok {
		l, n := scalarLines(t, root, func(_, v string) bool { return v == d.DigestStr() })
		return l, n == 1
	}
	tag := r.(name.Tag).TagStr()
	for _, w := range want {
		if o, err := name.NewTag(w); w != ref && err == nil && o.TagStr() == tag {
			return "", false
		}
	}
	l, n := scalarLines(t, root, func(k, v string) bool {
		return v == tag && (k == "tag" || k == "newTag" || k == "default" || k == "value")
	})
	return l, n == 1
}

// literalLine is where the tree writes the scalar s, when it writes it
// once.
func literalLine(t *testing.T, root, s string) (string, bool) {
	t.Helper()
	l, n := scalarLines(t, root, func(_, v string) bool { return v == s })
	return l, n == 1
}

var keyLine = regexp.MustCompile(`^\s*(?:-\s+)?([A-Za-z0-9_.-]+):\s+(.*?)\s*$`)

// scalarLines is the first "file:line" of the YAML files under root whose
// line "key: value" (value unquoted) matches, and how many lines do. A
// newName, newTag or digest of a kustomization's images: entry is at the
// entry's first line ("- name: …"): the entry is one edit, as kustomize
// applies it.
func scalarLines(t *testing.T, root string, match func(key, value string) bool) (string, int) {
	t.Helper()
	first, n := "", 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || filepath.Base(p) == "Chart.lock" {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		entry := 0 // the line of the last list entry begun
		for line := 1; sc.Scan(); line++ {
			if strings.HasPrefix(strings.TrimSpace(sc.Text()), "- ") {
				entry = line
			}
			m := keyLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			at := line
			if filepath.Base(p) == "kustomization.yaml" && (m[1] == "newName" || m[1] == "newTag" || m[1] == "digest") {
				at = entry
			}
			v := m[2]
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			} else if len(v) > 1 && v[0] == '\'' && v[len(v)-1] == '\'' {
				v = v[1 : len(v)-1]
			}
			if match(m[1], v) {
				if n++; n == 1 {
					first = fmt.Sprintf("%s:%d", p, at)
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return first, n
}

// Parameters, resolved from the rendered objects by the projects' own
// rules (written from their documentation, not from regcheck's code).
// An image field that reads a parameter is an image once for each way
// the tree runs it in which every parameter it reads has a value:
//
// Tekton (tekton.dev/docs/pipelines/tasks/#specifying-parameters,
// .../pipelines/#specifying-parameters, .../pipelineruns/#propagated-parameters):
// a Task run by itself takes each param's default; a TaskRun's params
// replace them; a Pipeline's task passes params to its Task, whose values
// may read the Pipeline's $(params.p), valued by the Pipeline's defaults
// or a PipelineRun's params; a taskSpec embedded in a Pipeline reads the
// Pipeline's params (propagated) as well as the ones passed.
//
// Argo Workflows (argo-workflows.readthedocs.io walk-through/parameters,
// workflow-inputs, inline templates): {{workflow.parameters.x}} is the
// workflow's spec.arguments.parameters value; {{inputs.parameters.x}} is
// the template's input value (or default) by itself, or the value the
// dag task or step calling the template passes in its arguments (itself
// possibly {{workflow.parameters.x}}); a dag task's or step's inline
// template takes the arguments of that task.

var (
	tektonParam = regexp.MustCompile(`\$\(params(?:\.([A-Za-z0-9_-]+)|\[["']([^"']+)["']\])\)`)
	argoParam   = regexp.MustCompile(`\{\{\s*(inputs|workflow)\.parameters\.([A-Za-z0-9_.-]+)\s*\}\}`)
)

// tektonSubst is s with each $(params.x) replaced from vals; false when
// one has no value.
func tektonSubst(s string, vals map[string]string) (string, bool) {
	ok := true
	out := tektonParam.ReplaceAllStringFunc(s, func(m string) string {
		g := tektonParam.FindStringSubmatch(m)
		v, has := vals[g[1]+g[2]]
		ok = ok && has
		return v
	})
	return out, ok
}

// tektonParams are a params list's values (key: "default" or "value").
func tektonParams(l []map[string]any, key string) map[string]string {
	vals := map[string]string{}
	for _, p := range l {
		if _, has := p[key]; has {
			vals[str(p, "name")] = str(p, key)
		}
	}
	return vals
}

// overlay is the maps merged, later ones winning.
func overlay(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// tektonTaskImages are the images of a task spec's steps, sidecars and
// step template that read params, with vals over the spec's defaults.
func tektonTaskImages(spec map[string]any, vals map[string]string) []string {
	vals = overlay(tektonParams(list(spec, "params"), "default"), vals)
	var exprs []string
	for _, f := range []string{"steps", "sidecars"} {
		for _, c := range list(spec, f) {
			exprs = append(exprs, str(c, "image"))
		}
	}
	exprs = append(exprs, str(spec, "stepTemplate", "image"))
	var out []string
	for _, e := range exprs {
		if !tektonParam.MatchString(e) {
			continue
		}
		if s, ok := tektonSubst(e, vals); ok {
			out = append(out, s)
		}
	}
	return out
}

// tektonImages are the images of the Tekton objects' parameterised image
// fields, for every way the objects run each Task.
func tektonImages(objs []map[string]any) []string {
	tasks := map[string]map[string]any{}
	for _, o := range objs {
		if kind(o) == "tekton.dev/Task" {
			spec, _ := o["spec"].(map[string]any)
			tasks[str(o, "metadata", "name")] = spec
		}
	}
	var out []string
	for _, spec := range tasks { // run by itself
		out = append(out, tektonTaskImages(spec, nil)...)
	}
	for _, o := range objs {
		switch kind(o) {
		case "tekton.dev/TaskRun":
			spec, _ := at(o, "spec", "taskSpec").(map[string]any)
			if ref := str(o, "spec", "taskRef", "name"); ref != "" {
				spec = tasks[ref]
			}
			out = append(out, tektonTaskImages(spec, tektonParams(list(o, "spec", "params"), "value"))...)
		case "tekton.dev/Pipeline":
			out = append(out, tektonPipelineImages(o, objs, tasks)...)
		}
	}
	return out
}

// tektonPipelineImages are the images of a Pipeline's tasks, once with
// the Pipeline's defaults and once per PipelineRun of it.
func tektonPipelineImages(p map[string]any, objs []map[string]any, tasks map[string]map[string]any) []string {
	defaults := tektonParams(list(p, "spec", "params"), "default")
	runs := []map[string]string{defaults}
	for _, o := range objs {
		if kind(o) == "tekton.dev/PipelineRun" && str(o, "spec", "pipelineRef", "name") == str(p, "metadata", "name") {
			runs = append(runs, overlay(defaults, tektonParams(list(o, "spec", "params"), "value")))
		}
	}
	var out []string
	for _, run := range runs {
		for _, pt := range slices.Concat(list(p, "spec", "tasks"), list(p, "spec", "finally")) {
			passed := map[string]string{}
			complete := true
			for n, v := range tektonParams(list(pt, "params"), "value") {
				s, ok := tektonSubst(v, run)
				if ok {
					passed[n] = s
				}
				complete = complete && ok
			}
			if !complete {
				continue // Tekton refuses to run a task whose value reads an unset param
			}
			if ref := str(pt, "taskRef", "name"); ref != "" {
				out = append(out, tektonTaskImages(tasks[ref], passed)...)
			} else if spec, ok := pt["taskSpec"].(map[string]any); ok {
				out = append(out, tektonTaskImages(spec, overlay(run, passed))...)
			}
		}
	}
	return out
}

// argoSubst is s with {{inputs.parameters.x}} from inputs and
// {{workflow.parameters.x}} from wf; false when one has no value or
// another {{…}} is left.
func argoSubst(s string, inputs, wf map[string]string) (string, bool) {
	ok := true
	out := argoParam.ReplaceAllStringFunc(s, func(m string) string {
		g := argoParam.FindStringSubmatch(m)
		vals := inputs
		if g[1] == "workflow" {
			vals = wf
		}
		v, has := vals[g[2]]
		ok = ok && has
		return v
	})
	return out, ok && !strings.Contains(out, "{{")
}

// argoTemplateImages are the images of a template's container, script,
// init containers, sidecars and container set that read parameters.
func argoTemplateImages(tmpl map[string]any, inputs, wf map[string]string) []string {
	exprs := []string{str(tmpl, "container", "image"), str(tmpl, "script", "image")}
	for _, l := range [][]map[string]any{list(tmpl, "initContainers"), list(tmpl, "sidecars"), list(tmpl, "containerSet", "containers")} {
		for _, c := range l {
			exprs = append(exprs, str(c, "image"))
		}
	}
	var out []string
	for _, e := range exprs {
		if !strings.Contains(e, "{{") {
			continue
		}
		if s, ok := argoSubst(e, inputs, wf); ok {
			out = append(out, s)
		}
	}
	return out
}

// argoInputs are a template's own input values: value, else default.
func argoInputs(tmpl map[string]any) map[string]string {
	vals := map[string]string{}
	for _, p := range list(tmpl, "inputs", "parameters") {
		if v := str(p, "value"); v != "" {
			vals[str(p, "name")] = v
		} else if v := str(p, "default"); v != "" {
			vals[str(p, "name")] = v
		}
	}
	return vals
}

// argoCalls are the dag tasks and steps of a workflow's templates.
func argoCalls(templates []map[string]any) []map[string]any {
	var calls []map[string]any
	for _, tmpl := range templates {
		calls = append(calls, list(tmpl, "dag", "tasks")...)
		steps, _ := tmpl["steps"].([]any)
		for _, group := range steps { // parallel groups, each a list of steps
			g, _ := group.([]any)
			for _, s := range g {
				if m, ok := s.(map[string]any); ok {
					calls = append(calls, m)
				}
			}
		}
	}
	return calls
}

// argoImages are the images of the Argo Workflows objects' parameterised
// image fields: each template by itself and as each call runs it.
func argoImages(objs []map[string]any) []string {
	var out []string
	for _, o := range objs {
		specPath := []string{"spec"}
		switch kind(o) {
		case "argoproj.io/Workflow", "argoproj.io/WorkflowTemplate", "argoproj.io/ClusterWorkflowTemplate":
		case "argoproj.io/CronWorkflow":
			specPath = append(specPath, "workflowSpec")
		default:
			continue
		}
		spec, _ := at(o, specPath...).(map[string]any)
		wf := map[string]string{}
		for _, p := range list(spec, "arguments", "parameters") {
			wf[str(p, "name")] = str(p, "value")
		}
		templates := list(spec, "templates")
		byName := map[string]map[string]any{}
		for _, tmpl := range templates {
			byName[str(tmpl, "name")] = tmpl
			out = append(out, argoTemplateImages(tmpl, argoInputs(tmpl), wf)...)
		}
		for _, call := range argoCalls(templates) {
			args := map[string]string{}
			for _, p := range list(call, "arguments", "parameters") {
				if v, ok := argoSubst(str(p, "value"), nil, wf); ok {
					args[str(p, "name")] = v
				}
			}
			tmpl, _ := call["inline"].(map[string]any)
			if t := byName[str(call, "template")]; t != nil {
				tmpl = t
			}
			if tmpl != nil {
				out = append(out, argoTemplateImages(tmpl, overlay(argoInputs(tmpl), args), wf)...)
			}
		}
	}
	return out
}
