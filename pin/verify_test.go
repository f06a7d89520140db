package pin

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/regcheck/regcheck/admission"
)

// signWith signs repo@digest as cosign does without the log (the
// simple-signing payload, its signature in the layer's annotation, the
// .sig tag).
func signWith(t *testing.T, repo name.Repository, digest string, key *ecdsa.PrivateKey) {
	t.Helper()
	body, err := payload.Cosign{Image: repo.Digest(digest)}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := sv.SignMessage(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(body, "application/vnd.dev.cosign.simplesigning.v1+json"),
		Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag(strings.Replace(digest, ":", "-", 1)+".sig"), img); err != nil {
		t.Fatal(err)
	}
}

// TestRunRefusesWrongKey: a digest signed with another key than the one
// the enforcing policy names is refused as admission refuses it
// (signature-refused), the image said whole, not its tree broken.
func TestRunRefusesWrongKey(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	ref := host + "/app:v1"
	d := pushImage(t, ref, "signed with B")
	repo, err := name.NewRepository(host+"/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	keyA, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	keyB, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signWith(t, repo, d, keyB)
	pubA, err := cryptoutils.MarshalPublicKeyToPEM(keyA.Public())
	if err != nil {
		t.Fatal(err)
	}
	policy := strings.NewReplacer("HOST", host, `"cosign.pub"`, strconv.Quote(string(pubA))).Replace(enforcedPolicy) +
		"                    rekor: {ignoreTlog: true}\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(testDeployment("prod", "app", ref)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	m := refusal(t, s, dir, d, admission.CosignVerifier{}).Message
	for _, want := range []string{"the image is whole", "signature-refused", "require-signed", "no matching signatures"} {
		if !strings.Contains(m, want) {
			t.Errorf("refusal %q does not say %q", m, want)
		}
	}
}
