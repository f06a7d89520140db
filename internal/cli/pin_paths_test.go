package cli

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
)

// TestPinKustomizationPathNames: pin renders and pins a kustomization
// under a folder whose name holds a comma, a space or other characters
// the OS allows: the images entry gains the digest, and nothing is
// reported.
func TestPinKustomizationPathNames(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	digest, err := fixture.PushSingle(context.Background(), host+"/t/app:v2", "pin under odd paths")
	if err != nil {
		t.Fatal(err)
	}
	kust := "resources:\n- deploy.yaml\nimages:\n- name: " + host + "/t/app\n  newTag: v2\n"
	for _, name := range []string{"x,y", "my apps", "café+1@2"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := pinTree(t, map[string]string{
				name + "/app/kustomization.yaml": kust,
				name + "/app/deploy.yaml":        pinDeployment("app", host+"/t/app:v1"),
			})
			app := filepath.Join(dir, name, "app")
			code, out, errs := runPinCmd(t, "--write", app)
			if code != 0 {
				t.Fatalf("exit %d, want 0\n%s%s", code, out, errs)
			}
			got, err := os.ReadFile(filepath.Join(app, "kustomization.yaml"))
			if want := kust + "  digest: " + digest + "\n"; err != nil || string(got) != want {
				t.Errorf("kustomization.yaml (%v):\n%s\nwant:\n%s", err, got, want)
			}
		})
	}
}
