package admission

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/oci"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Outcome is what verifying a signature against one key entry gave.
type Outcome int

// Outcomes of a verification.
const (
	// Verified: cosign accepted a signature with the key (and, where the
	// engine requires one, its transparency-log proof).
	Verified Outcome = iota
	// Refused: the signatures are there, and cosign refused every one:
	// the engine refuses the pod.
	Refused
	// Unverifiable: it cannot be decided offline (a KMS key, keyless
	// with no trust root, a log proof with no Rekor key given), or a
	// fault hid the signatures.
	Unverifiable
)

// Verdict is one entry's verification: its outcome and why.
type Verdict struct {
	Outcome Outcome
	// Reason is cosign's own error text for Refused, what to supply for
	// Unverifiable.
	Reason string
	// Fault: Unverifiable because the registry could not be asked.
	Fault bool
	// Cause is a Fault's failure as a types error (types.FaultCode names
	// its finding); nil: a registry error, not said which.
	Cause error
}

// Verifier verifies the legacy signatures of an image digest (repo@digest),
// kept in the repository sigs (ref's own, or another one a policy names),
// against one key entry, offline.
type Verifier interface {
	VerifyLegacy(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) Verdict
}

// CosignVerifier verifies with cosign's own verification calls
// (pkg/cosign), reading the .sig tag at the registry itself with the
// default keychain. No Rekor or TUF request is ever made: the log proof
// is not checked online.
type CosignVerifier struct {
	// Keychain gives the registry credentials; nil is the default
	// keychain (the docker config).
	Keychain authn.Keychain
	// Transport sends the registry requests (the Scanner's, with its
	// retries, insecure hosts and request counts); nil is
	// go-containerregistry's default.
	Transport http.RoundTripper
	// TrustedRoot is the trust material given (a sigstore trusted root,
	// LoadTrustedRoot): the Rekor keys that check a carried log proof
	// and the Fulcio CAs that check a keyless certificate, where the
	// policy names none. nil: none given.
	TrustedRoot root.TrustedMaterial
	// AirGapped: the cluster's engines reach no Sigstore TUF mirror. A
	// Kyverno entry whose keys, roots or log keys Kyverno would load from
	// TUF (kyvernoTUF) is then refused, as Kyverno fails loading them.
	AirGapped bool
}

// VerifyLegacy verifies ref's .sig signatures, read in sigs, with e's key, ignoring the
// log first (the key decides), then, where the engine requires a log
// proof, refusing a signature that carries none and checking a carried
// one (its SET) against the Rekor key the policy names or the trusted
// root's: with neither given, a carried proof is unverifiable. A keyless
// entry is verified by its certificate (verifyKeyless).
//
// A refusal reached while a registry request failed is unverifiable, a
// fault (transportFaults.hide).
func (v CosignVerifier) VerifyLegacy(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) Verdict {
	ctx, faults := withTransportFaults(ctx)
	return faults.hide(v.verifyLegacy(ctx, ref, sigs, e))
}

// verifyLegacy is VerifyLegacy's verification.
func (v CosignVerifier) verifyLegacy(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) Verdict {
	if r, ok := v.tufRefusal(e); ok {
		return r
	}
	if e.Unverifiable != "" {
		return Verdict{Outcome: Unverifiable, Reason: e.Unverifiable}
	}
	if e.Keyless != nil {
		return v.verifyKeyless(ctx, ref, sigs, e)
	}
	co, err := v.checkOpts(ctx, ref, sigs, e)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: err.Error()}
	}
	if found, ok := v.verifiedWithLog(ctx, ref, co, e); ok {
		return layerAnnotations(found, e)
	}
	found, _, err := cosign.VerifyImageSignatures(ctx, ref, co)
	if err != nil {
		return annotationVerdict(verdictOf(err), e)
	}
	if v := layerAnnotations(found, e); v.Outcome != Verified {
		return v
	}
	if !e.Tlog {
		return Verdict{Outcome: Verified}
	}
	if carriesSET(found) {
		return v.verifyLog(ctx, ref, co, e)
	}
	if e.TlogSearch {
		return Verdict{Outcome: Unverifiable, Reason: searchText("signature", e)}
	}
	return Verdict{Outcome: Refused, Reason: "the signature verifies with the key, but carries no transparency-log proof, which the policy requires (signed with --tlog-upload=false); set keys.rekor.ignoreTlog: true if the log is not used, or sign again with the log"}
}

// tufRefusal is Kyverno's refusal of an entry on an air-gapped cluster:
// its legacy path loads what the entry does not name from Sigstore's
// TUF mirror (buildCosignOptions: getRekorPubs, getCTLogPubs, the Fulcio
// roots) and fails without it, whatever the image carries.
func (v CosignVerifier) tufRefusal(e KeyEntry) (Verdict, bool) {
	if !v.AirGapped || e.kyvernoTUF == "" {
		return Verdict{}, false
	}
	return Verdict{Outcome: Refused, Reason: fmt.Sprintf("Kyverno loads %s for the entry at %s from Sigstore's TUF mirror, which the cluster does not reach (--air-gapped): it fails loading them and refuses every image; name them in the policy (rekor.pubkey, ctlog.pubkey, roots) or set rekor.ignoreTlog and ctlog.ignoreSCT", e.kyvernoTUF, e.Path)}, true
}

