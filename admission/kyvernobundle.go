package admission

import (
	"fmt"
	"time"

	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kyverno's ClusterPolicy and Policy verify a sigstore bundle (type:
// SigstoreBundle) with sigstore-go directly, not through cosign, and
// build its verifier from the attestor's rekor and ctlog fields
// (github.com/kyverno/kyverno@v1.19.0,
// pkg/image/verifiers/cpol/cosign/sigstore.go, buildVerifyOptions):
//
//	WithTransparencyLog(1)    unless rekor.ignoreTlog
//	WithObserverTimestamps(1) unless ctlog.ignoreSCT
//	with neither: WithNoObserverTimestamps() for a key
//
// and pkg/engine/internal/imageverifier.go (buildCosignVerifier): a keys
// or keyless attestor without a ctlog block has IgnoreSCT false, for an
// attestation's attestors too. ctlog.ignoreSCT thus decides, for a
// key-signed bundle (which carries no certificate, so no SCT: sigstore-go
// is never asked for WithSignedCertificateTimestamps here), whether a
// verified observer timestamp is required:
//
//   - the log ignored, ignoreSCT not set: only an RFC 3161 timestamp in
//     the bundle can be one (the log's integrated time is counted only
//     when the log is verified): a bundle signed with --tlog-upload=false
//     and no timestamp authority is refused (verifyBundles logs it; the
//     rule fails with "no matching signatures found").
//   - the log required, ignoreSCT set: the verifier has no time policy,
//     which sigstore-go will not build (VerifierConfig.Validate): the rule
//     fails for every image.
//   - both set: the key alone; neither: the log entry, its integrated
//     time the observer timestamp.
//
// The ImageValidatingPolicy reads bundles through cosign
// (pkg/image/verifiers/ivpol/cosign/verifier.go: cosign.CheckOpts, whose
// verificationOptions ask a key for no SCT and no timestamp): no such
// rule there, and its entries do not carry kyvernoBundleOpts.

// kyvernoBundleOpts is what a Kyverno ClusterPolicy attestor entry gives
// the verifier Kyverno builds for a sigstore bundle.
type kyvernoBundleOpts struct {
	// ignoreSCT is the entry's ctlog.ignoreSCT.
	ignoreSCT bool
}

// kyvernoCTLog reads an attestor entry's ctlog.ignoreSCT (under keys or
// keyless) as Kyverno's SigstoreBundle path takes it.
func kyvernoCTLog(e map[string]any) *kyvernoBundleOpts {
	for _, kind := range []string{"keys", "keyless", "certificates"} {
		if ig, ok, _ := unstructured.NestedBool(e, kind, "ctlog", "ignoreSCT"); ok {
			return &kyvernoBundleOpts{ignoreSCT: ig}
		}
	}
	return &kyvernoBundleOpts{}
}

// kyvernoVerifierOptions are the options Kyverno's SigstoreBundle path
// gives sigstore-go for e (buildVerifyOptions), e being a key or keyless
// ClusterPolicy entry.
func kyvernoVerifierOptions(e KeyEntry) []verify.VerifierOption {
	var opts []verify.VerifierOption
	if e.Tlog {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if !e.kyvernoBundle.ignoreSCT {
		opts = append(opts, verify.WithObserverTimestamps(1))
	}
	if len(opts) == 0 {
		if e.Keyless == nil {
			return []verify.VerifierOption{verify.WithNoObserverTimestamps()}
		}
		return []verify.VerifierOption{verify.WithCurrentTime()}
	}
	return opts
}

// kyvernoUnbuildable is the refusal of every bundle under an entry whose
// options sigstore-go will not build a verifier from (the log required
// and ctlog.ignoreSCT: true), with sigstore-go's own text; Verified when
// it builds.
func kyvernoUnbuildable(e KeyEntry) Verdict {
	if e.kyvernoBundle == nil {
		return Verdict{Outcome: Verified}
	}
	_, err := verify.NewVerifier(&root.BaseTrustedMaterial{}, kyvernoVerifierOptions(e)...)
	if err == nil {
		return Verdict{Outcome: Verified}
	}
	return Verdict{Outcome: Refused, Reason: fmt.Sprintf("Kyverno cannot verify any sigstore bundle under the attestor at %s: with the log required and ctlog.ignoreSCT: true its SigstoreBundle verifier gets WithTransparencyLog(1) and no time policy (kyverno pkg/image/verifiers/cpol/cosign/sigstore.go, buildVerifyOptions), which sigstore-go refuses to build: %v; drop ctlog.ignoreSCT (the log entry's time then counts), or ignore the log as well (rekor.ignoreTlog: true) to verify with the key alone (a keyless certificate: at the current time)", e.Path, err)}
}

// kyvernoObserverTime holds a bundle that verified with e's key (sv) to
// the observer timestamp Kyverno requires of it when the log is ignored
// and ctlog.ignoreSCT is not set: sigstore-go's verifier with Kyverno's
// options over Kyverno's trusted material (the key, and the trusted root:
// getTrustedMaterial; --trusted-root stands for its TUF root offline).
// Verified when no timestamp is required or one verifies; Refused with
// sigstore-go's text; Unverifiable when the bundle carries an RFC 3161
// timestamp and no trusted root with a timestamp authority was given.
func (v CosignVerifier) kyvernoObserverTime(b *sgbundle.Bundle, policy verify.ArtifactPolicyOption, e KeyEntry, sv signature.Verifier) Verdict {
	if e.kyvernoBundle == nil || e.kyvernoBundle.ignoreSCT || e.Tlog || e.Keyless != nil {
		return Verdict{Outcome: Verified} // the log's check (bundleTlog) gives the time, or none is required
	}
	stamps, err := b.Timestamps()
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: "reading the bundle's RFC 3161 timestamps: " + err.Error()}
	}
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	tm := root.TrustedMaterialCollection{root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })}
	switch {
	case v.TrustedRoot != nil:
		tm = append(tm, v.TrustedRoot)
	case len(stamps) > 0:
		return Verdict{Outcome: Unverifiable, Reason: fmt.Sprintf("the bundle verifies with the key at %s and carries an RFC 3161 timestamp, which Kyverno requires (no ctlog.ignoreSCT: true) and checks against its TUF trusted root's timestamp authorities: give that trusted root as --trusted-root", e.Path)}
	}
	verifier, err := verify.NewVerifier(tm, kyvernoVerifierOptions(e)...)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: "building Kyverno's bundle verifier: " + err.Error()}
	}
	if _, err := verifier.Verify(b, verify.NewPolicy(policy, verify.WithKey())); err != nil {
		return Verdict{Outcome: Refused, Reason: kyvernoTimeText(e, len(stamps), err)}
	}
	return Verdict{Outcome: Verified}
}

// kyvernoTimeText says why Kyverno refuses a key-signed bundle for want
// of an observer timestamp, and what to do.
func kyvernoTimeText(e KeyEntry, stamps int, err error) string {
	what := "carries no RFC 3161 timestamp"
	if stamps > 0 {
		what = "carries no RFC 3161 timestamp that the trusted root's timestamp authorities verify"
	}
	return fmt.Sprintf("the bundle verifies with the key at %s, but Kyverno's SigstoreBundle path requires an observer timestamp unless the attestor sets ctlog.ignoreSCT: true (kyverno pkg/image/verifiers/cpol/cosign/sigstore.go, buildVerifyOptions: WithObserverTimestamps(1)); with rekor.ignoreTlog only an RFC 3161 timestamp counts, and the bundle %s: sigstore-go: %v; set ctlog: {ignoreSCT: true} in the attestor entry beside rekor.ignoreTlog (a key-signed bundle has no SCT), or sign with a timestamp authority (cosign sign --timestamp-server-url), or sign with the log and drop rekor.ignoreTlog",
		e.Path, what, err)
}
