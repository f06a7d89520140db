package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/yamlfile"
)

// tree is the test tree of integration/testdata/render: a base, two
// overlays (one renaming the placeholder, one retagging what a component
// renames), a chart with values.yaml and a release's values file, a chart
// whose template joins repository and tag, and a plain folder.
const tree = "../integration/testdata/render"

// show writes a use compactly: where it is set, the object, the
// reference, the origin and the edit or why there is none.
func show(u Use) string {
	s := fmt.Sprintf("%s:%d %s %s/%s %s %s %s", filepath.ToSlash(u.File), u.Line, u.Kind, u.Namespace, u.Name, u.Container, u.Ref, u.Origin.Kind)
	for _, k := range u.Origin.Keys {
		s += fmt.Sprintf(" %s=%s:%d", k.Part, k.Path, k.Line)
	}
	if e := u.Origin.Edit; e != nil {
		s += " " + string(e.Op)
		if e.Path != "" {
			s += " " + string(e.Path)
		}
		if e.Tag != "" {
			s += " tag=" + e.Tag
		}
		if e.Latest {
			s += " latest"
		}
	} else {
		s += " (" + u.Origin.Why + ")"
	}
	return s
}

func uses(tr *Tree) []string {
	var out []string
	for _, a := range tr.Apps {
		for _, u := range a.Uses {
			out = append(out, show(u))
		}
	}
	return out
}

func errs(tr *Tree) []string {
	var out []string
	for _, err := range tr.Errs {
		s := filepath.ToSlash(err.Error())
		var re *Error
		if errors.As(err, &re) && re.Notice {
			s = "notice " + s
		}
		out = append(out, s)
	}
	return out
}

// under writes dir as D in each line.
func under(dir string, lines []string) []string {
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], filepath.ToSlash(dir), "D")
	}
	return lines
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFindTree(t *testing.T) {
	t.Parallel()
	release := ValuesFile{Chart: tree + "/charts/shop", File: tree + "/releases/shop-prod.yaml"}
	for _, tc := range []struct {
		name string
		opts []Option
		want []string
	}{
		{"with the release's values", []Option{WithValues(release)}, []string{
			tree + "/overlays/prod/kustomization.yaml:7 Deployment prod/shop web 127.0.0.1:5055/shop/app-a:v1 images-entry entry-digest",
			tree + "/base/deployment.yaml:16 Deployment prod/shop proxy 127.0.0.1:5055/shop/single:v1 literal set-ref",
			tree + "/base/deployment.yaml:11 Deployment prod/shop migrate 127.0.0.1:5055/shop/app-b:v1 literal set-ref",
			tree + "/overlays/staging/kustomization.yaml:10 Deployment staging/shop web 127.0.0.1:5055/shop/multiarch:v2 images-entry entry-digest",
			tree + "/base/deployment.yaml:16 Deployment staging/shop proxy 127.0.0.1:5055/shop/single:v1 literal set-ref",
			tree + "/overlays/staging/kustomization.yaml:12 Deployment staging/shop migrate 127.0.0.1:5055/shop/app-b:v2 images-entry entry-digest",
			tree + "/releases/shop-prod.yaml:3 Deployment /shop-shop shop 127.0.0.1:5055/shop/buildx:v2 values repository=image.repository:3 tag=image.tag:3 digest-key image.digest",
			tree + "/charts/shop/values.yaml:8 Deployment /shop-shop metrics 127.0.0.1:5055/shop/single:v1 values reference=metrics.image:8 append-digest metrics.image",
			tree + "/charts/worker/values.yaml:8 Job /worker-worker init 127.0.0.1:5055/shop/gone:v1 values reference=init.image:8 append-digest init.image",
			tree + "/charts/worker/values.yaml:3 Job /worker-worker worker 127.0.0.1:5055/shop/manifestlist:v1 values repository=image.repository:2 tag=image.tag:3 append-digest image.tag",
			tree + "/charts/worker/values.yaml:6 Job /worker-worker tools 127.0.0.1:5055/shop/partial:v1-debian values repository=tools.repository:5 tag=tools.version:6 " +
				"(the tag v1-debian is built from tools.version and text in the chart's template: no single values key sets it)",
			tree + "/charts/worker/templates/job.yaml:17 Job /worker-worker shell 127.0.0.1:5055/shop/single:v1 template " +
				"(written in the chart's template: templates are never edited; set it from values)",
		}},
		{"values.yaml alone: the tag its empty digest key leaves used", nil, []string{
			tree + "/charts/shop/values.yaml:4 Deployment /shop-shop shop 127.0.0.1:5055/shop/buildx:v1 values repository=image.repository:3 tag=image.tag:4 digest-key image.digest",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := Find(tree, tc.opts...)
			check(t, "errors", errs(tr), nil)
			got := uses(tr)
			if len(tc.want) < len(got) {
				got = slices.DeleteFunc(got, func(s string) bool { return !strings.Contains(s, " shop 127") })
			}
			check(t, "uses", got, tc.want)
			check(t, "plain files", tr.Plain, []string{tree + "/plain/cronjob.yaml", tree + "/releases/shop-prod.yaml"})
		})
	}
}

