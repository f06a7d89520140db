//go:build integration

package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// kyvernoKeyPolicy is a Kyverno Enforce ClusterPolicy on HOST/REPO* that
// verifies a legacy signature with the key PEM; REKOR is the entry's
// rekor block ("" for none: Kyverno then requires a log entry).
const kyvernoKeyPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-signed
spec:
  rules:
    - name: verify-signature
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/REPO*"]
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    publicKeys: |-
PEM
REKOR`

const ignoreTlogBlock = "                    rekor:\n                      ignoreTlog: true\n"

// cipKeyPolicy is a policy-controller ClusterImagePolicy on HOST/REPO*
// with one key authority and no ctlog: the log is ignored.
const cipKeyPolicy = `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata:
  name: signed-by-key
spec:
  images:
    - glob: "HOST/REPO*"
  authorities:
    - key:
        data: |-
PEM
---
apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels:
    policy.sigstore.dev/include: "true"
`

// tamperSignature rewrites the payload of the .sig manifest of digest in
// repo (one byte of JSON whitespace added): the signature annotation no
// longer signs it.
func tamperSignature(t *testing.T, repo name.Repository, digest string) {
	t.Helper()
	tag := repo.Tag(strings.Replace(digest, ":", "-", 1) + ".sig")
	desc, err := remote.Get(tag)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	layers := m["layers"].([]any)
	l0 := layers[0].(map[string]any)
	blob, err := remote.Layer(repo.Digest(l0["digest"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := blob.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.NewDecoder(rc).Decode(&payload); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	payload["optional"] = map[string]any{"tampered": "yes"}
	body, _ := json.Marshal(payload)
	nl := static.NewLayer(body, ggcrtypes.MediaType(l0["mediaType"].(string)))
	if err := remote.WriteLayer(repo, nl); err != nil {
		t.Fatal(err)
	}
	nd, _ := nl.Digest()
	l0["digest"], l0["size"] = nd.String(), len(body)
	mb, _ := json.Marshal(m)
	if err := remote.Put(tag, rawManifest{mb, desc.MediaType}); err != nil {
		t.Fatal(err)
	}
}

// rawManifest is a manifest's bytes as remote.Put takes them.
type rawManifest struct {
	body []byte
	mt   ggcrtypes.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)            { return m.body, nil }
func (m rawManifest) MediaType() (ggcrtypes.MediaType, error) { return m.mt, nil }

// copySignature puts the .sig manifest of from under the .sig tag of to:
// a signature copied from another image.
func copySignature(t *testing.T, repo name.Repository, from, to string) {
	t.Helper()
	desc, err := remote.Get(repo.Tag(strings.Replace(from, ":", "-", 1) + ".sig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(repo.Tag(strings.Replace(to, ":", "-", 1)+".sig"), desc); err != nil {
		t.Fatal(err)
	}
}

// rekorKey writes a P-256 public key that stands for a Rekor log's: no
// signature in the test was logged with it.
func rekorKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rekor.pub")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestVerifyMatchesCosign holds regcheck's verdict to cosign verify v3.1.3
// with the engine's flags on the same fixture, legacy .sig signatures made
// by the real cosign with keys A and B (no log upload): for each case the
// verdict and cosign's exit status must agree (verified = ok and exit 0;
// refused = broken, signature-refused, and exit non-zero).
func TestVerifyMatchesCosign(t *testing.T) {
	ctx := context.Background()
	a, b := newCosign(t), newCosign(t)
	r := startEmpty(t, registry.V3)
	host := r.Host()
	sign := func(c *cosign.Cosign, repo string) admImage { return pushAndSign(t, c, host, repo) }
	repoOf := func(repo string) name.Repository {
		rp, err := name.NewRepository(host+"/"+repo, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return rp
	}
	rekor := rekorKey(t)
	pemA, pemB := indentPEM(t, a.Pub, 22), indentPEM(t, b.Pub, 22)
	kyverno := func(repo, pem, rekor string) string {
		return strings.NewReplacer("HOST", host, "REPO", repo, "PEM", pem, "REKOR", rekor).Replace(kyvernoKeyPolicy)
	}
	tampered := sign(a, "vtampered")
	tamperSignature(t, repoOf("vtampered"), tampered.digest)
	src := sign(a, "vcopied")
	dst := admImage{ref: host + "/vcopied:other", digest: pushSingle(t, host+"/vcopied:other", "another image")}
	copySignature(t, repoOf("vcopied"), src.digest, dst.digest)
	for _, tt := range []struct {
		name      string
		im        admImage
		policy    string
		pub       string // the key cosign verifies with, as the policy names it
		ignore    bool   // --insecure-ignore-tlog, as the engine ignores the log
		want      types.Verdict
		code      types.Code
		cosignOK  bool
		alsoOldOK string // rotated: the old key still verifies with cosign
	}{
		{name: "good legacy, Kyverno ignoreTlog", im: sign(a, "vgood"), pub: a.Pub, ignore: true, want: types.OK, cosignOK: true},
		{name: "good legacy, policy-controller key without ctlog", im: sign(a, "vgoodcip"), pub: a.Pub, ignore: true, want: types.OK, cosignOK: true},
		{name: "wrong key", im: sign(b, "vwrong"), pub: a.Pub, ignore: true, want: types.Broken, code: types.SignatureRefused},
		{name: "rotated key: the policy names the new key", im: sign(a, "vrotated"), pub: b.Pub, ignore: true, want: types.Broken, code: types.SignatureRefused, alsoOldOK: a.Pub},
		{name: "tampered payload", im: tampered, pub: a.Pub, ignore: true, want: types.Broken, code: types.SignatureRefused},
		{name: "signature copied to another digest", im: dst, pub: a.Pub, ignore: true, want: types.Broken, code: types.SignatureRefused},
		{name: "no log entry under Kyverno's default", im: sign(a, "vnotlog"), pub: a.Pub, ignore: false, want: types.Broken, code: types.SignatureRefused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := strings.SplitN(strings.TrimPrefix(tt.im.ref, host+"/"), ":", 2)[0]
			pem := pemA
			if tt.pub == b.Pub {
				pem = pemB
			}
			policy := kyverno(repo, pem, "")
			switch {
			case strings.Contains(tt.name, "policy-controller"):
				policy = strings.NewReplacer("HOST", host, "REPO", repo, "PEM", indentPEM(t, tt.pub, 10)).Replace(cipKeyPolicy)
			case tt.ignore:
				policy = kyverno(repo, pem, ignoreTlogBlock)
			}
			got := scanWithPolicy(t, tt.im.ref, policy)
			ok, out, err := a.VerifyKey(ctx, host+"/"+repo+"@"+tt.im.digest, tt.pub, cosign.Legacy, tt.ignore, rekor)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("regcheck %s; cosign verify passed=%v: %s", got.Verdict, ok, lastLines(out, 1))
			if ok != tt.cosignOK {
				t.Fatalf("cosign verify passed=%v, want %v (the fixture is not what the case says):\n%s", ok, tt.cosignOK, lastLines(out, 5))
			}
			if got.Verdict != tt.want || (tt.code != "" && findingOf(got, tt.code) == nil) {
				t.Fatalf("regcheck: verdict %s, want %s with %s; cosign verify passed=%v:\n%+v\ncosign: %s", got.Verdict, tt.want, tt.code, ok, got.Findings, lastLines(out, 3))
			}
			if f := findingOf(got, types.SignatureRefused); f != nil && !strings.Contains(f.Message, "require-signed") && !strings.Contains(f.Message, "signed-by-key") {
				t.Errorf("the refusal does not name the policy: %s", f.Message)
			}
			if tt.alsoOldOK != "" {
				if ok, out, _ := a.VerifyKey(ctx, host+"/"+repo+"@"+tt.im.digest, tt.alsoOldOK, cosign.Legacy, true, ""); !ok {
					t.Errorf("rotated: the old key no longer verifies with cosign:\n%s", lastLines(out, 3))
				}
			}
		})
	}
}

// pubYAML is c's public key as the inside of a YAML double-quoted
// string: the policies name the key that signed, so that verification
// passes where only presence is under test.
func pubYAML(t *testing.T, c *cosign.Cosign) string {
	t.Helper()
	b, err := os.ReadFile(c.Pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(strconv.Quote(string(b)), `"`)
}
