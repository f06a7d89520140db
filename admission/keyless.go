package admission

import (
	"fmt"
	"strings"

	"github.com/sigstore/cosign/v3/pkg/cosign"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Keyless is a keyless entry: the certificate identities a signature's
// certificate must carry (any one of them), and the trust material the
// policy itself names. Material the policy does not name comes from the
// trusted root given to the verifier.
type Keyless struct {
	// Identities are cosign's matchers (issuer and subject, exact or
	// regular expressions); the certificate must match one.
	Identities []cosign.Identity
	// RootsPEM are the CA certificates the policy names (Kyverno
	// keyless.roots); "" takes the trusted root's Fulcio CAs.
	RootsPEM string
	// CTLogPEM is the certificate-transparency log's key the policy
	// names (Kyverno keyless.ctlog.pubkey).
	CTLogPEM string
	// IgnoreSCT: the engine does not require the certificate's embedded
	// SCT (Kyverno ctlog.ignoreSCT, policy-controller insecureIgnoreSCT).
	IgnoreSCT bool
	// splitRoots: RootsPEM's self-signed certificates are the roots, the
	// others intermediates (policy-controller's TrustRoot); otherwise
	// every one is a root (Kyverno's roots).
	splitRoots bool
	// bundleSignedTime: with the log ignored, the engine verifies a
	// bundle's certificate at its RFC 3161 timestamp, not now (Kyverno's
	// ImageValidatingPolicy: shouldUseSignedTimestamps).
	bundleSignedTime bool
	// bundleLog: the engine requires a bundle's log entry whatever the
	// authority's ctlog (policy-controller's bundle path).
	bundleLog bool
	// bundleTSA: the engine verifies a bundle at its RFC 3161 timestamp,
	// the log ignored (a policy-controller authority's
	// rfc3161timestamp).
	bundleTSA bool
	// kyverno, for a Kyverno ClusterPolicy attestor, is the match Kyverno
	// makes on the certificates cosign verified with no identities
	// (kyvernocert.go); Identities then serve its SigstoreBundle path
	// only. nil for the other engines.
	kyverno *kyvernoCert
}

// kyvernoKeyless reads a Kyverno attestor entry's keyless block, as
// Kyverno 1.x builds cosign's options from it (kyverno/kyverno
// pkg/engine/internal/imageverifier.go, buildCosignVerifier, and
// pkg/image/verifiers/cpol/cosign/cosign.go, buildCosignOptions):
// RootCerts from roots; the log required unless rekor.ignoreTlog; the
// SCT unless ctlog.ignoreSCT; no cosign identities, the certificate
// matched afterwards by subject, issuer and additionalExtensions as
// wildcards (kyvernoCert). Identities hold issuer and subject for the
// SigstoreBundle path, which hands them to sigstore-go exactly.
func kyvernoKeyless(kl map[string]any, path string) KeyEntry {
	str := func(f ...string) string { s, _, _ := unstructured.NestedString(kl, f...); return s }
	ignoreTlog, _, _ := unstructured.NestedBool(kl, "rekor", "ignoreTlog")
	ignoreSCT, _, _ := unstructured.NestedBool(kl, "ctlog", "ignoreSCT")
	ext, _, _ := unstructured.NestedStringMap(kl, "additionalExtensions")
	id := cosign.Identity{Issuer: str("issuer"), Subject: str("subject"),
		IssuerRegExp: str("issuerRegExp"), SubjectRegExp: str("subjectRegExp")}
	e := KeyEntry{Path: path, Tlog: !ignoreTlog, RekorPEM: str("rekor", "pubkey"), Keyless: &Keyless{
		RootsPEM: str("roots"), CTLogPEM: str("ctlog", "pubkey"), IgnoreSCT: ignoreSCT,
		kyverno: &kyvernoCert{subject: id.Subject, subjectRegExp: id.SubjectRegExp, issuer: id.Issuer, issuerRegExp: id.IssuerRegExp, extensions: ext}}}
	if id != (cosign.Identity{}) {
		e.Keyless.Identities = []cosign.Identity{id}
	}
	return e
}

// authorityKeyless reads a ClusterImagePolicy keyless authority as
// policy-controller builds cosign's options from it
// (sigstore/policy-controller pkg/webhook/validator.go,
// checkOptsFromAuthority: one cosign.Identity per keyless.identities
// entry; Fulcio roots and CT keys from the TrustRoot named by
// trustRootRef, else Sigstore's TUF root; the SCT unless
// insecureIgnoreSCT). The log proof is required when the authority names
// a ctlog, or names no TrustRoot (Sigstore's Rekor keys are then taken:
// rekorClientAndKeysFromAuthority); with a TrustRoot and no ctlog there
// is no Rekor key, and the log is ignored. With a ctlog there is a Rekor
// client, and a signature with no SET is searched for online
// (TlogSearch); without one, only Sigstore's keys, checked offline.
func authorityKeyless(kl map[string]any, ctlog bool) KeyEntry {
	ignoreSCT, _, _ := unstructured.NestedBool(kl, "insecureIgnoreSCT")
	ref, _, _ := unstructured.NestedString(kl, "trustRootRef")
	// A bundle's log entry is required whatever the ctlog
	// (checkOptsFromAuthority leaves IgnoreTlog false for the bundle
	// format, unless a timestamp authority is named).
	e := KeyEntry{Path: "keyless", Tlog: ctlog || ref == "", TlogSearch: ctlog, trustRoot: ref, Keyless: &Keyless{IgnoreSCT: ignoreSCT, bundleLog: true}}
	ids, _, _ := unstructured.NestedSlice(kl, "identities")
	for _, raw := range ids {
		m, _ := raw.(map[string]any)
		str := func(f string) string { s, _, _ := unstructured.NestedString(m, f); return s }
		e.Keyless.Identities = append(e.Keyless.Identities, cosign.Identity{Issuer: str("issuer"), Subject: str("subject"),
			IssuerRegExp: str("issuerRegExp"), SubjectRegExp: str("subjectRegExp")})
	}
	if len(e.Keyless.Identities) == 0 {
		e.Unverifiable = "a keyless authority with no identities: regcheck does not accept any certificate in its place"
	}
	return e
}

// id is what, beside its key, tells one entry's verification from
// another's: the log's key and the keyless identities and roots.
func (e KeyEntry) id() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%v", e.RekorPEM, e.TlogSearch)
	if e.kyvernoBundle != nil {
		fmt.Fprintf(&b, "|kyverno ignoreSCT %v", e.kyvernoBundle.ignoreSCT)
	}
	if len(e.Annotations) > 0 {
		fmt.Fprintf(&b, "|annotations %v %s", e.annotationsInLayer, annotationsText(e.Annotations))
	}
	if e.Keyless == nil {
		return b.String()
	}
	k := e.Keyless
	fmt.Fprintf(&b, "|%s|%s|%v|%v|%v %v %v", k.RootsPEM, k.CTLogPEM, k.IgnoreSCT, k.splitRoots, k.bundleSignedTime, k.bundleLog, k.bundleTSA)
	for _, id := range e.Keyless.Identities {
		fmt.Fprintf(&b, "|%q %q %q %q", id.Issuer, id.Subject, id.IssuerRegExp, id.SubjectRegExp)
	}
	if k.kyverno != nil {
		fmt.Fprintf(&b, "|kyverno %s", k.kyverno.text())
	}
	return b.String()
}
