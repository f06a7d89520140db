package pin

import (
	stdctx "context"
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
	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/yamlfile"
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
	ps, problems := admission.ReadFiles([]string{dir})
	if len(ps.Rules) != 1 || len(problems) > 0 {
		t.Fatalf("policies: %d rules, problems %+v", len(ps.Rules), problems)
	}
	c := &admission.Checker{Policies: ps, Finder: artifacts.NewFinder(s), Parse: s.Parse, Verifier: admission.CosignVerifier{}}
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Admission: c.Apply,
		Running: func(yamlfile.Image) (string, error) { return d, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Files[0].New) != string(r.Files[0].Old) {
		t.Errorf("pinned a digest admission refuses:\n%s", r.Files[0].New)
	}
	b := findingsOf(r, pinresult.KindBroken)
	if len(b) != 1 {
		t.Fatalf("broken findings %+v, want one", r.Findings)
	}
	for _, want := range []string{"the image is whole", "signature-refused", "require-signed", "no matching signatures"} {
		if !strings.Contains(b[0].Message, want) {
			t.Errorf("refusal %q does not say %q", b[0].Message, want)
		}
	}
}
