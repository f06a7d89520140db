package scan_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// TestPullPathMirrorCapNotice: a hosts.toml with more mirrors than
// pullpath.MaxMirrors gives the run an input notice at the line of the
// first mirror left out, and the image is still checked (the mirrors
// asked answer 404, the registry serves it).
func TestPullPathMirrorCapNotice(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := fixture.Push(context.Background(), host, "t/")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server = \"http://%s\"\n", host)
	for i := range pullpath.MaxMirrors + 2 {
		fmt.Fprintf(&b, "[host.\"http://%s/m%d\"]\n", host, i) // line 2+i
	}
	dir := filepath.Join(t.TempDir(), strings.Replace(host, ":", "_", 1)+"_")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "hosts.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scan.New(scan.WithPullPathFile(path), scan.WithInsecureRegistries(host))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), []types.Target{{Ref: imgs[0].Ref}})
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Images[0].Verdict; v != types.OK {
		t.Errorf("verdict %s, want ok: %+v", v, res.Images[0].Findings)
	}
	want := types.InputError{Source: path, Line: 2 + pullpath.MaxMirrors, Notice: true}
	if len(res.InputErrors) != 1 {
		t.Fatalf("InputErrors = %+v, want one notice", res.InputErrors)
	}
	got := res.InputErrors[0]
	if got.Source != want.Source || got.Line != want.Line || !got.Notice || !strings.Contains(got.Message, "the last 2 are not checked") {
		t.Errorf("notice = %+v, want at %s:%d", got, want.Source, want.Line)
	}
}
