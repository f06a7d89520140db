package admission

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/types"
)

// signBundle attaches to digest in repo a sigstore bundle (v0.3, a DSSE
// envelope of an in-toto statement of predicate type pt about the
// digest, signed with key, no log entry) as cosign v3 writes it
// (WriteAttestationNewBundleFormat: an OCI 1.1 referrer, listed in the
// referrers tag where the registry has no referrers API). statement, if
// not "", is the envelope's payload in place of the statement. It
// returns the bundle layer's digest.
func signBundle(t *testing.T, repo name.Repository, digest, pt, statement string, key *ecdsa.PrivateKey) string {
	t.Helper()
	if statement == "" {
		statement = fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":%q,"digest":{"sha256":%q}}],"predicateType":%q,"predicate":{}}`,
			repo.Name(), strings.TrimPrefix(digest, "sha256:"), pt)
	}
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dsse.WrapSigner(sv, "application/vnd.in-toto+json").SignMessage(strings.NewReader(statement))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		PayloadType string `json:"payloadType"`
		Payload     []byte `json:"payload"`
		Signatures  []struct {
			Sig []byte `json:"sig"`
		} `json:"signatures"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	b := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: env.Payload, PayloadType: env.PayloadType, Signatures: []*protodsse.Signature{{Sig: env.Signatures[0].Sig}},
		}},
	}
	body, err := protojson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteAttestationNewBundleFormat(repo.Digest(digest), body, pt); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// cosignSignPredicate is the in-toto predicate type of the statement
// cosign v3 signs an image with in the bundle format.
const cosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"

// TestCosignVerifierBundleFaults: a signature bundle by key A beside an
// attestation bundle by key B, read through the fault proxy. cosign's
// GetBundles passes over the signature bundle whose layer GET fails and
// reads the attestation, which key A does not verify: that is
// unverifiable, a fault with its cause, not refused; where key A signed
// the attestation too it verifies, and it is still a fault: Kyverno's
// fetchBundles fails on the referrer it cannot read. A bundle whose
// statement does not parse is bad-response. Any bundle that verifies is
// a signature, an attestation bundle too (Kyverno type: SigstoreBundle,
// fetchBundles asks no predicate type for a signature; cosign verify
// --new-bundle-format agrees): an image with only an attestation bundle
// by key A verifies with key A. Another key is refused.
func TestCosignVerifierBundleFaults(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	keyA, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyB, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	up, _ := name.NewRepository(host+"/team/web", name.Insecure)
	signed := pushRandom(t, up, "v1")
	sigLayer := signBundle(t, up, signed, cosignSignPredicate, "", keyA)
	signBundle(t, up, signed, slsa, "", keyB)
	both := pushRandom(t, up, "v4")
	bothLayer := signBundle(t, up, both, cosignSignPredicate, "", keyA)
	signBundle(t, up, both, slsa, "", keyA)
	attOnly := pushRandom(t, up, "v3")
	signBundle(t, up, attOnly, slsa, "", keyA)
	garbled := pushRandom(t, up, "v2")
	signBundle(t, up, garbled, cosignSignPredicate, "not a statement", keyA)
	for _, c := range []struct {
		name   string
		rules  []faultproxy.Rule
		digest string
		key    *ecdsa.PrivateKey
		want   Outcome
		code   types.Code // the finding a fault makes; "" for none
		reason string
	}{
		{"503 on the signature bundle's layer", []faultproxy.Rule{{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.Blob}, Methods: []string{http.MethodGet}, Path: sigLayer}},
			signed, keyA, Unverifiable, types.RegistryFault, "503"},
		// cosign passes over the unreadable bundle and verifies the
		// attestation; Kyverno's fetchBundles fails on it: a fault.
		{"503 on one bundle's layer, another by the key", []faultproxy.Rule{{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.Blob}, Methods: []string{http.MethodGet}, Path: bothLayer}},
			both, keyA, Unverifiable, types.RegistryFault, "fetchBundles"},
		{"a statement that does not parse", nil, garbled, keyA, Unverifiable, types.BadResponse, "not an in-toto statement"},
		{"only an attestation bundle, its key", nil, attOnly, keyA, Verified, "", ""},
		{"only an attestation bundle, another key", nil, attOnly, keyB, Refused, "", "no matching bundles"},
		{"no fault, the signing key", nil, signed, keyA, Verified, "", ""},
		{"no fault, the attestation's key", nil, signed, keyB, Verified, "", ""},
		{"no fault, another key", nil, signed, keyC, Refused, "", "no matching bundles"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := faultproxy.Start(faultproxy.Config{Upstream: host, Rules: c.rules})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			repo, _ := name.NewRepository(p.Host()+"/team/web", name.Insecure)
			v := CosignVerifier{}.VerifyBundle(context.Background(), repo.Digest(c.digest), repo, KeyEntry{PEM: pemOf(t, c.key)})
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
