package yamlfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseCustomKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		want    []string
		notices []string
	}{
		{"crds.yaml", []string{
			`10:16 Rollout prod/shop migrate initContainers "registry.example.com/shop/migrate:3"`,
			`13:16 Rollout prod/shop web containers "registry.example.com/shop/web:3" policy=Always`,
			`23:16 Service /hello  containers "registry.example.com/knative/hello:1"`,
			`34:18 ScaledJob /queue worker containers "registry.example.com/keda/worker:2"`,
			`41:12 Task /build  stepTemplate "registry.example.com/ci/base:1"`,
			`44:12 Task /build compile steps "registry.example.com/ci/go:1.23" policy=IfNotPresent`,
			`50:12 Task /build docker sidecars "registry.example.com/ci/dind:27"`,
			`61:16 Pipeline /release tag steps "registry.example.com/ci/git:2"`,
			`67:16 Pipeline /release send steps "registry.example.com/ci/curl:8"`,
			`77:16 CronWorkflow /nightly main container "registry.example.com/wf/main:1"`,
			`80:16 CronWorkflow /nightly py script "registry.example.com/wf/python:3.12"`,
			`84:16 CronWorkflow /nightly fetch initContainers "registry.example.com/wf/fetch:1"`,
			`87:16 CronWorkflow /nightly cache sidecars "registry.example.com/wf/redis:7"`,
			`92:18 CronWorkflow /nightly a containers "registry.example.com/wf/a:1"`,
			`98:14 Cluster db/pg  imageName "ghcr.io/cloudnative-pg/postgresql:16.4" policy=IfNotPresent`,
			`112:10 Prometheus /k8s  image "quay.io/prometheus/prometheus:v2.55.0"`,
			`121:12 Provider /aws  package "xpkg.upbound.io/upbound/provider-aws-s3:v1.1.0"`,
			`136:14 ExecutorPlugin /hello  container "registry.example.com/wf/hello-plugin:1"`,
		}, nil},
		{"gitops.yaml", []string{
			`15:12 HelmRelease apps/podinfo image spec.values "ghcr.io/stefanprodan/podinfo:6.7.0"`,
			`20:14 HelmRelease apps/podinfo redis.image spec.values "docker.io/library/redis:7.4@sha256:1111111111111111111111111111111111111111111111111111111111111111"`,
			`23:14 HelmRelease apps/podinfo sidecar.image spec.values "registry.example.com/sidecar:2"`,
			`39:16 Application argocd/guestbook image spec.sources[0].helm.values "registry.example.com/guestbook:2.1"`,
			`45:18 Application argocd/guestbook worker.image spec.sources[0].helm.values "registry.example.com/worker:5"`,
			`50:18 Application argocd/guestbook exporter.image spec.sources[0].helm.valuesObject "registry.example.com/exporter:v1"`,
			`55:9 Application argocd/guestbook  spec.sources[1].kustomize.images "registry.example.com/frontend:9"`,
			`56:9 Application argocd/guestbook backend spec.sources[1].kustomize.images "registry.example.com/backend:4"`,
		}, []string{
			`gitops.yaml:10: HelmRelease apps/podinfo: spec.valuesFrom (ConfigMaps and Secrets in the cluster) not read`,
			`gitops.yaml:26: HelmRelease apps/podinfo: spec.values.notag.image.repository has no tag: the chart's default (its appVersion) is not known; not read`,
			`gitops.yaml:6: HelmRelease apps/podinfo: chart podinfo not rendered; 3 image(s) read from spec.values (the chart's own defaults unknown)`,
			`gitops.yaml:33: Application argocd/guestbook: spec.sources[0] (https://charts.example.com guestbook) not rendered; 3 image(s) read from its Helm values (the chart's own defaults unknown)`,
			`gitops.yaml:51: Application argocd/guestbook: spec.sources[1] (https://git.example.com/apps.git overlays/prod) not rendered; 2 image(s) read from kustomize.images`,
		}},
		// An empty registry, tag or digest is absent, as the chart's
		// template treats it: never "redis:8.2.1-debian-12-r0@".
		{"helm-empty.yaml", []string{
			`13:12 HelmRelease apps/redis image spec.values "docker.io/bitnami/redis:8.2.1-debian-12-r0"`,
			`24:14 HelmRelease apps/redis exporter.image spec.values "oliver006/redis_exporter:v1.76.0"`,
		}, []string{
			`helm-empty.yaml:18: HelmRelease apps/redis: spec.values.operator.image.repository has no tag: the chart's default (its appVersion) is not known; not read`,
			`helm-empty.yaml:6: HelmRelease apps/redis: chart redis not rendered; 2 image(s) read from spec.values (the chart's own defaults unknown)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			imgs, notes := Read(tt.file, data)
			var got, gotNotes []string
			for _, img := range imgs {
				got = append(got, show(img))
			}
			for _, n := range notes {
				gotNotes = append(gotNotes, n.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !slices.Equal(gotNotes, tt.notices) {
				t.Errorf("notices:\n%s\nwant:\n%s", strings.Join(gotNotes, "\n"), strings.Join(tt.notices, "\n"))
			}
		})
	}
}

func TestParseErrorPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ data, want string }{
		{"a: b: c\n", "f.yaml:1:5: mapping values are not allowed in this context"},
		{"@x\n", "f.yaml:1:1: found character that cannot start any token"},
		{"kind: Pod\nspec: *nope\n", "f.yaml:2:7: unknown anchor 'nope' referenced"},
		{"[a\n", "f.yaml:1: did not find expected ',' or ']'"},
	} {
		_, err := Parse("f.yaml", []byte(tc.data))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %s", tc.data, err, tc.want)
		}
	}
}

func TestSiteWritten(t *testing.T) {
	t.Parallel()
	const d = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	for _, tc := range []struct {
		site Site
		ref  string
		want string
	}{
		{Site{}, "nginx:1.25@" + d, "nginx:1.25@" + d},
		{Site{Part: PartTag}, "registry.example.com:5000/app:1.2@" + d, "1.2@" + d},
		{Site{Part: PartDigest}, "registry.example.com/app@" + d, d},
		{Site{Prefix: "backend="}, "registry.example.com/backend:4@" + d, "backend=registry.example.com/backend:4@" + d},
	} {
		if got := tc.site.Written(tc.ref); got != tc.want {
			t.Errorf("%+v.Written(%s) = %s, want %s", tc.site, tc.ref, got, tc.want)
		}
	}
}

func TestSearchIsBounded(t *testing.T) {
	t.Parallel()
	// A pod spec nested deeper than the search goes is not read; one
	// within reach is.
	nest := func(depth int) string {
		s := "apiVersion: example.com/v1\nkind: Deep\nmetadata: {name: d}\nspec:\n"
		ind := "  "
		for range depth {
			s += ind + "x:\n"
			ind += "  "
		}
		return s + ind + "containers: [{name: c, image: nginx:1.25}]\n"
	}
	for _, tc := range []struct {
		depth int
		want  int
	}{{3, 1}, {maxSearchDepth + 2, 0}} {
		imgs, err := Parse("deep.yaml", []byte(nest(tc.depth)))
		if err != nil || len(imgs) != tc.want {
			t.Errorf("depth %d: %d images, %v; want %d", tc.depth, len(imgs), err, tc.want)
		}
	}
}

// BenchmarkParseCustomKinds reads the custom kinds of crds.yaml, 50 times
// over in one file: the cost of the known-field table and the bounded
// search per object.
func BenchmarkParseCustomKinds(b *testing.B) {
	one, err := os.ReadFile(filepath.Join("testdata", "crds.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(strings.Repeat(string(one)+"---\n", 50))
	objects := 50 * (strings.Count(string(one), "\n---\n") + 1)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if _, err := Parse("crds.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*objects), "ns/object")
}

// FuzzReadCustom reads arbitrary YAML as custom kinds and GitOps objects
// are read: it never panics, and every site's Value says what Written
// says it must for the reference read (what package pin relies on).
func FuzzReadCustom(f *testing.F) {
	for _, name := range []string{"crds.yaml", "gitops.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sites, _, _, err := read("f.yaml", data)
		if err != nil {
			return
		}
		for _, s := range sites {
			if s.Alias || s.Fixed != "" || s.Entry != nil || s.Value == nil {
				continue
			}
			if got := s.Written(s.Ref); got != s.Value.Value && s.Part != PartTag {
				t.Errorf("%d:%d: Value %q, Written(%q) = %q", s.Line, s.Column, s.Value.Value, s.Ref, got)
			}
		}
	})
}
