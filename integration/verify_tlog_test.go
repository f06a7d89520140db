//go:build integration

package integration

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	cbundle "github.com/sigstore/cosign/v3/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	ctypes "github.com/sigstore/cosign/v3/pkg/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/rekor/pkg/util"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/transparency-dev/merkle/rfc6962"
	"google.golang.org/protobuf/encoding/protojson"

	cosignbin "github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// The in-toto predicate types the fixtures sign: cosign v3's signature
// statement, and the SLSA provenance cosign's --type slsaprovenance names.
const (
	cosignSignType = "https://sigstore.dev/cosign/sign/v1"
	slsaType       = "https://slsa.dev/provenance/v0.2"
)

// entryKind is how a fabricated transparency-log entry is wrong, if it is.
type entryKind int

const (
	goodEntry    entryKind = iota // the fixture's Rekor key, the signature's body
	otherLog                      // promise and checkpoint by another log's key (its log ID)
	forgedEntry                   // the promise by another key, under the fixture's log ID
	otherPayload                  // signed by the fixture's key, the body of another payload
)

// statement is an in-toto v1 statement of predicateType about digest.
func statement(t *testing.T, digest, predicateType string, predicate []byte) []byte {
	t.Helper()
	if predicate == nil {
		predicate = []byte("{}")
	}
	b, err := json.Marshal(map[string]any{"_type": "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "image", "digest": map[string]string{"sha256": strings.TrimPrefix(digest, "sha256:")}}},
		"predicateType": predicateType, "predicate": json.RawMessage(predicate)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// envelope is a DSSE envelope of payload (in-toto), signed by key over
// its pre-authentication encoding, as cosign attest signs, and the
// signature.
func envelope(t *testing.T, key *ecdsa.PrivateKey, payload []byte) (dsse.Envelope, []byte) {
	t.Helper()
	h := sha256.Sum256(dsse.PAE(ctypes.IntotoPayloadType, payload))
	sig, err := ecdsa.SignASN1(rand.Reader, key, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return dsse.Envelope{PayloadType: ctypes.IntotoPayloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []dsse.Signature{{Sig: base64.StdEncoding.EncodeToString(sig)}}}, sig
}

// dsseBody is the Rekor dsse v0.0.1 entry body of an envelope as Rekor
// stores it: the hashes of the envelope and of its payload, and the
// signature with its verifier (the signer's PEM key).
func dsseBody(t *testing.T, envJSON, payload, sig []byte, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	pub, err := cryptoutils.MarshalPublicKeyToPEM(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return dsseBodyOf(t, envJSON, payload, sig, pub)
}

// dsseBodyOf is dsseBody with the signature's verifier given as PEM (a
// public key, or a keyless signer's certificate).
func dsseBodyOf(t *testing.T, envJSON, payload, sig, pub []byte) []byte {
	t.Helper()
	eh, ph := sha256.Sum256(envJSON), sha256.Sum256(payload)
	b, err := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "dsse", "spec": map[string]any{
		"envelopeHash": map[string]string{"algorithm": "sha256", "value": hex.EncodeToString(eh[:])},
		"payloadHash":  map[string]string{"algorithm": "sha256", "value": hex.EncodeToString(ph[:])},
		"signatures":   []any{map[string]string{"signature": base64.StdEncoding.EncodeToString(sig), "verifier": base64.StdEncoding.EncodeToString(pub)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logEntry is the Rekor v1 entry a log would have given for body, at
// time at: its inclusion promise (the SET: the log key's signature over
// the canonical JSON of body, integrated time, log index and log ID, as
// sigstore-go tlog.VerifySET checks it) and its inclusion proof in a
// one-entry tree (the root is the RFC 6962 leaf hash of the body; no
// sibling hashes), with the checkpoint signed by the log key (rekor's
// util.CreateAndSignCheckpoint, origin "<host> - <tree ID>", a Rekor v1
// signed tree head). kind says what is wrong with it.
func (f *trustFixture) logEntry(t *testing.T, body []byte, at time.Time, kind entryKind) *protorekor.TransparencyLogEntry {
	t.Helper()
	idKey, signKey := f.rekor, f.rekor
	switch kind {
	case otherLog:
		idKey = newKey(t)
		signKey = idKey
	case forgedEntry:
		signKey = newKey(t)
	}
	logID, err := cosign.GetTransparencyLogID(idKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := hex.DecodeString(logID)
	j, _ := json.Marshal(cbundle.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: at.Unix(), LogIndex: 0, LogID: logID})
	canon, err := jsoncanonicalizer.Transform(j)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	set, err := ecdsa.SignASN1(rand.Reader, signKey, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(body)
	signer, err := signature.LoadECDSASignerVerifier(signKey, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := util.CreateAndSignCheckpoint(context.Background(), "rekor.regcheck.test", 1, 1, leaf, signer)
	if err != nil {
		t.Fatal(err)
	}
	return &protorekor.TransparencyLogEntry{LogIndex: 0, LogId: &protocommon.LogId{KeyId: id},
		KindVersion: &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}, IntegratedTime: at.Unix(),
		InclusionPromise: &protorekor.InclusionPromise{SignedEntryTimestamp: set},
		InclusionProof: &protorekor.InclusionProof{LogIndex: 0, RootHash: leaf, TreeSize: 1,
			Checkpoint: &protorekor.Checkpoint{Envelope: string(cp)}},
		CanonicalizedBody: body}
}

// signedEnvelope pushes an image to host/repo and signs an in-toto
// statement of predicateType about it with key: the image, the
// envelope, its JSON and signature, and the entry body (of the
// statement, or with otherPayload of another one), whose verifier is
// cert (a keyless signer's certificate, PEM) or, when nil, key's public
// key.
func (f *trustFixture) signedEnvelope(t *testing.T, host, repo string, key *ecdsa.PrivateKey, cert []byte, predicateType string, predicate []byte, kind entryKind) (admImage, name.Digest, dsse.Envelope, []byte, []byte) {
	t.Helper()
	ref := host + "/" + repo + ":v1"
	d := pushSingle(t, ref, "tlog "+repo)
	dref, err := name.NewDigest(host+"/"+repo+"@"+d, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	payload := statement(t, d, predicateType, predicate)
	env, sig := envelope(t, key, payload)
	envJSON, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	logged := payload
	if kind == otherPayload {
		logged = statement(t, d, predicateType, []byte(`{"other":true}`))
	}
	if cert != nil {
		return admImage{ref: ref, digest: d}, dref, env, envJSON, dsseBodyOf(t, envJSON, logged, sig, cert)
	}
	return admImage{ref: ref, digest: d}, dref, env, envJSON, dsseBody(t, envJSON, logged, sig, key)
}

// signBundle signs an image with key in cosign v3's bundle format (a
// DSSE envelope of cosign's signature statement, or of predicateType's)
// with a transparency-log entry of kind, and pushes the sigstore bundle
// v0.3 as an OCI 1.1 referrer of the digest through cosign's own writer
// (ociremote.WriteAttestationNewBundleFormat, as cosign sign does).
func (f *trustFixture) signBundle(t *testing.T, host, repo string, key *ecdsa.PrivateKey, predicateType string, kind entryKind) admImage {
	t.Helper()
	im, dref, env, _, body := f.signedEnvelope(t, host, repo, key, nil, predicateType, slsaPredicate, kind)
	pushBundle(t, dref, &protobundle.VerificationMaterial{
		Content:     &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{}},
		TlogEntries: []*protorekor.TransparencyLogEntry{f.logEntry(t, body, time.Now(), kind)}}, env, predicateType)
	return im
}

// pushBundle pushes a sigstore bundle v0.3 of env with its verification
// material (a key hint or a certificate, and the log entries) as an OCI
// 1.1 referrer of dref, through cosign's own writer
// (ociremote.WriteAttestationNewBundleFormat, as cosign sign does), and
// returns the bundle's JSON.
func pushBundle(t *testing.T, dref name.Digest, vm *protobundle.VerificationMaterial, env dsse.Envelope, predicateType string) []byte {
	t.Helper()
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	pb := &protobundle.Bundle{MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json", VerificationMaterial: vm,
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType,
			Signatures: []*protodsse.Signature{{Sig: sig}}}}}
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var check bundle.Bundle // sigstore-go reads it back: a v0.3 bundle needs its inclusion proof
	if err := check.UnmarshalJSON(b); err != nil {
		t.Fatalf("the fabricated bundle does not load: %v", err)
	}
	if err := ociremote.WriteAttestationNewBundleFormat(dref, b, predicateType, ociremote.WithNameOptions(name.Insecure)); err != nil {
		t.Fatal(err)
	}
	return b
}

// attestLegacy attests an image with key the legacy way (the .att tag:
// the DSSE envelope as the layer, its predicate type annotated, as
// cosign attest --new-bundle-format=false writes it), carrying, with
// withSET, the entry's SET as the dev.sigstore.cosign/bundle annotation
// (cosign's RekorBundleFromProtoTlogEntry).
func (f *trustFixture) attestLegacy(t *testing.T, host, repo string, key *ecdsa.PrivateKey, kind entryKind, withSET bool) admImage {
	t.Helper()
	return f.attestLegacyAs(t, host, repo, sigSpec{key: key}, kind, withSET, slsaType)
}

// attestLegacyAs is attestLegacy by s.key, keyless when s.cert is set:
// the certificate and the test CA's chain in the layer's annotations
// (dev.sigstore.cosign/certificate and /chain, as cosign attest with a
// Fulcio certificate writes them, and as signLegacy does for a .sig),
// the certificate the log entry's verifier. The statement is a SLSA
// provenance; the layer's predicateType annotation (not signed) says
// annotated.
func (f *trustFixture) attestLegacyAs(t *testing.T, host, repo string, s sigSpec, kind entryKind, withSET bool, annotated string) admImage {
	t.Helper()
	im, dref, _, envJSON, body := f.signedEnvelope(t, host, repo, s.key, s.cert, slsaType, slsaPredicate, kind)
	opts := []static.Option{static.WithLayerMediaType(ctypes.DssePayloadType), static.WithAnnotations(map[string]string{"predicateType": annotated})}
	if s.cert != nil {
		opts = append(opts, static.WithCertChain(s.cert, f.caPEM))
	}
	if withSET {
		e := f.logEntry(t, body, time.Now(), kind)
		opts = append(opts, static.WithBundle(&cbundle.RekorBundle{SignedEntryTimestamp: e.GetInclusionPromise().GetSignedEntryTimestamp(),
			Payload: cbundle.RekorPayload{Body: e.GetCanonicalizedBody(), IntegratedTime: e.GetIntegratedTime(), LogIndex: e.GetLogIndex(),
				LogID: hex.EncodeToString(e.GetLogId().GetKeyId())}}))
	}
	att, err := static.NewAttestation(envJSON, opts...)
	if err != nil {
		t.Fatal(err)
	}
	si, err := ociremote.SignedImage(dref)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := mutate.AttachAttestationToImage(si, att)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteAttestations(dref.Context(), signed); err != nil {
		t.Fatal(err)
	}
	return im
}

// quotedPEM is the PEM file's text as a YAML double-quoted scalar's body.
func quotedPEM(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(strconv.Quote(string(b)), `"`)
}

// tlogCase is one fixture of TestVerifyTlog: the image, the policy and
// regcheck's flags, the cosign run on the same fixture, and what both
// must say (why: in regcheck's finding and in cosign's output).
type tlogCase struct {
	name     string
	im       admImage
	policy   string
	regcheck []string
	cosign   func(ref string) (bool, string, error)
	want     types.Verdict
	code     types.Code
	cosignOK bool
	why      [2]string
}

// TestVerifyTlog holds regcheck's verdict on the transparency-log proofs
// a v3 bundle and a legacy attestation carry, and on a policy-controller
// key authority with a ctlog and no SET, to cosign verify /
// verify-attestation v3.1.3 (--offline, --trusted-root made by cosign
// trusted-root create, --new-bundle-format for bundles, TUF_ROOT an
// empty folder, the proxy a closed port) on the same fixture: bundles
// with a fabricated Rekor v1 dsse entry (inclusion promise and a
// one-entry inclusion proof with its signed checkpoint: sigstore-go
// requires the proof of a v0.2+ bundle), good, of another log, with a
// forged promise, of another payload; .att with a good and a forged SET.
func TestVerifyTlog(t *testing.T) {
	ctx := context.Background()
	c := newCosign(t)
	f := newTrustFixture(t, c)
	host := startEmpty(t, registry.V3).Host()
	key := newKey(t)
	pubPEM, _ := cryptoutils.MarshalPublicKeyToPEM(key.Public())
	pub := f.write(t, "signer.pub", pubPEM)
	trusted := []string{"--trusted-root", f.trustedRoot}
	rekorBlock := "                    rekor:\n                      pubkey: \"" + quotedPEM(t, f.rekorPub) + "\"\n"
	bundlePolicy := func(repo, rekor string) string {
		p := strings.Replace(kyvernoBundlePolicy, "BODY", kyvernoAttestorsBlock, 1)
		p = strings.NewReplacer("HOST", host, "REPO", repo, "TYPE", "SigstoreBundle", "PUB", quotedPEM(t, pub)).Replace(p)
		return strings.Replace(p, "REKOR", rekor, 1) // after the replacer: a PEM holds "PUB"
	}
	attPolicy := func(repo, typ string) string {
		// The log required, the SCT not ignored (Kyverno then requires the
		// entry's time: kyvernobundle.go).
		body := strings.NewReplacer("                        rekor: {ignoreTlog: true}\n", "", "                        ctlog: {ignoreSCT: true}\n", "").Replace(kyvernoAttestationsBlock)
		p := strings.Replace(kyvernoBundlePolicy, "BODY", body, 1)
		return strings.NewReplacer("HOST", host, "REPO", repo, "TYPE", typ, "PUB", quotedPEM(t, pub)).Replace(p)
	}
	ctlog := "      ctlog:\n        url: https://rekor.regcheck.test\n"
	cipCTLog := func(repo string) string {
		p := strings.NewReplacer("HOST", host, "REPO", repo, "PEM", indentPEM(t, pub, 10)).Replace(cipKeyPolicy)
		return strings.Replace(p, "\n---\n", "\n"+ctlog+"---\n", 1)
	}
	verifyBundle := func(flags ...string) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) {
			return c.VerifyWithEnv(ctx, nil, ref, append([]string{"--new-bundle-format=true", "--key", pub, "--insecure-ignore-tlog=false"}, flags...)...)
		}
	}
	verifyAtt := func(f cosignbin.Format, flags ...string) func(string) (bool, string, error) {
		return func(ref string) (bool, string, error) {
			return c.VerifyAttestationWith(ctx, ref, f, append([]string{"--key", pub, "--type", "slsaprovenance", "--insecure-ignore-tlog=false"}, flags...)...)
		}
	}
	verifyLegacy := func(ref string) (bool, string, error) {
		return c.VerifyWithEnv(ctx, nil, ref, "--key", pub, "--insecure-ignore-tlog=false", "--trusted-root", f.trustedRoot)
	}
	notEnough := "not enough verified log entries from transparency log: 0 < 1"
	// what cosign says of a log proof it checked (PrintVerificationHeader)
	logged := [2]string{"", "Existence of the claims in the transparency log was verified offline"}
	cases := []tlogCase{
		{"bundle, good entry, --trusted-root", f.signBundle(t, host, "lgood", key, cosignSignType, goodEntry), bundlePolicy("lgood", ""), trusted,
			verifyBundle(trusted...), types.OK, "", true, logged},
		// Kyverno checks a bundle's entry with its TUF trusted root, not
		// rekor.pubkey (sigstore.go getTrustedMaterial); cosign takes no
		// bare Rekor key for a bundle either.
		{"bundle, good entry, the policy's rekor.pubkey only", f.signBundle(t, host, "lrekorkey", key, cosignSignType, goodEntry), bundlePolicy("lrekorkey", rekorBlock), nil,
			func(ref string) (bool, string, error) {
				return c.VerifyWithEnv(ctx, []string{"SIGSTORE_REKOR_PUBLIC_KEY=" + f.rekorPub}, ref, "--new-bundle-format=true", "--key", pub, "--insecure-ignore-tlog=false")
			}, types.Unknown, types.SignatureUnverifiable, false, [2]string{"not what Kyverno checks a bundle's entry with", "trusted root is required when using new bundle format"}},
		{"bundle, good entry, --trusted-root and rekor.pubkey", f.signBundle(t, host, "lrekorroot", key, cosignSignType, goodEntry), bundlePolicy("lrekorroot", rekorBlock), trusted,
			verifyBundle(trusted...), types.OK, "", true, logged},
		{"bundle, entry of another log", f.signBundle(t, host, "lotherlog", key, cosignSignType, otherLog), bundlePolicy("lotherlog", ""), trusted,
			verifyBundle(trusted...), types.Broken, types.SignatureRefused, false, [2]string{notEnough, notEnough}},
		{"bundle, forged promise", f.signBundle(t, host, "lforged", key, cosignSignType, forgedEntry), bundlePolicy("lforged", ""), trusted,
			verifyBundle(trusted...), types.Broken, types.SignatureRefused, false, [2]string{notEnough, notEnough}},
		{"bundle, entry of another payload", f.signBundle(t, host, "lotherpl", key, cosignSignType, otherPayload), bundlePolicy("lotherpl", ""), trusted,
			verifyBundle(trusted...), types.Broken, types.SignatureRefused, false, [2]string{"does not match envelope payload hash", "does not match envelope payload hash"}},
		{"bundle, good entry, no trust material", f.signBundle(t, host, "lnomat", key, cosignSignType, goodEntry), bundlePolicy("lnomat", ""), nil,
			verifyBundle(), types.Unknown, types.SignatureUnverifiable, false, [2]string{"no Rekor public key was given", "TUF"}},
		{"bundle attestation, good entry", f.signBundle(t, host, "lbatt", key, slsaType, goodEntry), attPolicy("lbatt", "SigstoreBundle"), trusted,
			verifyAtt(cosignbin.Bundle, trusted...), types.OK, "", true, logged},
		{"bundle attestation, entry of another log", f.signBundle(t, host, "lbattother", key, slsaType, otherLog), attPolicy("lbattother", "SigstoreBundle"), trusted,
			verifyAtt(cosignbin.Bundle, trusted...), types.Broken, types.AttestationRefused, false, [2]string{notEnough, notEnough}},
		{"legacy attestation, good SET", f.attestLegacy(t, host, "lagood", key, goodEntry, true), attPolicy("lagood", "Cosign"), trusted,
			verifyAtt(cosignbin.Legacy, trusted...), types.OK, "", true, logged},
		{"legacy attestation, forged SET", f.attestLegacy(t, host, "laforged", key, forgedEntry, true), attPolicy("laforged", "Cosign"), trusted,
			verifyAtt(cosignbin.Legacy, trusted...), types.Broken, types.AttestationRefused, false, [2]string{"unable to verify SET", "unable to verify SET"}},
		{"legacy attestation, good SET, no trust material", f.attestLegacy(t, host, "lanomat", key, goodEntry, true), attPolicy("lanomat", "Cosign"), nil,
			verifyAtt(cosignbin.Legacy), types.Unknown, types.SignatureUnverifiable, false, [2]string{"no Rekor public key was given", "getting rekor public keys"}},
		{"policy-controller key, ctlog, no SET", f.signLegacy(t, host, "lcipnoset", sigSpec{key: key}), cipCTLog("lcipnoset"), trusted,
			verifyLegacy, types.Unknown, types.SignatureUnverifiable, false, [2]string{"searches Rekor for its entry online", "offline verification failed"}},
		{"policy-controller key, ctlog, legacy attestation, no SET", f.attestLegacy(t, host, "lcipattnoset", key, goodEntry, false),
			strings.Replace(cipCTLog("lcipattnoset"), ctlog, ctlog+cipAttestations, 1), trusted,
			verifyAtt(cosignbin.Legacy, trusted...), types.Unknown, types.SignatureUnverifiable, false, [2]string{"searches Rekor for its entry online", "offline verification failed"}},
	}
	runOracleCases(t, host, cases)
}

// runOracleCases scans each case's image under its policy, runs its
// oracle (cosign, or sigstore-go where cosign cannot say the engine's
// rule) on the same fixture, and holds regcheck's verdict and finding
// and the oracle's exit and text to what the case says; the agreement
// table is logged.
func runOracleCases(t *testing.T, host string, cases []tlogCase) {
	t.Helper()
	var table []string
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			repo := strings.SplitN(strings.TrimPrefix(tt.im.ref, host+"/"), ":", 2)[0]
			got := scanTrusted(t, tt.im.ref, tt.policy, tt.regcheck...)
			ok, out, err := tt.cosign(host + "/" + repo + "@" + tt.im.digest)
			if err != nil {
				t.Fatal(err)
			}
			table = append(table, fmt.Sprintf("%-58s regcheck %-8s cosign exit0=%v", tt.name, got.Verdict, ok))
			t.Logf("regcheck %s %+v; cosign passed=%v: %s", got.Verdict, got.Findings, ok, lastLines(out, 2))
			if ok != tt.cosignOK {
				t.Errorf("cosign passed=%v, want %v (the fixture is not what the case says):\n%s", ok, tt.cosignOK, lastLines(out, 5))
			}
			if got.Verdict != tt.want || (tt.code != "" && findingOf(got, tt.code) == nil) {
				t.Errorf("regcheck: verdict %s, want %s with %s:\n%+v", got.Verdict, tt.want, tt.code, got.Findings)
			}
			if !tt.cosignOK && tt.why[0] == "" {
				t.Errorf("the case names no reason for cosign's refusal")
			}
			if tt.why[0] != "" && !strings.Contains(fmt.Sprint(got.Findings), tt.why[0]) {
				t.Errorf("regcheck's finding does not say %q: %+v", tt.why[0], got.Findings)
			}
			if tt.why[1] != "" && !strings.Contains(out, tt.why[1]) {
				t.Errorf("cosign does not say %q:\n%s", tt.why[1], lastLines(out, 5))
			}
		})
	}
	t.Logf("agreement:\n%s", strings.Join(table, "\n"))
}
