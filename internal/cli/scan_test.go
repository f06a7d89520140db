package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/report"
)

// TestScanExitCodes runs the scan command on buffers against an in-memory
// registry from which one index child was deleted: the exit-code contract.
func TestScanExitCodes(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := fixture.Push(context.Background(), host, "t/")
	if err != nil {
		t.Fatal(err)
	}
	var broken, intact string
	for _, im := range imgs {
		switch im.Name {
		case "multiarch":
			broken = im.Ref
			req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v2/t/multiarch/manifests/"+im.Children[1].Digest.String(), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusAccepted {
				t.Fatalf("deleting a child: %v %v", err, resp)
			}
			resp.Body.Close()
		case "single":
			intact = im.Ref
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n      image: "+intact+"\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("kind: Pod\nspec: [\n"), 0o644)

	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"intact", []string{intact}, ExitClean},
		{"broken", []string{intact, broken}, ExitFindings},
		{"broken, fail-on never", []string{"--fail-on", "never", broken}, ExitClean},
		{"unreachable is incomplete", []string{"--timeout", "2s", closed + "/x:v1"}, ExitIncomplete},
		{"broken wins over unreachable", []string{"--timeout", "2s", broken, closed + "/x:v1"}, ExitFindings},
		{"an unreadable file is incomplete", []string{"-f", good, "-f", bad}, ExitIncomplete},
		{"invalid reference is broken", []string{"Not/A:Valid:Ref"}, ExitFindings},
		{"nothing to scan", nil, ExitUsage},
		{"unknown flag", []string{"--no-such-flag", intact}, ExitUsage},
		{"bad --fail-on", []string{"--fail-on", "sometimes", intact}, ExitUsage},
		{"bad --platform", []string{"--platform", "linux", intact}, ExitUsage},
		{"kube flags without --cluster", []string{"-A", intact}, ExitUsage},
		{"stdin twice", []string{"-f", "-", "--images-from", "-"}, ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"scan"}, tc.args...))
			if code != tc.want {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.want, out.String(), errb.String())
			}
		})
	}

	t.Run("json names every use", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), Streams{Out: &out, Err: &errb}, []string{"scan", "-o", "json", "-f", good, intact}); code != ExitClean {
			t.Fatalf("exit %d\n%s", code, errb.String())
		}
		var doc report.Document
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Images) != 1 || len(doc.Images[0].Uses) != 2 || doc.Images[0].Uses[1].File != good || doc.Images[0].Uses[1].Line != 7 {
			t.Fatalf("uses %+v", doc.Images[0].Uses)
		}
	})
}
