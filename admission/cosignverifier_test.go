package admission

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// signLegacy signs digest in repo as cosign does without the log: the
// simple-signing payload naming the digest, its ECDSA signature in the
// layer's annotation, under the sha256-<hex>.sig tag.
func signLegacy(t *testing.T, repo name.Repository, digest string, key *ecdsa.PrivateKey) {
	t.Helper()
	signAnnotated(t, repo, digest, key, nil, nil)
}

// signAnnotated is signLegacy with annotations in the payload's optional
// map (as cosign sign -a writes them) and in the layer's annotations.
func signAnnotated(t *testing.T, repo name.Repository, digest string, key *ecdsa.PrivateKey, inPayload map[string]any, inLayer map[string]string) {
	t.Helper()
	body, err := payload.Cosign{Image: repo.Digest(digest), Annotations: inPayload}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.SignMessage(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:       static.NewLayer(body, "application/vnd.dev.cosign.simplesigning.v1+json"),
		Annotations: layerAnnotationsOf(inLayer, base64.StdEncoding.EncodeToString(sig)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(strings.Replace(digest, ":", "-", 1)+".sig"), img); err != nil {
		t.Fatal(err)
	}
}

// layerAnnotationsOf is a .sig layer's annotations: the signature and
// those given.
func layerAnnotationsOf(given map[string]string, sig string) map[string]string {
	out := map[string]string{"dev.cosignproject.cosign/signature": sig}
	for k, v := range given {
		out[k] = v
	}
	return out
}

// pushRandom pushes a random image to repo:tag and returns its digest.
func pushRandom(t *testing.T, repo name.Repository, tag string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(tag), img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d.String()
}

// pemOf is key's public key as PEM.
func pemOf(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	b, err := cryptoutils.MarshalPublicKeyToPEM(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCosignVerifier runs cosign's own verification (pkg/cosign) on
// signatures made here as cosign makes them, on a loopback registry:
// the key that signed verifies; another key, a signature copied from
// another digest, and a log the engine requires but the signature does
// not carry are refused, with cosign's text; a registry that is gone is
// unverifiable (a fault), never refused.
func TestCosignVerifier(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	repo, err := name.NewRepository(host+"/team/web", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	keyA, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyB, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signed := pushRandom(t, repo, "v1")
	signLegacy(t, repo, signed, keyA)
	other := pushRandom(t, repo, "v2")
	src, err := remote.Get(repo.Tag(strings.Replace(signed, ":", "-", 1) + ".sig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(repo.Tag(strings.Replace(other, ":", "-", 1)+".sig"), src); err != nil {
		t.Fatal(err)
	}
	gone, _ := name.NewRepository("127.0.0.1:1/team/web", name.Insecure)
	for _, c := range []struct {
		name   string
		ref    name.Digest
		entry  KeyEntry
		want   Outcome
		fault  bool
		reason string
	}{
		{"the signing key", repo.Digest(signed), KeyEntry{PEM: pemOf(t, keyA)}, Verified, false, ""},
		{"another key", repo.Digest(signed), KeyEntry{PEM: pemOf(t, keyB)}, Refused, false, "no matching signatures"},
		{"copied from another digest", repo.Digest(other), KeyEntry{PEM: pemOf(t, keyA)}, Refused, false, "no matching signatures"},
		{"the log required, none carried", repo.Digest(signed), KeyEntry{PEM: pemOf(t, keyA), Tlog: true}, Refused, false, "no transparency-log proof"},
		{"a key that is no key", repo.Digest(signed), KeyEntry{PEM: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", Path: "key.data"}, Unverifiable, false, "key.data does not parse"},
		{"the registry gone", gone.Digest(signed), KeyEntry{PEM: pemOf(t, keyA)}, Unverifiable, true, "reading the signatures"},
		// A keyless entry with no roots at hand: a key-signed signature
		// carries no certificate, which cosign refuses whatever the roots.
		{"keyless, no roots, a key-signed signature", repo.Digest(signed), KeyEntry{Keyless: &Keyless{kyverno: &kyvernoCert{}}, Path: "keyless"}, Refused, false, "carry no certificate"},
		{"keyless, no roots, nothing signed", repo.Digest(pushRandom(t, repo, "v3")), KeyEntry{Keyless: &Keyless{kyverno: &kyvernoCert{}}, Path: "keyless"}, Unverifiable, false, supplyCA},
		{"keyless, no roots, the registry gone", gone.Digest(signed), KeyEntry{Keyless: &Keyless{kyverno: &kyvernoCert{}}, Path: "keyless"}, Unverifiable, false, supplyCA},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := CosignVerifier{}.VerifyLegacy(context.Background(), c.ref, c.ref.Context(), c.entry)
			if v.Outcome != c.want || v.Fault != c.fault || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("got %+v; want outcome %d, fault %v, reason with %q", v, c.want, c.fault, c.reason)
			}
		})
	}
}

// TestCosignVerifierAnnotations: an entry's annotations verified by
// cosign's own calls on signatures made here: in the payload (Kyverno's
// ClusterPolicy, cosign verify -a) a signature holding env=prod passes
// env=prod and is refused for env=dev with cosign's text; in the layer
// (Kyverno's ImageValidatingPolicy) the payload's annotation does not
// count, the layer's does.
func TestCosignVerifierAnnotations(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo, err := name.NewRepository(strings.TrimPrefix(srv.URL, "http://")+"/team/web", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	inPayload := pushRandom(t, repo, "v1")
	signAnnotated(t, repo, inPayload, key, map[string]any{"env": "prod"}, nil)
	inLayer := pushRandom(t, repo, "v2")
	signAnnotated(t, repo, inLayer, key, nil, map[string]string{"env": "prod"})
	prod, dev := map[string]string{"env": "prod"}, map[string]string{"env": "dev"}
	for _, c := range []struct {
		name   string
		digest string
		entry  KeyEntry
		want   Outcome
		reason string
	}{
		{"payload env=prod, asked env=prod", inPayload, KeyEntry{PEM: pemOf(t, key), Annotations: prod}, Verified, ""},
		{"payload env=prod, asked env=dev", inPayload, KeyEntry{PEM: pemOf(t, key), Annotations: dev, Path: "p"}, Refused, "missing or incorrect annotation; the entry at p requires the signed payload to hold the annotations env=dev"},
		{"payload env=prod, asked in the layer", inPayload, KeyEntry{PEM: pemOf(t, key), Annotations: prod, annotationsInLayer: true}, Refused, "OCI layer annotations"},
		{"layer env=prod, asked in the layer", inLayer, KeyEntry{PEM: pemOf(t, key), Annotations: prod, annotationsInLayer: true}, Verified, ""},
		{"layer env=prod, asked in the payload", inLayer, KeyEntry{PEM: pemOf(t, key), Annotations: prod}, Refused, "missing or incorrect annotation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := repo.Digest(c.digest)
			v := CosignVerifier{}.VerifyLegacy(context.Background(), ref, ref.Context(), c.entry)
			if v.Outcome != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("got %+v; want outcome %d, reason with %q", v, c.want, c.reason)
			}
		})
	}
}
