package render

import (
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/cli"
)

// TestFetchNotices: a chart that cannot be fetched (its registry or
// repository refuses the connection) is one notice per HelmRelease, at
// its file:line, naming the chart's URL and the network error, in about
// 200 characters: no Helm cache file names or hashes, no advice to run
// helm repo update.
func TestFetchNotices(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/sources.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: app-template}
spec:
  url: oci://127.0.0.1:1/bjw-s-labs/helm/app-template
  ref: {tag: 4.2.0}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: oci}
spec:
  type: oci
  url: oci://127.0.0.1:1/charts
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: http}
spec:
  url: http://127.0.0.1:1/charts
`,
		"apps/releases.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: home}
spec:
  chartRef: {kind: OCIRepository, name: app-template}
  values:
    image: {repository: reg.example.com/home, tag: "1"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: tools}
spec:
  chart:
    spec: {chart: app-template, version: 4.2.0, sourceRef: {kind: HelmRepository, name: oci}}
  values:
    image: {repository: reg.example.com/tools, tag: "1"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  chart:
    spec: {chart: app-template, version: 4.2.0, sourceRef: {kind: HelmRepository, name: http}}
  values:
    image: {repository: reg.example.com/web, tag: "1"}
`,
	})
	settings := cli.New()
	helm := t.TempDir()
	settings.RepositoryCache, settings.RepositoryConfig = filepath.Join(helm, "cache"), filepath.Join(helm, "repositories.yaml")
	settings.RegistryConfig = filepath.Join(helm, "registry.json")
	_, errs := Images(dir, WithFetch(Fetch{Dir: t.TempDir(), Helm: settings}))
	var got []string
	for _, e := range errs {
		got = append(got, strings.TrimPrefix(filepath.ToSlash(e.Error()), filepath.ToSlash(dir)+"/"))
	}
	refused := " not fetched: connection refused"
	check(t, "notices", got, []string{
		"apps/releases.yaml:1: HelmRelease home: chart OCIRepository/app-template not rendered; 1 image(s) read from spec.values (the chart's own defaults unknown); oci://127.0.0.1:1/bjw-s-labs/helm/app-template" + refused,
		"apps/releases.yaml:14: HelmRelease tools: chart app-template not rendered; 1 image(s) read from spec.values (the chart's own defaults unknown); app-template from oci://127.0.0.1:1/charts" + refused,
		"apps/releases.yaml:23: HelmRelease web: chart app-template not rendered; 1 image(s) read from spec.values (the chart's own defaults unknown); app-template from http://127.0.0.1:1/charts" + refused,
	})
	for _, n := range got {
		if len(n) > 240 || strings.Contains(n, "helm repo update") || strings.Contains(n, "helm-manager") || strings.Contains(n, helm) {
			t.Errorf("%d characters, or Helm's cache or advice: %s", len(n), n)
		}
	}
}
