package yamlfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// show renders an image compactly for table comparisons.
func show(img Image) string {
	s := fmt.Sprintf("%d:%d %s %s/%s %s %s %q", img.Line, img.Column, img.Kind, img.Namespace, img.Name, img.Container, img.Field, img.Ref)
	if img.PullPolicy != "" {
		s += " policy=" + img.PullPolicy
	}
	if img.Alias {
		s += " alias"
	}
	return s
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"workloads.yaml", []string{
			`12:18 Deployment shop/web migrate initContainers "registry.example.com/shop/migrate:2.1"`,
			`15:18 Deployment shop/web app containers "registry.example.com/shop/web:1.4.0" policy=Always`,
			`18:18 Deployment shop/web sidecar containers "envoyproxy/envoy:v1.29.1"`,
			`38:20 CronJob /nightly job containers "busybox"`,
		}},
		{"kinds.yaml", []string{
			`5:36 Pod default/debug main containers "alpine:3.19"`,
			`7:24 Pod default/debug dbg ephemeralContainers "busybox:1.36" policy=IfNotPresent`,
			`16:14 PodTemplate /tpl c containers "nginx:1.25"`,
			`26:16 ReplicationController /rc c containers "nginx:1.24"`,
			`36:16 DaemonSet kube-system/ds agent containers "quay.io/prometheus/node-exporter:v1.7.0"`,
			`46:16 ReplicaSet /rs c containers "nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000"`,
			`56:16 StatefulSet /db pg containers "postgres:16"`,
			`66:16 Job /once c containers "Not A Valid Ref"`,
		}},
		{"list.yaml", []string{
			`11:14 Pod /p1 c containers "nginx:1.25"`,
			`21:18 Deployment /d1 c containers "redis:7"`,
		}},
		{"crlf-bom.yaml", []string{
			`8:12 Pod /crlf c containers "café/app:1"`,
			`10:12 Pod /crlf d containers "nginx:1.25"`,
		}},
		{"compose.yaml", []string{
			`7:12 Compose /shop db image "postgres:16" policy=always`,
			`10:9 Compose /shop web image "example/base:1" alias`,
			`14:12 Compose /shop worker image "example/worker:2"`,
		}},
		{"alias.yaml", []string{
			`8:12 Pod /a one containers "nginx:1.25" alias`,
			`10:12 Pod /a two containers "nginx:1.25" alias`,
			`12:12 Pod /a three containers "redis:7"`,
			`21:12 Pod /b x containers "alpine:3" alias`,
			`28:15 Pod /c x containers "alpine:3" alias`,
		}},
		{"rendered.yaml", []string{
			`27:18 Deployment /mon mon containers "quay.io/prometheus/prometheus:v2.51.0"`,
		}},
		{"kustomization.yaml", []string{
			`6:9 Kustomization / nginx images "nginx:1.25"`,
			`8:9 Kustomization / redis images "registry.example.com/mirror/redis:7.2.4"`,
			`11:9 Kustomization / app images "example/app@sha256:1111111111111111111111111111111111111111111111111111111111111111"`,
			`14:10 Kustomization / plain images "plain"`,
		}},
		{"deploy.json", []string{
			`2:71 Deployment /j c containers "nginx:1.25"`,
		}},
		{"imagevolumes.yaml", []string{
			`11:14 Pod ml/serve server containers "registry.example.com/ml/server:1.2"`,
			`19:20 Pod ml/serve weights imageVolumes "registry.example.com/ml/weights:v3" policy=Always`,
			`24:26 Pod ml/serve flow imageVolumes "registry.example.com/ml/tokenizer:v1" policy=IfNotPresent`,
			`37:22 CronJob /train trainer containers "registry.example.com/ml/trainer:7"`,
			`41:28 CronJob /train data imageVolumes "registry.example.com/ml/data:2026-11" alias`,
			`44:28 CronJob /train data-again imageVolumes "registry.example.com/ml/data:2026-11" alias`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			imgs, err := Parse(tt.file, data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, img := range imgs {
				if img.File != tt.file {
					t.Errorf("File = %q, want %q", img.File, tt.file)
				}
				got = append(got, show(img))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		skip    bool
		wantErr string
	}{
		{"bad.yaml", "", false, "bad.yaml:3: "},
		{"helm.yaml", "", true, "helm.yaml: skipped: Helm template"},
		{"helm-quoted.yaml", "", true, "helm-quoted.yaml: skipped: Helm template"},
		{"inline-tabs.yaml", "a:\n\t- b\n", false, "inline-tabs.yaml:2: "},
		{"unknown-anchor.yaml", "kind: Pod\nspec: *nope\n", false, "unknown-anchor.yaml:"},
		{"template-actions.yaml", "{{- if .Values.on }}\nkind: Pod\n{{- end }}\n", true, "template-actions.yaml: skipped"},
		// JSON the YAML parser refuses ("\/", a surrogate pair): a dashboard
		// is skipped, an object with a kind stays an error.
		{"dashboard.json", "", true, "dashboard.json: skipped: JSON that holds no Kubernetes object"},
		{"array.json", `[{"a": "x\/y"}, 1]`, true, "array.json: skipped: JSON that holds no"},
		{"pod.json", `{"kind": "Pod", "spec": {"containers": [{"image": "a\/b"}]}}`, false, "pod.json:1:"},
		{"list.json", `{"items": [{"apiVersion": "v1", "x": "\/"}]}`, false, "list.json:1:"},
		{"compose.json", `{"services": {"a": {"image": "\/"}}}`, false, "compose.json:1:"},
		{"not-json.json", `{"a": "\/"`, false, "not-json.json:"},
		// JSON the YAML parser reads: a dashboard is skipped all the same.
		{"dashboard-yaml.json", `{"title": "Requests", "panels": [{"targets": [{"expr": "sum(rate(x[5m]))", "legendFormat": "{{path}}"}]}]}`, true, "dashboard-yaml.json: skipped: JSON that holds no Kubernetes object"},
		{"empty.json", `[]`, true, "empty.json: skipped: JSON that holds no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := []byte(tt.data)
			if tt.data == "" {
				var err error
				if data, err = os.ReadFile(filepath.Join("testdata", tt.name)); err != nil {
					t.Fatal(err)
				}
			}
			imgs, err := Parse(tt.name, data)
			if err == nil {
				t.Fatalf("Parse succeeded with %v", imgs)
			}
			if imgs != nil {
				t.Errorf("images returned with an error: %v", imgs)
			}
			var skip *SkipError
			if errors.As(err, &skip) != tt.skip {
				t.Errorf("error %v (%T): SkipError = %v, want %v", err, err, !tt.skip, tt.skip)
			}
			if !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want prefix %q", err, tt.wantErr)
			}
		})
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	root := filepath.Join("testdata", "tree")
	imgs, errs := Find([]string{root, filepath.Join("testdata", "list.yaml"), filepath.Join("testdata", "missing.yaml")})
	var got []string
	for _, img := range imgs {
		got = append(got, filepath.ToSlash(img.File)+" "+img.Ref)
	}
	want := []string{
		"testdata/tree/deploy.json nginx:1.25",
		"testdata/tree/kustomize/kustomization.yaml nginx:1.25",
		"testdata/tree/kustomize/kustomization.yaml registry.example.com/mirror/redis:7.2.4",
		"testdata/tree/kustomize/kustomization.yaml example/app@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"testdata/tree/kustomize/kustomization.yaml plain",
		"testdata/tree/sub/list.yml nginx:1.25",
		"testdata/tree/sub/list.yml redis:7",
		"testdata/list.yaml nginx:1.25",
		"testdata/list.yaml redis:7",
	}
	if !slices.Equal(got, want) {
		t.Errorf("images:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, filepath.ToSlash(err.Error()))
	}
	wantErrs := []string{
		"testdata/tree/chart/templates/deploy.yaml: skipped: Helm template",
		"testdata/tree/sub/broken.yaml:1: did not find expected ',' or ']'",
		"stat testdata/missing.yaml: no such file or directory",
	}
	if !slices.Equal(msgs, wantErrs) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(wantErrs, "\n"))
	}
	var skip *SkipError
	if len(errs) == 0 || !errors.As(errs[0], &skip) || filepath.ToSlash(skip.File) != "testdata/tree/chart/templates/deploy.yaml" {
		t.Errorf("first error %v is not a *SkipError naming the template", errs)
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	root := filepath.Join("testdata", "tree")
	for _, tc := range []struct {
		name    string
		roots   []string
		exclude func(rel string) bool
		want    []string
	}{
		{"a folder, recursively", []string{root}, nil, []string{
			"testdata/tree/chart/templates/deploy.yaml", "testdata/tree/chart/values.yaml", "testdata/tree/deploy.json", "testdata/tree/kustomize/kustomization.yaml",
			"testdata/tree/sub/broken.yaml", "testdata/tree/sub/list.yml"}},
		{"exclude a folder and a file", []string{root}, func(rel string) bool {
			return rel == "chart" || filepath.Base(rel) == "broken.yaml"
		}, []string{"testdata/tree/deploy.json", "testdata/tree/kustomize/kustomization.yaml", "testdata/tree/sub/list.yml"}},
		{"a file named is listed whatever its name", []string{filepath.Join("testdata", "tree", "README.md")}, nil, []string{"testdata/tree/README.md"}},
		{"a file named is asked about by its base name", []string{filepath.Join("testdata", "list.yaml")},
			func(rel string) bool { return rel == "list.yaml" }, nil},
		{"the root folder is walked even if excluded", []string{root}, func(rel string) bool { return rel == "." }, []string{
			"testdata/tree/chart/templates/deploy.yaml", "testdata/tree/chart/values.yaml", "testdata/tree/deploy.json", "testdata/tree/kustomize/kustomization.yaml",
			"testdata/tree/sub/broken.yaml", "testdata/tree/sub/list.yml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files, errs := Files(tc.roots, tc.exclude)
			var got []string
			for _, f := range files {
				got = append(got, filepath.ToSlash(f))
			}
			if !slices.Equal(got, tc.want) || len(errs) != 0 {
				t.Errorf("Files = %q, %v; want %q", got, errs, tc.want)
			}
		})
	}
	files, errs := Files([]string{filepath.Join("testdata", "missing"), filepath.Join("testdata", "list.yaml")}, nil)
	var pe *fs.PathError
	if len(files) != 1 || len(errs) != 1 || !errors.As(errs[0], &pe) || pe.Path != filepath.Join("testdata", "missing") {
		t.Errorf("missing root: %q, %v; want the other root listed and a *fs.PathError naming the missing one", files, errs)
	}
}

func TestSitesNodes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "workloads.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sites, err := Sites("w.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(sites) != 4 {
		t.Fatalf("got %d sites", len(sites))
	}
	if s := sites[1]; s.PullPolicy == nil || s.PullPolicy.Value != "Always" || s.Value.Value != s.Ref {
		t.Errorf("site 1 nodes: %+v", s)
	}
	if s := sites[0]; s.PullPolicy != nil || s.Entry != nil {
		t.Errorf("site 0 has extra nodes: %+v", s)
	}
}