// writeTree writes files (slash-separated paths) under a new folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func deployment(name string, images ...string) string {
	s := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name + "\nspec:\n  template:\n    spec:\n      containers:\n"
	for i, img := range images {
		s += fmt.Sprintf("        - name: c%d\n          image: %s\n", i, img)
	}
	return s
}

// TestImagesPlain: a tree with no kustomization and no chart reads as
// yamlfile.Find reads it, images and problems alike.
func TestImagesPlain(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"a.yaml":                     deployment("a", "nginx:1.25", "redis"),
		"sub/b.yml":                  deployment("b", "busybox"),
		"sub/broken.yaml":            "kind: Pod\nspec: [\n",
		"charts/x/templates/t.yaml":  "kind: Pod\nspec:\n  containers:\n    - image: {{ .Values.image }}\n",
		".hidden/c.yaml":             deployment("c", "alpine"),
		"notes.txt":                  "image: nope",
		"compose/docker-compose.yml": "services:\n  db:\n    image: postgres:16\n",
	})
	for _, root := range []string{dir, "../examples/manifests", filepath.Join(dir, "a.yaml"), filepath.Join(dir, "missing")} {
		wantImgs, wantErrs := yamlfile.Find([]string{root})
		imgs, errs := Images(root)
		if !slices.Equal(imgs, wantImgs) {
			t.Errorf("%s: images %v, want %v", root, imgs, wantImgs)
		}
		if fmt.Sprint(errs) != fmt.Sprint(wantErrs) {
			t.Errorf("%s: errors %v, want %v", root, errs, wantErrs)
		}
	}
}

