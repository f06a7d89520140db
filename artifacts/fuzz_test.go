package artifacts_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
)

// fuzzSubject is the image manifest whose referrers the fuzzer lists.
var fuzzSubject = []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`)

// handlerTransport answers every request with h, in process: a fuzzer
// runs thousands of Finds, which sockets would slow down.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// referrersHandler serves one repository, "r": the subject, a referrers
// answer (body, with content type ct), and under the referrers tag the
// same body as an index, as the referrers tag schema stores it. The API
// answers 404 when viaTag, so that the tag is read.
func referrersHandler(body []byte, ct string, viaTag bool) http.Handler {
	sub := digest.FromBytes(fuzzSubject).String()
	tag := scan.ReferrersTag(sub)
	bodyDigest := digest.FromBytes(body).String()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serve := func(data []byte, ct, d string) {
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Docker-Content-Digest", d)
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			if r.Method != http.MethodHead {
				w.Write(data)
			}
		}
		switch p := r.URL.Path; {
		case p == "/v2/":
			w.WriteHeader(http.StatusOK)
		case p == "/v2/r/tags/list":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"r","tags":["v1",%q]}`, tag)
		case p == "/v2/r/manifests/"+sub:
			serve(fuzzSubject, ocispec.MediaTypeImageManifest, sub)
		case p == "/v2/r/referrers/"+sub && !viaTag:
			serve(body, ct, bodyDigest)
		case viaTag && (p == "/v2/r/manifests/"+tag || p == "/v2/r/manifests/"+bodyDigest):
			serve(body, ocispec.MediaTypeImageIndex, bodyDigest)
		default:
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
		}
	})
}

// FuzzReferrers hands the Finder any referrers answer, through the API and
// under the referrers tag: it never panics, keeps at most MaxReferrers
// artifacts per subject, gives every fault a code, and never calls a
// signature missing when a fault (an answer it could not read) could
// hide one.
func FuzzReferrers(f *testing.F) {
	sig := func(i int) string {
		return fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":%q,"size":100,"artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`,
			digest.FromString(fmt.Sprint(i)))
	}
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[`+sig(1)+`]}`), ocispec.MediaTypeImageIndex, false)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[`+sig(1)+`,`+sig(2)+`]}`), ocispec.MediaTypeImageIndex, true)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`), ocispec.MediaTypeImageIndex, false)
	f.Add([]byte(`{"schemaVersion":2,"manifests":[{"digest":"sha256:zz","size":-1}]}`), ocispec.MediaTypeImageIndex, false)
	f.Add([]byte(`<html>sign in</html>`), "text/html", false)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{},"layers":[]}`), ocispec.MediaTypeImageManifest, true)
	f.Fuzz(func(t *testing.T, body []byte, ct string, viaTag bool) {
		const host = "127.0.0.1:1" // never dialled: the transport answers
		s, err := scan.New(scan.WithInsecureRegistries(host), scan.WithRetry(1, time.Millisecond),
			scan.WithTransport(handlerTransport{referrersHandler(body, ct, viaTag)}))
		if err != nil {
			t.Fatal(err)
		}
		repo, err := name.NewRepository(host+"/r", name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		set, err := artifacts.NewFinder(s).Find(ctx, repo, digest.FromBytes(fuzzSubject).String())
		if err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatalf("Find took over 5 s (%d artifacts, faults %+v)", len(set.Artifacts), set.Faults)
		}
		if n := len(set.Artifacts); n > artifacts.MaxReferrers+4 {
			t.Errorf("%d artifacts, more than MaxReferrers", n)
		}
		for _, f := range set.Faults {
			if f.Code == "" {
				t.Errorf("a fault without a code: %+v", f)
			}
		}
		if got := set.Presence(artifacts.Query{Kind: artifacts.Signature}); got == artifacts.Missing && len(set.Faults) > 0 {
			t.Errorf("signature missing despite faults %+v", set.Faults)
		}
	})
}
