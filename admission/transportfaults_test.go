package admission

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/sigstore/cosign/v3/pkg/oci"
	cstatic "github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/types"
)

// attestLegacy attests digest in repo as cosign attest
// --new-bundle-format=false does: an in-toto statement of predicate type
// pt about the digest, in a DSSE envelope signed with key, as the layer
// of the sha256-<hex>.att tag, annotated with its predicate type.
func attestLegacy(t *testing.T, repo name.Repository, digest, pt string, key *ecdsa.PrivateKey) {
	t.Helper()
	hex := strings.TrimPrefix(digest, "sha256:")
	st := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":%q,"subject":[{"name":%q,"digest":{"sha256":%q}}],"predicate":{}}`, pt, repo.Name(), hex)
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	env, err := dsse.WrapSigner(sv, "application/vnd.in-toto+json").SignMessage(strings.NewReader(st))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:       static.NewLayer(env, "application/vnd.dsse.envelope.v1+json"),
		Annotations: map[string]string{"dev.cosignproject.cosign/signature": "", "predicateType": pt},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag("sha256-"+hex+".att"), img); err != nil {
		t.Fatal(err)
	}
}

// TestCosignVerifierRegistryFaults: a registry that fails cosign's GET of
// a signature's or attestation's layer, through the fault proxy, leaves
// the verification unverifiable, a fault with its cause (cosign folds
// the failed read into "no matching signatures"), never refused; the
// registry's own 404 on the layer is still cosign's refusal, and so is
// another key with no fault.
func TestCosignVerifierRegistryFaults(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	keyA, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyB, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	up, _ := name.NewRepository(host+"/team/web", name.Insecure)
	signed := pushRandom(t, up, "v1")
	signLegacy(t, up, signed, keyA)
	attestLegacy(t, up, signed, slsa, keyA)
	blobGET := func(f faultproxy.Fault) []faultproxy.Rule {
		return []faultproxy.Rule{{Fault: f, Kinds: []faultproxy.Kind{faultproxy.Blob}, Methods: []string{http.MethodGet}}}
	}
	sig := func(ctx context.Context, ref name.Digest, e KeyEntry) Verdict {
		return CosignVerifier{}.VerifyLegacy(ctx, ref, ref.Context(), e)
	}
	att := func(ctx context.Context, ref name.Digest, e KeyEntry) Verdict {
		return CosignVerifier{}.VerifyAttestation(ctx, ref, ref.Context(), e, Legacy, slsa)
	}
	for _, c := range []struct {
		name   string
		rules  []faultproxy.Rule
		verify func(context.Context, name.Digest, KeyEntry) Verdict
		key    *ecdsa.PrivateKey
		want   Outcome
		code   types.Code // the finding a fault makes
		reason string
	}{
		{"503 on the signature's layer", blobGET(faultproxy.Unavailable), sig, keyA, Unverifiable, types.RegistryFault, "503"},
		{"429 on the signature's layer", blobGET(faultproxy.TooManyRequests), sig, keyA, Unverifiable, types.RateLimited, "429"},
		{"connection reset on the signature's layer", blobGET(faultproxy.Reset), sig, keyA, Unverifiable, types.Unreachable, "GET"},
		{"503 on the attestation's layer", blobGET(faultproxy.Unavailable), att, keyA, Unverifiable, types.RegistryFault, "503"},
		{"503 on the layer, another key", blobGET(faultproxy.Unavailable), sig, keyB, Unverifiable, types.RegistryFault, "503"},
		{"the registry's 404 on the signature's layer", blobGET(faultproxy.NotFound), sig, keyA, Refused, "", "no matching signatures"},
		{"no fault, another key", nil, sig, keyB, Refused, "", "no matching signatures"},
		{"no fault, another key, attestation", nil, att, keyB, Refused, "", "no matching attestations"},
		{"no fault, the signing key", nil, sig, keyA, Verified, "", ""},
		{"no fault, the signing key, attestation", nil, att, keyA, Verified, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := faultproxy.Start(faultproxy.Config{Upstream: host, Rules: c.rules})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			repo, _ := name.NewRepository(p.Host()+"/team/web", name.Insecure)
			v := c.verify(context.Background(), repo.Digest(signed), KeyEntry{PEM: pemOf(t, c.key)})
			if len(c.rules) > 0 && p.Total() == 0 {
				t.Fatal("the fault proxy injected nothing: the case tested nothing")
			}
			fault := c.code != ""
			if v.Outcome != c.want || v.Fault != fault || !strings.Contains(v.Reason, c.reason) {
				t.Fatalf("got %+v; want outcome %d, fault %v, reason with %q", v, c.want, fault, c.reason)
			}
			if fault && types.FaultCode(v.Cause) != c.code {
				t.Errorf("cause %v is %q, want %q", v.Cause, types.FaultCode(v.Cause), c.code)
			}
		})
	}
}

// countingTransport counts the GETs of blobs it sends.
type countingTransport struct {
	mu    sync.Mutex
	blobs int
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
		c.mu.Lock()
		c.blobs++
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestVerifierTransport: the verifier sends its requests through the
// Transport given (the Scanner's), and a verified legacy attestation's
// layer is read once: its predicate type is read from cosign's copy, not
// fetched again.
func TestVerifierTransport(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo, _ := name.NewRepository(strings.TrimPrefix(srv.URL, "http://")+"/team/web", name.Insecure)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signed := pushRandom(t, repo, "v1")
	attestLegacy(t, repo, signed, slsa, key)
	rt := &countingTransport{}
	v := CosignVerifier{Transport: rt}.VerifyAttestation(context.Background(), repo.Digest(signed), repo, KeyEntry{PEM: pemOf(t, key)}, Legacy, slsa)
	if v.Outcome != Verified {
		t.Fatalf("got %+v, want verified", v)
	}
	if rt.blobs != 1 {
		t.Errorf("%d blob GETs through the transport given, want 1 (the attestation's layer, once)", rt.blobs)
	}
}

// ociSignature names the interface payloadless embeds (its methods
// include Signature).
type ociSignature = oci.Signature

// payloadless is an attestation whose payload cannot be read.
type payloadless struct{ ociSignature }

func (payloadless) Payload() ([]byte, error) {
	return nil, errors.New("GET blob: 503 Service Unavailable")
}

// TestAttestationPredicateFaults: an attestation whose payload cannot be
// read, or does not parse, says so as a fault (registry-error,
// bad-response), never a refusal.
func TestAttestationPredicateFaults(t *testing.T) {
	garbled, err := cstatic.NewAttestation([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"not base64!"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		att  oci.Signature
		code types.Code
	}{
		{"the payload not read", payloadless{}, types.RegistryFault},
		{"the DSSE payload not base64", garbled, types.BadResponse},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := attestationPredicate(c.att)
			if err == nil || types.FaultCode(err) != c.code {
				t.Errorf("got %v (%q), want a %s", err, types.FaultCode(err), c.code)
			}
		})
	}
}