// TestFindKustomize: what a tree's kustomizations render, each image at
// the line that sets it; what is left out and why.
func TestFindKustomize(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"base/deploy.yaml":        deployment("app", "app", "reg.example.com/cache:v1", "reg.example.com/tool:v1"),
		// Renames the cache without a tag: a digest in the base would follow it.
		"mirror/kustomization.yaml": "resources: [../base]\nnamePrefix: mirror-\nimages:\n- name: app\n  newName: reg.example.com/app\n  newTag: v3\n" +
			"- name: reg.example.com/cache\n  newName: mirror.example.com/cache\n",
		// Leaves the cache as written; a remote base and a missing one left out.
		"plainly/kustomization.yaml": "bases:\n- ../base\n- https://github.com/org/repo//deploy?ref=v1\n- ../nowhere\n" +
			"patchesStrategicMerge:\n- patch.yaml\npatchesJson6902:\n- target: {kind: Deployment, name: app}\n  path: json.yaml\n" +
			"commonLabels: {team: x}\nhelmCharts:\n- name: x\n",
		"plainly/patch.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n" +
			"        - name: c0\n          image: reg.example.com/app:v2\n",
		"plainly/json.yaml":             "- op: replace\n  path: /spec/template/spec/containers/2/image\n  value: reg.example.com/tool:v9\n",
		"lonely/kustomization.yaml":     "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n- name: app\n  newTag: x\n",
		"broken/kustomization.yaml":     "resources: [nothere.yaml]\n",
		"plain/cron.yaml":               deployment("cron", "reg.example.com/cron:v1"),
		"mirror/unlisted/ignored.yaml":  deployment("ignored", "never:1"),
		"plainly/.git/kustomization.x":  "",
		"mirror/kustomization-old.yaml": "not read",
	})
	tr := Find(dir)
	got := under(dir, uses(tr))
	check(t, "uses", got, []string{
		"D/mirror/kustomization.yaml:4 Deployment /mirror-app c0 reg.example.com/app:v3 images-entry entry-digest",
		"D/mirror/kustomization.yaml:7 Deployment /mirror-app c1 mirror.example.com/cache:v1 images-entry entry-digest tag=v1",
		"D/base/deploy.yaml:14 Deployment /mirror-app c2 reg.example.com/tool:v1 literal set-ref",
		"D/plainly/patch.yaml:10 Deployment /app c0 reg.example.com/app:v2 literal set-ref",
		"D/base/deploy.yaml:12 Deployment /app c1 reg.example.com/cache:v1 literal (reg.example.com/cache is renamed by an images entry " +
			"(name: reg.example.com/cache, newName: mirror.example.com/cache) that would carry its digest to the new name: pin it with an images entry of the kustomization rendered)",
		"D/plainly/kustomization.yaml:0 Deployment /app c2 reg.example.com/tool:v9 untraced (set by something pin does not follow " +
			"(a JSON patch, an inline patch, a replacement, a generator): pin it there by hand)",
	})
	check(t, "errors", under(dir, errs(tr)), []string{
		"notice D/lonely/kustomization.yaml: a kustomize Component that no kustomization under D includes: not rendered on its own",
		"D/broken/kustomization.yaml:1: nothere.yaml: no such file or folder; left out of the render",
		"notice D/plainly/kustomization.yaml:3: remote https://github.com/org/repo//deploy?ref=v1 not fetched: what it holds is not rendered",
		"D/plainly/kustomization.yaml:4: ../nowhere: no such file or folder; left out of the render",
		"notice D/plainly/kustomization.yaml:11: helmCharts: not rendered (kustomize runs the helm binary for them); render the chart's folder instead",
	})
	check(t, "plain files", tr.Plain, []string{filepath.Join(dir, "plain/cron.yaml")})

	// An overlay alone: the base it includes is outside the root, and
	// shown as a path from where the root was given.
	one := Find(filepath.Join(dir, "mirror", "kustomization.yaml"))
	if len(one.Apps) != 1 || len(one.Apps[0].Uses) != 3 || one.Apps[0].Uses[2].File != filepath.Join(dir, "base", "deploy.yaml") || len(one.Plain) != 0 {
		t.Errorf("the overlay's file alone: %v %v %v", uses(one), errs(one), one.Plain)
	}
}

// TestFindKustomizeImageVolume: kustomize's images entries reach an image
// volume's reference (spec/volumes[]/image/reference in its image field
// specs) as they reach a container's image: a volume an entry retags is
// traced to that entry, one no entry names to the line of the resource
// that writes it.
func TestFindKustomizeImageVolume(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"base/deploy.yaml": deployment("serve", "reg.example.com/ml/server:v1") +
			"      volumes:\n        - name: weights\n          image:\n            reference: reg.example.com/ml/weights:v3\n            pullPolicy: Always\n",
		"prod/kustomization.yaml":  "resources: [../base]\nimages:\n- name: reg.example.com/ml/server\n  newTag: v2\n- name: reg.example.com/ml/weights\n  newTag: v9\n",
		"stage/kustomization.yaml": "resources: [../base]\nnamePrefix: stage-\nimages:\n- name: reg.example.com/ml/server\n  newTag: v2\n",
	})
	tr := Find(dir)
	check(t, "uses", under(dir, uses(tr)), []string{
		"D/prod/kustomization.yaml:3 Deployment /serve c0 reg.example.com/ml/server:v2 images-entry entry-digest",
		"D/prod/kustomization.yaml:5 Deployment /serve weights reg.example.com/ml/weights:v9 images-entry entry-digest",
		"D/stage/kustomization.yaml:4 Deployment /stage-serve c0 reg.example.com/ml/server:v2 images-entry entry-digest",
		"D/base/deploy.yaml:14 Deployment /stage-serve weights reg.example.com/ml/weights:v3 literal set-ref",
	})
	for _, a := range tr.Apps {
		for _, u := range a.Uses {
			if u.Container == "weights" && (u.Field != yamlfile.FieldImageVolumes || u.PullPolicy != "Always") {
				t.Errorf("the volume's use: field %q, pull policy %q; want %q, Always", u.Field, u.PullPolicy, yamlfile.FieldImageVolumes)
			}
		}
	}
}