// verifiedWithLog verifies once with the log proof required, where the
// entry requires it and the material to check it was given: the usual
// case, one fetch of the signatures. Any failure is told apart by the
// key alone first (refused by the key, no proof carried, a proof that
// fails), which fetches them again.
func (v CosignVerifier) verifiedWithLog(ctx context.Context, ref name.Digest, co *cosign.CheckOpts, e KeyEntry) ([]oci.Signature, bool) {
	if !e.Tlog {
		return nil, false
	}
	withLog, missing := v.logOpts(co, e)
	if missing != nil {
		return nil, false
	}
	found, _, err := cosign.VerifyImageSignatures(ctx, ref, withLog)
	return found, err == nil
}

// carriesSET reports whether one of the signatures (or attestations)
// carries its log proof: a Rekor SET (dev.sigstore.cosign/bundle).
func carriesSET(found []oci.Signature) bool {
	for _, s := range found {
		if b, err := s.Bundle(); err == nil && b != nil {
			return true
		}
	}
	return false
}

// searchText says, of a legacy signature or attestation that verifies
// with the key and carries no SET, under an engine that then searches
// Rekor for its entry online (policy-controller with a ctlog), that it
// cannot be decided offline, and what to supply.
func searchText(what string, e KeyEntry) string {
	return fmt.Sprintf("the %s verifies with the key at %s and carries no transparency-log proof (no SET: signed with --tlog-upload=false, or the proof not attached); "+
		"policy-controller, with the authority's ctlog, searches Rekor for its entry online, which is not decided offline: sign again with the log so that the SET is carried, "+
		"or drop the authority's ctlog if the log is not used", what, e.Path)
}

// checkOpts are cosign's options for one key: the key as verifier, the
// claim checked against the digest asked for (and the annotations the
// entry requires in the payload, as cosign verify -a), the log ignored.
func (v CosignVerifier) checkOpts(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) (*cosign.CheckOpts, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey([]byte(e.PEM))
	if err != nil {
		return nil, fmt.Errorf("the policy's key at %s does not parse: %w", e.Path, err)
	}
	sv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("the policy's key at %s cannot verify: %w", e.Path, err)
	}
	return &cosign.CheckOpts{
		SigVerifier:        sv,
		ClaimVerifier:      cosign.SimpleClaimVerifier,
		Annotations:        claimAnnotations(e),
		IgnoreTlog:         true,
		IgnoreSCT:          true,
		Offline:            true,
		RegistryClientOpts: v.registryOpts(ctx, ref, sigs),
	}, nil
}

// registryOpts read the signatures at the registry with the keychain and
// the transport, in sigs when it is not ref's own repository, noting
// each request's outcome in ctx's transportFaults.
func (v CosignVerifier) registryOpts(ctx context.Context, ref name.Digest, sigs name.Repository) []ociremote.Option {
	kc := v.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	rt := v.Transport
	if rt == nil {
		rt = remote.DefaultTransport
	}
	if f := transportFaultsOf(ctx); f != nil {
		rt = faultRecorder{next: rt, faults: f}
	}
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(rt)}
	if v.Transport != nil {
		// The Scanner's transport retries 429, 5xx and network errors
		// with backoff: go-containerregistry's retries on top would
		// multiply them.
		ropts = append(ropts, remote.WithRetryBackoff(remote.Backoff{Steps: 1}))
	}
	opts := []ociremote.Option{ociremote.WithRemoteOptions(ropts...)}
	if sigs != ref.Context() {
		// Signatures kept in another repository, as COSIGN_REPOSITORY
		// says to cosign verify.
		opts = append(opts, ociremote.WithTargetRepository(sigs))
	}
	return opts
}

// verdictOf reads cosign's error: a verification failure is a refusal
// (cosign's own text); anything else (a registry that failed, signatures
// not found: absence is the finder's to prove) is unverifiable, a fault.
// cosign folds a failed read of a signature's layer into
// ErrNoMatchingSignatures: the Verify methods hold such a refusal to the
// verification's transportFaults.
func verdictOf(err error) Verdict {
	var nomatch *cosign.ErrNoMatchingSignatures
	var failure *cosign.VerificationFailure
	if errors.As(err, &nomatch) || errors.As(err, &failure) {
		return Verdict{Outcome: Refused, Reason: err.Error()}
	}
	// Anything else (a connection refused, signatures not found again
	// after the finder found them) hides the answer: never a refusal.
	return Verdict{Outcome: Unverifiable, Fault: true, Reason: "reading the signatures: " + err.Error()}
}
