package s3registry

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/loopback"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// Bucket is the S3 bucket the registry stores into.
const Bucket = "registry"

// Registry is distribution v3.1.2 configured as production runs it: the s3
// storage driver against an S3 server with blob redirects left on (a blob
// GET or HEAD answers 307 to a presigned URL on the S3 server's host:port),
// TLS with a certificate from a test CA, and token authentication against
// an Issuer that accepts one username and password. Every part listens on
// 127.0.0.1 only.
type Registry struct {
	// Addr is the registry's host:port.
	Addr string
	// Username and Password are what the token service accepts. The
	// password is random per run, so finding it in output means a leak.
	Username, Password string
	// CA signed the registry's and the issuer's certificates; CA.File is
	// what --ca-file takes.
	CA *CA
	// S3 is the storage the registry writes to, bucket Bucket.
	S3 *S3
	// Issuer is the token service; it remembers every token it issued.
	Issuer *Issuer

	dir, config string
	proc
}

// Start starts the S3 server, the token issuer and the registry, with their
// files under dir. The binaries come from hack/build-bins.sh.
func Start(ctx context.Context, dir string) (_ *Registry, err error) {
	regBin, err := bins.Path(registry.V3)
	if err != nil {
		return nil, err
	}
	s3Bin, err := bins.Path(S3Server)
	if err != nil {
		return nil, err
	}
	pw := make([]byte, 12)
	rand.Read(pw)
	r := &Registry{Username: "regcheck-ci", Password: "pw-" + hex.EncodeToString(pw), dir: dir, config: filepath.Join(dir, "config.yml")}
	defer func() {
		if err != nil {
			r.Stop()
		}
	}()
	if r.CA, err = NewCA(dir); err != nil {
		return nil, err
	}
	if r.S3, err = StartS3(ctx, s3Bin, dir); err != nil {
		return nil, err
	}
	if err := r.S3.CreateBucket(ctx, Bucket); err != nil {
		return nil, fmt.Errorf("creating bucket %s: %w", Bucket, err)
	}
	if r.Issuer, err = StartIssuer(dir, r.CA, "regcheck-test-registry", r.Username, r.Password); err != nil {
		return nil, err
	}
	_, certFile, keyFile, err := r.CA.Issue(dir, "registry")
	if err != nil {
		return nil, err
	}
	if r.Addr, err = loopback.FreeAddr(); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  s3:
    accesskey: regcheck-test-access-key
    secretkey: regcheck-test-secret-key
    region: us-east-1
    regionendpoint: %s
    forcepathstyle: true
    secure: false
    v4auth: true
    bucket: %s
  # Blob GET and HEAD answer 307 to a presigned S3 URL, as in production.
  redirect:
    disable: false
  # As distribution's own example config: a blob known to the registry is
  # redirected to S3 without asking S3 whether it is still there.
  cache:
    blobdescriptor: inmemory
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: regcheck-test-only
  tls:
    certificate: %s
    key: %s
auth:
  token:
    realm: %s
    service: %s
    issuer: %s
    rootcertbundle: %s
`, r.S3.Endpoint(), Bucket, r.Addr, certFile, keyFile, r.Issuer.Realm(), r.Issuer.Service, r.Issuer.Name, r.Issuer.CertFile)
	if err := os.WriteFile(r.config, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("writing registry config: %w", err)
	}
	if err := r.start(filepath.Join(dir, "registry.log"), regBin, "serve", r.config); err != nil {
		return nil, err
	}
	if err := r.waitReady(ctx); err != nil {
		return nil, fmt.Errorf("registry on %s: %w\n%s", r.Addr, err, r.tail())
	}
	return r, nil
}

// waitReady waits for the registry's TLS version check to answer with the
// token challenge naming the issuer.
func (r *Registry) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := &http.Client{Transport: r.CA.Transport()}
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+r.Addr+"/v2/", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			ch := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode == http.StatusUnauthorized && strings.Contains(ch, r.Issuer.Realm()) {
				return nil
			}
			last = fmt.Sprintf("status %d, challenge %q", resp.StatusCode, ch)
		} else {
			last = err.Error()
		}
		select {
		case <-r.exited():
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("not ready (%s): %w", last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Host returns host:port, for image references.
func (r *Registry) Host() string { return r.Addr }

// Transport is an HTTP transport that trusts the test CA.
func (r *Registry) Transport() *http.Transport { return r.CA.Transport() }

// Auth is the registry's username and password.
func (r *Registry) Auth() authn.Authenticator {
	return &authn.Basic{Username: r.Username, Password: r.Password}
}

// BasicAuth is base64(username:password), as a Docker config's "auth" holds it.
func (r *Registry) BasicAuth() string {
	return base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))
}

// DockerConfigJSON is a Docker config.json (and a kubernetes.io/dockerconfigjson
// secret's .dockerconfigjson) with the registry's credentials.
func (r *Registry) DockerConfigJSON() []byte {
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{r.Addr: map[string]string{"auth": r.BasicAuth()}}})
	return b
}

// DeleteManifest deletes a manifest by digest through the registry API
// (DELETE /v2/<repo>/manifests/<digest>).
func (r *Registry) DeleteManifest(ctx context.Context, repo, digest string) error {
	return r.delete(ctx, repo, "manifests", digest)
}

// DeleteBlob unlinks a blob from a repository through the registry API
// (DELETE /v2/<repo>/blobs/<digest>); other repositories keep it.
func (r *Registry) DeleteBlob(ctx context.Context, repo, digest string) error {
	return r.delete(ctx, repo, "blobs", digest)
}

// BlobKey is the S3 key of a blob's data in the registry's storage layout.
func BlobKey(digest string) string {
	algo, hex, _ := strings.Cut(digest, ":")
	if len(hex) < 2 {
		return ""
	}
	return fmt.Sprintf("docker/registry/v2/blobs/%s/%s/%s/data", algo, hex[:2], hex)
}

// DeleteBlobData deletes a blob's data from the bucket behind the
// registry's back, as a lifecycle rule or an operator would: the registry
// still knows the blob and goes on redirecting to it.
func (r *Registry) DeleteBlobData(ctx context.Context, digest string) error {
	return r.S3.DeleteObject(ctx, Bucket, BlobKey(digest))
}

// Answer is what a registry request met: the registry's own status and, for
// a redirect, the redirect's target and the status found there.
type Answer struct {
	Status   int
	Location string // the redirect's target, "" without one
	Final    int    // the status at Location (fetched without credentials), or Status
}

// HeadBlob asks, with a pull token, HEAD /v2/<repo>/blobs/<digest>, and
// follows a redirect once without credentials: what a client that pulls it
// would meet.
func (r *Registry) HeadBlob(ctx context.Context, repo, digest string) (Answer, error) {
	return r.head(ctx, repo, "blobs", digest)
}

// HeadManifest asks, with a pull token, HEAD /v2/<repo>/manifests/<digest>.
func (r *Registry) HeadManifest(ctx context.Context, repo, digest string) (Answer, error) {
	return r.head(ctx, repo, "manifests", digest)
}

func (r *Registry) head(ctx context.Context, repo, kind, digest string) (Answer, error) {
	resp, err := r.api(ctx, http.MethodHead, repo, kind, digest, transport.PullScope)
	if err != nil {
		return Answer{}, err
	}
	resp.Body.Close()
	a := Answer{Status: resp.StatusCode, Final: resp.StatusCode}
	if a.Status/100 != 3 {
		return a, nil
	}
	a.Location = resp.Header.Get("Location")
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, a.Location, nil)
	if err != nil {
		return a, fmt.Errorf("redirect to %q: %w", a.Location, err)
	}
	resp, err = (&http.Client{Transport: r.Transport(), CheckRedirect: noRedirect}).Do(req)
	if err != nil {
		return a, err
	}
	resp.Body.Close()
	a.Final = resp.StatusCode
	return a, nil
}

func (r *Registry) delete(ctx context.Context, repo, kind, digest string) error {
	resp, err := r.api(ctx, http.MethodDelete, repo, kind, digest, transport.DeleteScope)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("DELETE /v2/%s/%s/%s: status %d: %s", repo, kind, digest, resp.StatusCode, body)
	}
	return nil
}

// api sends one request to the registry API with a token for scope, and
// does not follow redirects.
func (r *Registry) api(ctx context.Context, method, repo, kind, digest, scope string) (*http.Response, error) {
	ref, err := name.NewRepository(r.Addr + "/" + repo)
	if err != nil {
		return nil, err
	}
	rt, err := transport.NewWithContext(ctx, ref.Registry, r.Auth(), r.Transport(), []string{ref.Scope(scope)})
	if err != nil {
		return nil, fmt.Errorf("authenticating to %s: %w", r.Addr, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("https://%s/v2/%s/%s/%s", r.Addr, repo, kind, digest), nil)
	if err != nil {
		return nil, err
	}
	if kind == "manifests" {
		req.Header.Set("Accept", strings.Join([]string{
			"application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
			"application/vnd.docker.distribution.manifest.list.v2+json", "application/vnd.docker.distribution.manifest.v2+json",
		}, ", "))
	}
	return (&http.Client{Transport: rt, CheckRedirect: noRedirect}).Do(req)
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Stop ends the registry, the issuer and the S3 server.
func (r *Registry) Stop() error {
	err := r.stop()
	if r.Issuer != nil {
		r.Issuer.Close()
	}
	if r.S3 != nil {
		err = errors.Join(err, r.S3.Stop())
	}
	return err
}
