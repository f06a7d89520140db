package front

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestKinds: each front answers a blob HEAD as its product does, before
// and after a GET of the blob went through it, and passes the GET on.
func TestKinds(t *testing.T) {
	up := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(up.Close)
	host := strings.TrimPrefix(up.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(host+"/r:v1", name.Insecure)
	if err := remote.Write(ref, img, remote.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	ls, _ := img.Layers()
	d, _ := ls[0].Digest()
	absent := "sha256:" + strings.Repeat("0", 64)
	tests := []struct {
		kind                     Kind
		headBefore, headAfter    int
		get, getAbsent, headGone int
		artifactoryID            bool
	}{
		{Harbor, 404, 200, 200, 404, 404, false},
		{Artifactory, 200, 200, 200, 404, 200, true},
		{ECRPublic, 403, 403, 200, 404, 403, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.kind), func(t *testing.T) {
			f, err := Start(tc.kind, host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			ask := func(method, dg string) *http.Response {
				req, _ := http.NewRequest(method, "http://"+f.Host()+"/v2/r/blobs/"+dg, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			got := []int{ask(http.MethodHead, d.String()).StatusCode, ask(http.MethodGet, d.String()).StatusCode,
				ask(http.MethodHead, d.String()).StatusCode, ask(http.MethodGet, absent).StatusCode, ask(http.MethodHead, absent).StatusCode}
			want := []int{tc.headBefore, tc.get, tc.headAfter, tc.getAbsent, tc.headGone}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("HEAD, GET, HEAD, GET absent, HEAD absent: %v, want %v", got, want)
					break
				}
			}
			if has := ask(http.MethodGet, d.String()).Header.Get(ArtifactoryID) != ""; has != tc.artifactoryID {
				t.Errorf("%s on a GET: %v, want %v", ArtifactoryID, has, tc.artifactoryID)
			}
		})
	}
}
