package render

import (
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/cli"
	helmregistry "helm.sh/helm/v4/pkg/registry"
)

// TestOCIRepositoryCA: an OCIRepository's chart on a registry whose
// certificate only the walk's own CA trusts is fetched over
// Fetch.Transport (--ca-file), and refused without it, with a notice.
func TestOCIRepositoryCA(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	src := writeTree(t, map[string]string{
		"app/Chart.yaml":         "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"app/values.yaml":        "image: reg.example.com/default:1\n",
		"app/templates/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers:\n  - name: app\n    image: {{ .Values.image }}\n",
	})
	c, err := loader.LoadDir(filepath.Join(src, "app"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := chartutil.Save(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := helmregistry.NewClient(helmregistry.ClientOptHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Push(data, u.Host+"/charts/app:1.0.0"); err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, map[string]string{"release.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: app}\n" +
		"spec:\n  url: oci://" + u.Host + "/charts/app\n  ref: {semver: \"1.x\"}\n---\n" +
		"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app}\nspec:\n  chartRef: {kind: OCIRepository, name: app}\n"})
	settings := cli.New()
	settings.RegistryConfig = filepath.Join(t.TempDir(), "registry.json")
	for _, tc := range []struct {
		name  string
		fetch Fetch
		want  string
	}{
		{"the walk's CA", Fetch{Dir: t.TempDir(), Helm: settings, Transport: srv.Client().Transport}, "reg.example.com/default:1"},
		{"system roots", Fetch{Dir: t.TempDir(), Helm: settings}, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imgs, errs := Images(dir, WithFetch(tc.fetch))
			var got []string
			for _, img := range imgs {
				got = append(got, img.Ref)
			}
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Errorf("got %q, want one image or notice with %q", got, tc.want)
			}
		})
	}
}