// TestFindHelm: each image of a chart at the values key that sets it, or
// why no key does; what is left out.
func TestFindHelm(t *testing.T) {
	t.Parallel()
	chart := func(name string) string {
		return "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\nappVersion: \"1.2.0\"\n"
	}
	dir := writeTree(t, map[string]string{
		"app/Chart.yaml": chart("app") + "dependencies:\n- name: db\n  version: 1.0.0\n- name: cache\n  version: 1.0.0\n  repository: https://charts.example.com\n",
		"app/values.yaml": "defaults: &d\n  tag: v7\nimage:\n  repository: reg.example.com/app\n  tag: \"\"\n" +
			"side:\n  image: reg.example.com/side\nlabelled:\n  repository: reg.example.com/lab\n  tag: \"3\"\n" +
			"shared: *d\nsharedRepo: reg.example.com/shared\npinned:\n  repository: reg.example.com/pinned\n  digest: sha256:" + strings.Repeat("a", 64) + "\n",
		"app/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels:
    version: {{ .Values.labelled.tag | quote }}
spec:
  template:
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
        - name: side
          image: {{ .Values.side.image }}
        - name: lab
          image: "{{ .Values.labelled.repository }}:{{ .Values.labelled.tag }}"
        - name: shared
          image: "{{ .Values.sharedRepo }}:{{ .Values.shared.tag }}"
        - name: pinned
          image: "{{ .Values.pinned.repository }}@{{ .Values.pinned.digest }}"
        - name: fixed
          image: "reg.example.com/fixed:{{ .Values.labelled.tag }}@sha256:` + strings.Repeat("b", 64) + `"
`,
		"app/charts/db/Chart.yaml":         chart("db"),
		"app/charts/db/values.yaml":        "image: reg.example.com/db:v5\n",
		"app/charts/db/templates/sts.yaml": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  template:\n    spec:\n      containers:\n        - name: db\n          image: {{ .Values.image }}\n",
		"lib/Chart.yaml":                   "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
		"bad/Chart.yaml":                   chart("bad"),
		"bad/templates/x.yaml":             "{{ if }}\n",
		"notyaml/Chart.yaml":               chart("notyaml"),
		"notyaml/templates/x.yaml":         "kind: Pod\nspec: [\n",
		"notyaml/templates/ok.yaml":        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\nspec:\n  containers:\n    - name: c\n      image: {{ .Values.image | default \"busybox\" }}\n",
		"notyaml/templates/NOTES.txt":      "image: {{ .Values.image }}\n",
		"notyaml/templates/_helpers.tpl":   "{{ define \"x\" }}kind: Pod{{ end }}\n",
	})
	tr := Find(dir)
	got := under(dir, uses(tr))
	check(t, "uses", got, []string{
		"D/app/charts/db/values.yaml:1 StatefulSet /db db reg.example.com/db:v5 values reference=image:1 " +
			"(set in the values of dependency db: override it in app's values under db)",
		"D/app/values.yaml:4 Deployment /app app reg.example.com/app:1.2.0 values repository=image.repository:4 " +
			"(the tag 1.2.0 is the chart's appVersion (Chart.yaml), not a values key: set the tag in values, or give the template a digest key)",
		"D/app/values.yaml:7 Deployment /app side reg.example.com/side values reference=side.image:7 append-digest side.image latest",
		"D/app/values.yaml:10 Deployment /app lab reg.example.com/lab:3 values repository=labelled.repository:9 tag=labelled.tag:10 append-digest labelled.tag",
		"D/app/values.yaml:2 Deployment /app shared reg.example.com/shared:v7 values repository=sharedRepo:12 tag=defaults.tag:2 (reached through a YAML alias)",
		"D/app/values.yaml:15 Deployment /app pinned reg.example.com/pinned@sha256:" + strings.Repeat("a", 64) + " values repository=pinned.repository:14 digest=pinned.digest:15 digest-key pinned.digest",
		"D/app/values.yaml:10 Deployment /app fixed reg.example.com/fixed:3@sha256:" + strings.Repeat("b", 64) + " values tag=labelled.tag:10 " +
			"(the digest is written in the chart's template: templates are never edited)",
		"D/notyaml/templates/ok.yaml:8 Pod /ok c busybox template (written in the chart's template: templates are never edited; set it from values)",
	})
	check(t, "errors", under(dir, errs(tr)), []string{
		"notice D/app/Chart.yaml:8: dependency cache (https://charts.example.com) not rendered: not fetched: offline",
		"D/bad/Chart.yaml: helm: parse error at (bad/templates/x.yaml:1): missing value for if",
		"notice D/lib/Chart.yaml: a library chart: nothing to render on its own",
		"D/notyaml/templates/x.yaml: what it renders is not YAML: D/notyaml/templates/x.yaml:2: did not find expected node content",
	})
}

// TestFindHelmKeyPaths: values keys that hold a dot or sit in a list are
// named by their ValuesPath, and a digest key under a dotted key is found
// as under any other.
func TestFindHelmKeyPaths(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"app/values.yaml": "\"reg.example.com\":\n  image:\n    repository: reg.example.com/dotted\n    tag: v1\n" +
			"images:\n  - repository: reg.example.com/listed\n    tag: v2\n",
		"app/templates/pod.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
    - name: dotted
      image: "{{ (index .Values "reg.example.com").image.repository }}:{{ (index .Values "reg.example.com").image.tag }}{{ with (index .Values "reg.example.com").image.digest }}@{{ . }}{{ end }}"
    - name: listed
      image: "{{ (index .Values.images 0).repository }}:{{ (index .Values.images 0).tag }}"
`,
	})
	tr := Find(dir)
	check(t, "uses", under(dir, uses(tr)), []string{
		`D/app/values.yaml:4 Pod /app dotted reg.example.com/dotted:v1 values repository="reg.example.com".image.repository:3 tag="reg.example.com".image.tag:4 digest-key "reg.example.com".image.digest`,
		"D/app/values.yaml:7 Pod /app listed reg.example.com/listed:v2 values repository=images[0].repository:6 tag=images[0].tag:7 append-digest images[0].tag",
	})
	check(t, "errors", under(dir, errs(tr)), nil)
}

