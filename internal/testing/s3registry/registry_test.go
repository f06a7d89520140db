//go:build integration

package s3registry

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/internal/testing/fixture"
)

// TestRegistry checks the harness itself with go-containerregistry, before
// regcheck is put against it: TLS from the test CA, tokens only for the
// right password, blob redirects to S3, and the three ways to damage it.
func TestRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })

	ref := r.Host() + "/smoke/app:v1"
	digest, err := fixture.PushSingle(ctx, ref, "smoke app", remote.WithAuth(r.Auth()), remote.WithTransport(r.Transport()))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Issuer.Tokens()) == 0 {
		t.Fatal("pushed without a token from the issuer")
	}

	// Anonymous, and with the wrong password: no token, no pull.
	tag, _ := name.NewTag(ref)
	if _, err := remote.Head(tag, remote.WithTransport(r.Transport())); err == nil {
		t.Error("anonymous HEAD of the manifest succeeded")
	}
	refused := r.Issuer.Refused()
	if _, err := remote.Head(tag, remote.WithTransport(r.Transport()), remote.WithAuth(&wrongPassword{r.Username})); err == nil {
		t.Error("HEAD with a wrong password succeeded")
	}
	if r.Issuer.Refused() == refused {
		t.Error("the issuer refused nothing for a wrong password")
	}
	// Without the CA, the certificate is not trusted.
	if _, err := remote.Head(tag, remote.WithTransport(http.DefaultTransport.(*http.Transport).Clone()), remote.WithAuth(r.Auth())); err == nil {
		t.Error("HEAD trusting only the system roots succeeded")
	}

	img, err := remote.Image(tag, remote.WithTransport(r.Transport()), remote.WithAuth(r.Auth()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	layer := m.Layers[0].Digest.String()
	a, err := r.HeadBlob(ctx, "smoke/app", layer)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := url.Parse(a.Location)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != http.StatusTemporaryRedirect || loc.Host != r.S3.Addr || loc.Query().Get("X-Amz-Signature") == "" || a.Final != http.StatusOK {
		t.Fatalf("blob HEAD: %+v; want 307 to a presigned URL on %s answering 200", a, r.S3.Addr)
	}

	// The bucket refuses a presigned request that also carries a token, as S3 does.
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, a.Location, nil)
	req.Header.Set("Authorization", "Bearer "+r.Issuer.Tokens()[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("presigned HEAD with a bearer token: %d, want 400", resp.StatusCode)
	}

	// Blob data deleted from the bucket: the registry still redirects, S3 says 404.
	if err := r.DeleteBlobData(ctx, layer); err != nil {
		t.Fatal(err)
	}
	if a, err := r.HeadBlob(ctx, "smoke/app", layer); err != nil || a.Status != http.StatusTemporaryRedirect || a.Final != http.StatusNotFound {
		t.Errorf("blob HEAD after its data was deleted: %+v, %v; want 307 then 404", a, err)
	}
	// Blob unlinked through the API: the registry says 404 itself.
	cfg := m.Config.Digest.String()
	if err := r.DeleteBlob(ctx, "smoke/app", cfg); err != nil {
		t.Fatal(err)
	}
	if a, err := r.HeadBlob(ctx, "smoke/app", cfg); err != nil || a.Status != http.StatusNotFound {
		t.Errorf("blob HEAD after DELETE: %+v, %v; want 404", a, err)
	}
	// Manifest deleted through the API.
	if a, err := r.HeadManifest(ctx, "smoke/app", digest); err != nil || a.Status != http.StatusOK {
		t.Fatalf("manifest HEAD: %+v, %v; want 200", a, err)
	}
	if err := r.DeleteManifest(ctx, "smoke/app", digest); err != nil {
		t.Fatal(err)
	}
	if a, err := r.HeadManifest(ctx, "smoke/app", digest); err != nil || a.Status != http.StatusNotFound {
		t.Errorf("manifest HEAD after DELETE: %+v, %v; want 404", a, err)
	}
}

type wrongPassword struct{ user string }

func (w *wrongPassword) Authorization() (*authn.AuthConfig, error) {
	return &authn.AuthConfig{Username: w.user, Password: "not-the-password"}, nil
}
