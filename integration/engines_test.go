//go:build integration

package integration

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"

	"github.com/regcheck/regcheck/internal/testing/kyvernocli"
	"github.com/regcheck/regcheck/internal/testing/policytester"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// The engines are the oracle of admission verdicts (issue 39): each row
// is an image on a loopback distribution v3.1.2, a policy and a Pod,
// run through the engine itself (the Kyverno CLI v1.19.1's kyverno
// apply, policy-controller v0.13.1's policy-tester) and through regcheck
// scan -f on the same inputs. The engine refuses under Enforce ⇔
// regcheck says broken; it admits ⇔ ok; where regcheck abstains
// (unknown, signature-unverifiable) the row says what the engine needs
// that reading offline cannot have.

// Engines, as the rows name them.
const (
	engKyverno = "kyverno"
	engPC      = "policy-controller"
)

// kyvernoEnginePolicy is a Kyverno Enforce ClusterPolicy on HOST/* whose
// verifyImages entry is VERIFY (indented under the entry).
const kyvernoEnginePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: engine-row
spec:
  rules:
    - name: verify
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/*"]
          failureAction: Enforce
VERIFY`

// cipEnginePolicy is a policy-controller ClusterImagePolicy on HOST/**
// with one authority, AUTHORITY (indented under it).
const cipEnginePolicy = `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata:
  name: engine-row
spec:
  images:
    - glob: "HOST/**"
  authorities:
    - name: key-a
AUTHORITY`

// optInNamespace labels the Pod's namespace for policy-controller.
const optInNamespace = `apiVersion: v1
kind: Namespace
metadata:
  name: default
  labels:
    policy.sigstore.dev/include: "true"
`

// engineRow is one case held to an engine.
type engineRow struct {
	name   string
	engine string // engKyverno or engPC
	image  string // as the Pod writes it (policy-tester's --image)
	policy string
	// refuse is the engine's verdict, as measured: the test fails when
	// the engine says otherwise (a changed fixture or engine).
	refuse bool
	// abstain, when not "", is what the engine needs that regcheck's
	// offline reading cannot have: regcheck must then say unknown with
	// signature-unverifiable, neither ok nor broken.
	abstain string
	// flags are regcheck's own flags for the row (--air-gapped: the
	// engine here, as run offline, reaches no TUF mirror).
	flags []string
}

// engineFixture is the registry, the keys, the test CA and the engines
// the rows share, and the images they run. The images are signed and
// attested with cosign's own Go packages (static signatures and DSSE
// attestations in the legacy tag layout, as cosign sign and attest
// --tlog-upload=false write them), with keys made here.
type engineFixture struct {
	host    string
	a, b    engineKey // A signs; B is the wrong key
	trust   *trustFixture
	kyverno *kyvernocli.CLI
	tester  *policytester.Tester
	img     map[string]admImage
}

// engineKey is a signing key and its public key's PEM file.
type engineKey struct {
	priv *ecdsa.PrivateKey
	pub  string
}

// Predicate types as cosign attest --type writes them (cosign
// cmd/cosign/cli/options.PredicateTypeMap, which policy-controller reads
// a short predicateType through).
const (
	predSPDX   = "https://spdx.dev/Document"                       // spdx, spdxjson
	predVuln   = "https://cosign.sigstore.dev/attestation/vuln/v1" // vuln
	predCustom = "https://cosign.sigstore.dev/attestation/v1"      // custom
)

// newEngineFixture starts the registry, finds the engines (a missing
// binary fails the test: hack/build-bins.sh engines builds them) and
// pushes, signs and attests the images.
func newEngineFixture(t *testing.T) *engineFixture {
	t.Helper()
	f := &engineFixture{}
	var err error
	if f.kyverno, err = kyvernocli.New(t.TempDir()); err != nil {
		t.Fatalf("%v (hack/build-bins.sh engines builds it)", err)
	}
	if f.tester, err = policytester.New(t.TempDir()); err != nil {
		t.Fatalf("%v (hack/build-bins.sh engines builds it)", err)
	}
	f.pushImages(t)
	return f
}

// pushImages starts the registry and pushes, signs and attests the
// rows' images.
func (f *engineFixture) pushImages(t *testing.T) {
	t.Helper()
	f.host, f.img = startEmpty(t, registry.V3).Host(), map[string]admImage{}
	f.trust = newTrustFixture(t, nil)
	f.a, f.b = f.newKey(t, "a"), f.newKey(t, "b")
	f.img["signed"] = f.trust.signLegacy(t, f.host, "signed", sigSpec{key: f.a.priv})
	f.img["unsigned"] = admImage{ref: f.host + "/unsigned:v1", digest: pushSingle(t, f.host+"/unsigned:v1", "engines unsigned")}
	for _, a := range []struct {
		repo, typ string
		by        engineKey
		pred      string
	}{
		{"prov-a", slsaV02, f.a, string(slsaPredicate)},
		{"prov-b", slsaV02, f.b, string(slsaPredicate)},
		{"sbom", predSPDX, f.a, `{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","name":"engines"}`},
		{"vuln", predVuln, f.a, `{"scanner":{"uri":"https://example.com/scanner","version":"1"}}`},
		{"custom", predCustom, f.a, `{"data":"engines","timestamp":"2026-12-07T00:00:00Z"}`},
	} {
		f.img[a.repo] = f.attestLegacy(t, a.repo, a.by, a.typ, a.pred)
	}
	f.img["signed-prov"] = f.trust.signLegacy(t, f.host, "signed-prov", sigSpec{key: f.a.priv})
	f.attest(t, f.img["signed-prov"], f.a, slsaV02, string(slsaPredicate))
	now := time.Now()
	leafKey, leafCert := f.trust.leaf(t, testSigner, now.Add(-time.Minute), now.Add(30*time.Minute))
	f.img["keyless"] = f.trust.signLegacy(t, f.host, "keyless", sigSpec{key: leafKey, cert: leafCert, set: goodSET, at: now})
}

// newKey makes a P-256 signing key and writes its public key.
func (f *engineFixture) newKey(t *testing.T, name string) engineKey {
	t.Helper()
	k := newKey(t)
	pemBytes, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return engineKey{priv: k, pub: f.trust.write(t, "engine-"+name+".pub", pemBytes)}
}

// attestLegacy pushes an image to host/repo:v1 and attaches an in-toto
// statement of predicate type typ about its digest, in a DSSE envelope
// signed with k, as the legacy .att tag: what cosign attest
// --tlog-upload=false --new-bundle-format=false writes.
func (f *engineFixture) attestLegacy(t *testing.T, repo string, k engineKey, typ, predicate string) admImage {
	t.Helper()
	ref := f.host + "/" + repo + ":v1"
	im := admImage{ref: ref, digest: pushSingle(t, ref, "engines "+repo)}
	f.attest(t, im, k, typ, predicate)
	return im
}

// attest attaches to the image im an attestation as attestLegacy does.
func (f *engineFixture) attest(t *testing.T, im admImage, k engineKey, typ, predicate string) {
	t.Helper()
	d := im.digest
	dref, err := name.NewDigest(atDigest(im), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":%q,"subject":[{"name":%q,"digest":{"sha256":%q}}],"predicate":%s}`,
		typ, dref.Context().Name(), strings.TrimPrefix(d, "sha256:"), predicate)
	sv, err := signature.LoadECDSASignerVerifier(k.priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	env, err := dsse.WrapSigner(sv, "application/vnd.in-toto+json").SignMessage(strings.NewReader(stmt))
	if err != nil {
		t.Fatal(err)
	}
	att, err := static.NewAttestation(env)
	if err != nil {
		t.Fatal(err)
	}
	si, err := ociremote.SignedImage(dref)
	if err != nil {
		t.Fatal(err)
	}
	attested, err := mutate.AttachAttestationToImage(si, att)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteAttestations(dref.Context(), attested); err != nil {
		t.Fatal(err)
	}
}

// pem is a key's public PEM, indented for a YAML block scalar.
func (f *engineFixture) pem(t *testing.T, k engineKey, indent int) string {
	t.Helper()
	return indentPEM(t, k.pub, indent)
}

// kyvernoKeys is a verifyImages entry with one key attestor entry whose
// publicKeys are the keys' PEM blocks, read offline (rekor.ignoreTlog,
// ctlog.ignoreSCT: without both Kyverno asks TUF for the log keys), and
// extra fields of the entry (mutateDigest, verifyDigest).
func (f *engineFixture) kyvernoKeys(t *testing.T, extra string, keys ...engineKey) string {
	t.Helper()
	var pems []string
	for _, k := range keys {
		pems = append(pems, f.pem(t, k, 22))
	}
	return f.kyverno1(extra + "          attestors:\n            - entries:\n                - keys:\n                    publicKeys: |-\n" +
		strings.Join(pems, "\n") + "\n                    rekor: {ignoreTlog: true}\n                    ctlog: {ignoreSCT: true}\n")
}

// kyvernoAttestation is a verifyImages entry requiring an attestation of
// predicate type typ by one key entry holding the keys' PEM blocks.
func (f *engineFixture) kyvernoAttestation(t *testing.T, typ string, keys ...engineKey) string {
	t.Helper()
	var pems []string
	for _, k := range keys {
		pems = append(pems, f.pem(t, k, 26))
	}
	return f.kyverno1("          attestations:\n            - type: " + typ + "\n              attestors:\n                - entries:\n" +
		"                    - keys:\n                        publicKeys: |-\n" + strings.Join(pems, "\n") +
		"\n                        rekor: {ignoreTlog: true}\n                        ctlog: {ignoreSCT: true}\n")
}

// kyvernoKeyless is a verifyImages entry with one keyless entry for
// subject from the test issuer, chaining to the test CA (roots), the
// log proof checked offline against the test Rekor key (the SET the
// signature carries), SCTs ignored (the test CA has no CT log).
func (f *engineFixture) kyvernoKeyless(t *testing.T, subject string) string {
	t.Helper()
	roots := f.trust.write(t, "engine-roots.pem", f.trust.caPEM)
	return f.kyverno1("          attestors:\n            - entries:\n                - keyless:\n" +
		"                    subject: \"" + subject + "\"\n                    issuer: " + testIssuer + "\n" +
		"                    roots: |-\n" + indentPEM(t, roots, 22) + "\n" +
		"                    rekor:\n                      url: https://rekor.regcheck.test\n                      pubkey: |-\n" + indentPEM(t, f.trust.rekorPub, 24) + "\n" +
		"                    ctlog:\n                      ignoreSCT: true\n")
}

// kyverno1 is the ClusterPolicy with the verifyImages entry's fields.
func (f *engineFixture) kyverno1(entry string) string {
	return strings.NewReplacer("HOST", f.host, "VERIFY", entry).Replace(kyvernoEnginePolicy)
}

// cip is the ClusterImagePolicy whose one authority is key c's, with
// extra fields of the authority (attestations) and of the spec (policy).
func (f *engineFixture) cip(t *testing.T, c engineKey, authority, spec string) string {
	t.Helper()
	a := "      key:\n        data: |\n" + f.pem(t, c, 10) + "\n" + authority
	return strings.NewReplacer("HOST", f.host, "AUTHORITY", a).Replace(cipEnginePolicy) + spec
}

// cipAttestation is an authority's attestations: one of predicateType typ.
func cipAttestation(typ string) string {
	return "      attestations:\n        - name: required\n          predicateType: " + typ + "\n"
}

// atDigest is im as repo@digest.
func atDigest(im admImage) string {
	return im.ref[:strings.LastIndex(im.ref, ":")] + "@" + im.digest
}

// engineRows are the rows regcheck agrees with today, or with the fixes
// of points 6 and 8 of issue 39 on this branch.
func (f *engineFixture) engineRows(t *testing.T) []engineRow {
	signed, unsigned := f.img["signed"], f.img["unsigned"]
	return []engineRow{
		{name: "key-signed", engine: engKyverno, image: signed.ref, policy: f.kyvernoKeys(t, "", f.a)},
		{name: "signature missing", engine: engKyverno, image: unsigned.ref, policy: f.kyvernoKeys(t, "", f.a), refuse: true},
		{name: "wrong key", engine: engKyverno, image: signed.ref, policy: f.kyvernoKeys(t, "", f.b), refuse: true},
		{name: "signature set, two PEM keys, one signed: every key is required (ExpandStaticKeys)", engine: engKyverno,
			image: signed.ref, policy: f.kyvernoKeys(t, "", f.a, f.b), refuse: true},
		// Point 8: verifyDigest defaults to true; without mutateDigest the tag is not resolved.
		{name: "mutateDigest false, tag-only Pod: missing digest", engine: engKyverno, image: signed.ref,
			policy: f.kyvernoKeys(t, "          mutateDigest: false\n", f.a), refuse: true},
		{name: "mutateDigest false, Pod by digest", engine: engKyverno, image: atDigest(signed),
			policy: f.kyvernoKeys(t, "          mutateDigest: false\n", f.a)},
		{name: "mutateDigest and verifyDigest false, tag-only Pod", engine: engKyverno, image: signed.ref,
			policy: f.kyvernoKeys(t, "          mutateDigest: false\n          verifyDigest: false\n", f.a)},
		// Point 6: an attestation attestor's publicKeys is one key, the first (decodePEM).
		{name: "attestation, two PEM keys, attested by the first", engine: engKyverno, image: f.img["prov-a"].ref,
			policy: f.kyvernoAttestation(t, slsaV02, f.a, f.b)},
		{name: "attestation, two PEM keys, attested by the second only", engine: engKyverno, image: f.img["prov-b"].ref,
			policy: f.kyvernoAttestation(t, slsaV02, f.a, f.b), refuse: true},
		{name: "attestation, one key", engine: engKyverno, image: f.img["prov-a"].ref, policy: f.kyvernoAttestation(t, slsaV02, f.a)},
		{name: "keyless, exact subject", engine: engKyverno, image: f.img["keyless"].ref, policy: f.kyvernoKeyless(t, testSigner)},
		{name: "keyless, other subject", engine: engKyverno, image: f.img["keyless"].ref, policy: f.kyvernoKeyless(t, "other@regcheck.test"), refuse: true},

		{name: "key-signed", engine: engPC, image: atDigest(signed), policy: f.cip(t, f.a, "", "")},
		{name: "signature missing", engine: engPC, image: atDigest(unsigned), policy: f.cip(t, f.a, "", ""), refuse: true},
		{name: "wrong key", engine: engPC, image: atDigest(signed), policy: f.cip(t, f.b, "", ""), refuse: true},
		{name: "attestation, predicateType as a URI", engine: engPC, image: atDigest(f.img["sbom"]),
			policy: f.cip(t, f.a, cipAttestation(predSPDX), "")},
		{name: "attestation missing", engine: engPC, image: atDigest(signed), policy: f.cip(t, f.a, cipAttestation(predSPDX), ""), refuse: true},
	}
}

// leadRows are the rows of points 1, 2 and 4 of issue 39 (each
// contradicted the engine before its fix).
func (f *engineFixture) leadRows(t *testing.T) []engineRow {
	return []engineRow{
		// Point 1: Kyverno matches subject with wildcard.Match, after cosign.
		{name: "keyless, subject wildcard", engine: engKyverno, image: f.img["keyless"].ref, policy: f.kyvernoKeyless(t, "*@regcheck.test")},
		{name: "keyless, subject wildcard not matching", engine: engKyverno, image: f.img["keyless"].ref, policy: f.kyvernoKeyless(t, "*@elsewhere.test"), refuse: true},
		// Point 2: policy-controller maps short names (cosign options.PredicateTypeMap).
		{name: "attestation, predicateType spdxjson", engine: engPC, image: atDigest(f.img["sbom"]), policy: f.cip(t, f.a, cipAttestation("spdxjson"), "")},
		{name: "attestation, predicateType vuln", engine: engPC, image: atDigest(f.img["vuln"]), policy: f.cip(t, f.a, cipAttestation("vuln"), "")},
		{name: "attestation, predicateType custom", engine: engPC, image: atDigest(f.img["custom"]), policy: f.cip(t, f.a, cipAttestation("custom"), "")},
		// Point 4: spec.policy is evaluated after the authorities pass.
		{name: "spec.policy CUE refusing", engine: engPC, image: atDigest(f.img["signed"]), refuse: true,
			policy:  f.cip(t, f.a, "", "  policy:\n    type: cue\n    data: |\n      authorityMatches: {\"key-a\": {signatures: [_, _]}}\n"),
			abstain: "spec.policy, CUE evaluated by policy-controller over the authorities' results (the verified signatures' JSON): regcheck does not evaluate it"},
	}
}

// openRows are the rows of points 3 and 8 of issue 39 (Kyverno's empty
// attestor, an air-gapped Kyverno), each contradicted before its fix.
func (f *engineFixture) openRows(t *testing.T) []engineRow {
	keys := f.kyvernoKeys(t, "", f.a)
	return []engineRow{
		// Point 3: an attestation naming no attestors is verified by Kyverno
		// with one empty (keyless, public-good) attestor, not the rule's
		// keys (pkg/engine/internal/imageverifier.go verifyAttestations);
		// offline its Fulcio roots cannot even be loaded from TUF.
		{name: "attestation naming no attestors, the rule's key signs and attests", engine: engKyverno, image: f.img["signed-prov"].ref, refuse: true,
			policy: keys + "          attestations:\n            - type: " + slsaV02 + "\n"},
		// Point 8, air-gapped: a key entry without a ctlog block makes
		// Kyverno load the CT log keys from TUF ("failed to load CTLogs
		// public keys"), which a cluster without a way to the TUF mirror
		// cannot: refused there, admitted where TUF is reachable.
		// regcheck cannot know whether a cluster reaches TUF: --air-gapped
		// says it does not, as the engine here does not.
		{name: "key entry without a ctlog block, no way to TUF", engine: engKyverno, image: f.img["signed"].ref, refuse: true,
			policy: strings.Replace(keys, "                    ctlog: {ignoreSCT: true}\n", "", 1), flags: []string{"--air-gapped"}},
		{name: "key entry with its ctlog block, no way to TUF", engine: engKyverno, image: f.img["signed"].ref,
			policy: keys, flags: []string{"--air-gapped"}},
	}
}

// TestEngineVerdicts holds regcheck to the engines on every row: the
// engines' own verdicts on images, policies and Pods made here, and the
// rows of the points of issue 39 (Kyverno's keyless wildcards,
// policy-controller's short predicate types, spec.policy, Kyverno's
// empty attestor, an air-gapped Kyverno).
func TestEngineVerdicts(t *testing.T) {
	f := newEngineFixture(t)
	f.run(t, slices.Concat(f.engineRows(t), f.leadRows(t), f.openRows(t)))
}

// run runs each row through its engine and regcheck, and logs the table.
func (f *engineFixture) run(t *testing.T, rows []engineRow) {
	t.Helper()
	var table []string
	for _, r := range rows {
		t.Run(r.engine+"/"+r.name, func(t *testing.T) {
			refused, msg := f.engineVerdict(t, r)
			im := f.regcheckVerdict(t, r)
			line := fmt.Sprintf("%s | %s | %s | %s", r.name, r.engine, verdictWord(refused), im.Verdict)
			if refused != r.refuse {
				t.Errorf("%s: the engine %s, the row says it %s:\n%s", r.engine, verdictWord(refused), verdictWord(r.refuse), msg)
			}
			switch agree := agreement(r, im); agree {
			case "agree", "abstain":
				line += " | " + agree
			default:
				line += " | contradict"
				t.Errorf("regcheck %s (%v), the engine %s: %s", im.Verdict, findingCodes(im), verdictWord(refused), agree)
			}
			table = append(table, line)
			t.Logf("%s\nengine: %s\nregcheck: %v", line, msg, im.Findings)
		})
	}
	t.Logf("case | engine | engine's verdict | regcheck | agreement\n%s", strings.Join(table, "\n"))
}

// engineVerdict runs the row through its engine: refused, and what it said.
func (f *engineFixture) engineVerdict(t *testing.T, r engineRow) (bool, string) {
	t.Helper()
	ctx := context.Background()
	if r.engine == engPC {
		o, err := f.tester.Test(ctx, r.policy, r.image, "")
		if err != nil {
			t.Fatal(err)
		}
		return o.Refused, o.Message()
	}
	o, err := f.kyverno.Apply(ctx, r.policy, enginePod(r.image))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Skipped) > 0 || o.Pass+o.Fail+o.Error == 0 {
		t.Fatalf("kyverno did not apply the rule (the row would hold nothing): %+v\n%s", o.Skipped, o.Output)
	}
	return o.Refused, o.Message
}

// regcheckVerdict scans the Pod and the policy (-f): the image's result.
func (f *engineFixture) regcheckVerdict(t *testing.T, r engineRow) *types.Image {
	t.Helper()
	dir := t.TempDir()
	body := enginePod(r.image) + "---\n" + r.policy
	if r.engine == engPC {
		body += "\n---\n" + optInNamespace
	}
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	doc, code, _ := scanCLI(t, append([]string{"--no-cache", "--timeout", "30s", "-f", dir}, r.flags...)...)
	if len(doc.Images) != 1 {
		t.Fatalf("scan -f: exit %d, %d images, want 1: %+v", code, len(doc.Images), doc.Images)
	}
	return doc.Images[0]
}

// agreement is "agree" or "abstain" when regcheck's verdict on im holds
// to the row's, else why not.
func agreement(r engineRow, im *types.Image) string {
	switch {
	case r.abstain != "":
		if im.Verdict == types.Unknown && findingOf(im, types.SignatureUnverifiable) != nil {
			return "abstain"
		}
		return "want unknown, signature-unverifiable (" + r.abstain + ")"
	case r.refuse && im.Verdict == types.Broken, !r.refuse && im.Verdict == types.OK:
		return "agree"
	case r.refuse:
		return "want broken"
	}
	return "want ok"
}

// enginePod is a Pod in namespace default running image.
func enginePod(image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: default\nspec:\n  containers:\n    - name: app\n      image: " + image + "\n"
}

func verdictWord(refused bool) string {
	if refused {
		return "refuses"
	}
	return "admits"
}

// findingCodes lists im's finding codes.
func findingCodes(im *types.Image) []types.Code {
	var out []types.Code
	for _, f := range im.Findings {
		out = append(out, f.Code)
	}
	return out
}