// TestFindRemoteBase: a root whose remote base is left out keeps the
// images its entries name in full, as written, since they most likely
// name the remote base's images; entries something rendered matched are
// read from the render.
func TestFindRemoteBase(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"base/deploy.yaml":        deployment("app", "app"),
		"prod/kustomization.yaml": "resources:\n- ../base\n- github.com/org/api//deploy?ref=v1\nimages:\n- name: app\n  newTag: v9\n" +
			"- name: api\n  newName: reg.example.com/api\n  newTag: \"2.0\"\n- name: cli\n  newName: reg.example.com/cli\n" +
			"- {name: db, digest: sha256:" + strings.Repeat("c", 64) + "}\n",
	})
	tr := Find(dir)
	check(t, "uses", under(dir, uses(tr)), []string{
		"D/prod/kustomization.yaml:5 Deployment /app c0 app:v9 images-entry entry-digest",
		"D/prod/kustomization.yaml:7 Kustomization /D/prod api reg.example.com/api:2.0 images-entry entry-digest",
		"D/prod/kustomization.yaml:12 Kustomization /D/prod db db@sha256:" + strings.Repeat("c", 64) + " images-entry entry-digest",
	})
	check(t, "errors", under(dir, errs(tr)), []string{
		"notice D/prod/kustomization.yaml:3: remote github.com/org/api//deploy?ref=v1 not fetched: what it holds is not rendered",
	})
}

// TestRecoverInput holds the input boundary to its promise: a panic while
// rendering one input is an error naming it, its text redacted, and the
// inputs after it are still rendered.
func TestRecoverInput(t *testing.T) {
	tr := &Tree{}
	for _, f := range []string{"a/Chart.yaml", "b/kustomization.yaml"} {
		func() {
			defer tr.recoverInput(f)
			panic("cannot deep copy map[interface {}]interface {} at https://user:s3cr3t@registry.example/x")
		}()
	}
	if len(tr.Errs) != 2 {
		t.Fatalf("%d errors, want one per input: %v", len(tr.Errs), tr.Errs)
	}
	for i, f := range []string{"a/Chart.yaml", "b/kustomization.yaml"} {
		msg := tr.Errs[i].Error()
		if !strings.HasPrefix(msg, f+": could not be rendered") || strings.Contains(msg, "s3cr3t") {
			t.Errorf("error %d = %q: want it to name %s and hide the password", i, msg, f)
		}
	}
}
