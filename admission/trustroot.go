package admission

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/regcheck/regcheck/internal/inputfile"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/oci"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/tuf"
)

// LoadTrustedRoot reads a sigstore trusted root (trusted_root.json, as
// `cosign trusted-root create` writes it, or as Sigstore's TUF
// repository serves it): the Fulcio CAs, Rekor and CT logs' keys
// regcheck checks carried proofs and certificates against, offline.
func LoadTrustedRoot(path string) (*root.TrustedRoot, error) {
	data, err := inputfile.Read(path, inputfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("reading the trusted root: %w", err)
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("reading the trusted root %s: %w", path, err)
	}
	return tr, nil
}

// What to supply when material is missing.
const (
	supplyRekor = "no Rekor public key was given to check the signature's transparency-log proof (its SET) offline: " +
		"give a trusted root (--trusted-root FILE, made by cosign trusted-root create, with the log's key) or name the log's key in the policy (Kyverno rekor.pubkey)"
	supplyBundleRekor = "the bundle carries a transparency-log entry, and no Rekor public key was given to check it offline: " +
		"give the trusted root the engine verifies bundles with (--trusted-root FILE: Sigstore's, or one made by cosign trusted-root create with your log's key)"
	supplyCA = "no Fulcio CA was given to check the keyless certificate against: give a trusted root (--trusted-root FILE, made by " +
		"cosign trusted-root create, with the CA chain) or the roots in the policy (Kyverno keyless.roots, the policy-controller TrustRoot named by trustRootRef, with sigstoreKeys)"
	supplyCT = "the policy requires the certificate's SCT, and no CT log key was given: give a trusted root with the CT log's key " +
		"(--trusted-root), or the policy's ctlog.pubkey; or the policy ignores SCTs (Kyverno ctlog.ignoreSCT, policy-controller insecureIgnoreSCT)"
)

// verifyLog verifies again, the log proof required: the carried SET
// checked against the policy's Rekor key or the trusted root's. co is
// the key's options, the log ignored.
func (v CosignVerifier) verifyLog(ctx context.Context, ref name.Digest, co *cosign.CheckOpts, e KeyEntry) Verdict {
	withLog, missing := v.logOpts(co, e)
	if missing != nil {
		return *missing
	}
	if _, _, err := cosign.VerifyImageSignatures(ctx, ref, withLog); err != nil {
		return annotationVerdict(verdictOf(err), e)
	}
	return Verdict{Outcome: Verified}
}

// logOpts are co with the log proof required and the trust material
// that checks it, or the verdict that the material is missing.
func (v CosignVerifier) logOpts(co *cosign.CheckOpts, e KeyEntry) (*cosign.CheckOpts, *Verdict) {
	withLog := *co
	withLog.IgnoreTlog = false
	if missing, err := v.trust(&withLog, e); err != nil || missing != "" {
		m := materialVerdict(missing, err)
		return nil, &m
	}
	return &withLog, nil
}

// verifyKeyless verifies ref's signatures by their certificates: chained
// to the Fulcio CA given, of one of the entry's identities, valid at the
// time the log proof gives (its integrated time) when the engine
// requires one, else now.
func (v CosignVerifier) verifyKeyless(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry) Verdict {
	co, missing := v.keylessOpts(ctx, ref, sigs, e, cosign.SimpleClaimVerifier, claimAnnotations(e))
	if missing != nil {
		return v.uncertified(ctx, ref, sigs, e, signatures, *missing)
	}
	found, _, err := cosign.VerifyImageSignatures(ctx, ref, co)
	if err != nil {
		if e.TlogSearch && !v.anySET(ref, co, signatures) {
			return Verdict{Outcome: Unverifiable, Reason: searchText("signature", e) + " (offline, cosign says: " + err.Error() + ")"}
		}
		return annotationVerdict(verdictOf(err), e)
	}
	if k := e.Keyless.kyverno; k != nil {
		if err := k.anyMatches(found); err != nil {
			return kyvernoCertRefusal(err, e)
		}
	}
	return layerAnnotations(found, e)
}

// What anySET reads: the .sig tag's signatures or the .att tag's
// attestations.
const (
	signatures   = false
	attestations = true
)

// keylessOpts are the options cosign verifies a keyless entry's legacy
// signatures or attestations with (claims checked by claims, with
// annotations), the trust material included; or the verdict that the
// material is missing.
func (v CosignVerifier) keylessOpts(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, claims claimCheck, annotations map[string]any) (*cosign.CheckOpts, *Verdict) {
	co := &cosign.CheckOpts{
		ClaimVerifier:      claims,
		Annotations:        annotations,
		Identities:         cosignIdentities(e),
		IgnoreTlog:         !e.Tlog,
		IgnoreSCT:          e.Keyless.IgnoreSCT,
		Offline:            true,
		RegistryClientOpts: v.registryOpts(ctx, ref, sigs),
	}
	if missing, err := v.trust(co, e); err != nil || missing != "" {
		m := materialVerdict(missing, err)
		return nil, &m
	}
	return co, nil
}

// cosignIdentities are the identities cosign itself checks on a legacy
// keyless signature: none for a Kyverno attestor, which matches the
// certificates after cosign (kyvernoCert), the entry's otherwise.
func cosignIdentities(e KeyEntry) []cosign.Identity {
	if e.Keyless.kyverno != nil {
		return nil
	}
	return e.Keyless.Identities
}

// kyvernoCertRefusal is the refusal Kyverno gives when no verified
// certificate matches the attestor, in its own words.
func kyvernoCertRefusal(err error, e KeyEntry) Verdict {
	return Verdict{Outcome: Refused, Reason: fmt.Sprintf("the signature verifies, but its certificate does not match the keyless attestor at %s as Kyverno matches it (subject and issuer as wildcards, additionalExtensions): %v", e.Path, err)}
}

// uncertified is the verdict on a keyless entry whose trust material is
// missing: a refusal when every legacy signature (or, with att,
// attestation) there is carries no certificate, which cosign refuses
// whatever roots the engine holds ("no certificate found on
// signature"); missing otherwise, or when they cannot be read.
func (v CosignVerifier) uncertified(ctx context.Context, ref name.Digest, sigs name.Repository, e KeyEntry, att bool, missing Verdict) Verdict {
	list, err := v.legacyOf(ref, v.registryOpts(ctx, ref, sigs), att)
	if err != nil || len(list) == 0 {
		return missing
	}
	for _, s := range list {
		if c, err := s.Cert(); err != nil || c != nil {
			return missing
		}
	}
	what := "signatures"
	if att {
		what = "attestations"
	}
	return Verdict{Outcome: Refused, Reason: fmt.Sprintf("the %s carry no certificate (they were signed with a key), and the entry at %s verifies keyless: cosign refuses them whatever roots the engine holds (no certificate found on signature)", what, e.Path)}
}

// legacyOf reads ref's legacy signatures (with att, attestations).
func (v CosignVerifier) legacyOf(ref name.Digest, opts []ociremote.Option, att bool) ([]oci.Signature, error) {
	img, err := ociremote.SignedImage(ref, opts...)
	if err != nil {
		return nil, err
	}
	read := img.Signatures
	if att {
		read = img.Attestations
	}
	sigs, err := read()
	if err != nil {
		return nil, err
	}
	return sigs.Get()
}

// anySET reports whether one of ref's legacy signatures (or, with att,
// attestations) carries a SET; false too when they cannot be read again
// (cosign's error then says why).
func (v CosignVerifier) anySET(ref name.Digest, co *cosign.CheckOpts, att bool) bool {
	list, err := v.legacyOf(ref, co.RegistryClientOpts, att)
	return err == nil && carriesSET(list)
}

// materialVerdict: trust material missing or unreadable is unverifiable.
func materialVerdict(missing string, err error) Verdict {
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: err.Error()}
	}
	return Verdict{Outcome: Unverifiable, Reason: missing}
}

// trust puts into co the trust material the verification needs: the
// trusted root as a whole (cosign's sigstore-go path) when the policy
// names none of its own, else the policy's keys and roots with the
// trusted root's filling what the policy leaves out. It says what is
// missing ("" when nothing is), or why the policy's material does not
// parse.
func (v CosignVerifier) trust(co *cosign.CheckOpts, e KeyEntry) (string, error) {
	keyless := e.Keyless != nil
	needSCT := keyless && !e.Keyless.IgnoreSCT
	own := e.RekorPEM != "" || keyless && (e.Keyless.RootsPEM != "" || e.Keyless.CTLogPEM != "")
	if !own && v.TrustedRoot != nil {
		tm := v.TrustedRoot
		switch {
		case keyless && len(tm.FulcioCertificateAuthorities()) == 0:
			return supplyCA, nil
		case !co.IgnoreTlog && len(tm.RekorLogs()) == 0:
			return supplyRekor, nil
		case needSCT && len(tm.CTLogs()) == 0:
			return supplyCT, nil
		}
		co.TrustedMaterial = tm
		return "", nil
	}
	if keyless {
		if ok, err := v.fulcioRoots(co, e.Keyless.RootsPEM, e.Keyless.splitRoots); err != nil || !ok {
			return supplyCA, err
		}
	}
	if !co.IgnoreTlog {
		keys, err := v.logKeys(e.RekorPEM, "rekor.pubkey", func(tm root.TrustedMaterial) map[string]*root.TransparencyLog { return tm.RekorLogs() })
		if err != nil || keys == nil {
			return supplyRekor, err
		}
		co.RekorPubKeys = keys
	}
	if keyless && needSCT {
		keys, err := v.logKeys(e.Keyless.CTLogPEM, "ctlog.pubkey", func(tm root.TrustedMaterial) map[string]*root.TransparencyLog { return tm.CTLogs() })
		if err != nil || keys == nil {
			return supplyCT, err
		}
		co.CTLogPubKeys = keys
	}
	return "", nil
}

// logKeys are a log's keys as cosign's legacy options take them: the
// policy's PEM keys (one or more blocks), else the trusted root's logs; nil when there are none.
func (v CosignVerifier) logKeys(pemKeys, field string, logs func(root.TrustedMaterial) map[string]*root.TransparencyLog) (*cosign.TrustedTransparencyLogPubKeys, error) {
	keys := cosign.NewTrustedTransparencyLogPubKeys()
	if strings.TrimSpace(pemKeys) != "" {
		rest := []byte(pemKeys)
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if err := keys.AddTransparencyLogPubKey(pem.EncodeToMemory(b), tuf.Active); err != nil {
				return nil, fmt.Errorf("the policy's %s does not parse: %w", field, err)
			}
		}
		if len(keys.Keys) == 0 {
			return nil, fmt.Errorf("the policy's %s holds no PEM key", field)
		}
		return &keys, nil
	}
	if v.TrustedRoot == nil {
		return nil, nil
	}
	for _, l := range logs(v.TrustedRoot) {
		b, err := cryptoutils.MarshalPublicKeyToPEM(l.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("a log key of the trusted root: %w", err)
		}
		if err := keys.AddTransparencyLogPubKey(b, tuf.Active); err != nil {
			return nil, fmt.Errorf("a log key of the trusted root: %w", err)
		}
	}
	if len(keys.Keys) == 0 {
		return nil, nil
	}
	return &keys, nil
}

// fulcioRoots puts the policy's roots (every certificate of rootsPEM, or
// with split its self-signed ones, the others as intermediates), or else
// the trusted root's Fulcio CAs, into co; false when there are none, an
// error when the policy's do not parse.
func (v CosignVerifier) fulcioRoots(co *cosign.CheckOpts, rootsPEM string, split bool) (bool, error) {
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	n := 0
	if rootsPEM != "" {
		certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(rootsPEM))
		if err != nil {
			return false, fmt.Errorf("the policy's roots do not parse: %w", err)
		}
		for _, c := range certs {
			if split && !bytes.Equal(c.RawSubject, c.RawIssuer) {
				inter.AddCert(c)
				continue
			}
			roots.AddCert(c)
			n++
		}
	} else if v.TrustedRoot != nil {
		for _, ca := range v.TrustedRoot.FulcioCertificateAuthorities() {
			fca, ok := ca.(*root.FulcioCertificateAuthority)
			if !ok || fca.Root == nil {
				continue
			}
			roots.AddCert(fca.Root)
			n++
			for _, c := range fca.Intermediates {
				inter.AddCert(c)
			}
		}
	}
	if n == 0 {
		return false, nil
	}
	co.RootCerts, co.IntermediateCerts = roots, inter
	return true, nil
}

// bundleLogMaterial is the trusted material a bundle's log entry is
// checked against: the trusted root given (--trusted-root), standing for
// the engine's. Kyverno checks a bundle with the TUF trusted root it is
// configured with, never the policy's rekor.pubkey (kyverno/kyverno
// pkg/image/verifiers/cpol/cosign/sigstore.go, getTrustedMaterial: the
// key's material and sigstoretuf.TrustedRoot), as cosign verify
// --new-bundle-format takes only a trusted root ("trusted root is
// required when using new bundle format"). nil, and what to supply, when
// it holds no Rekor log.
func (v CosignVerifier) bundleLogMaterial(e KeyEntry) (root.TrustedMaterial, string) {
	if v.TrustedRoot != nil && len(v.TrustedRoot.RekorLogs()) > 0 {
		return v.TrustedRoot, ""
	}
	if strings.TrimSpace(e.RekorPEM) != "" {
		return nil, supplyBundleRekor + "; the policy's rekor.pubkey is not what Kyverno checks a bundle's entry with (it takes its TUF trusted root): give that trusted root as --trusted-root"
	}
	return nil, supplyBundleRekor
}

// claimCheck is cosign's CheckOpts.ClaimVerifier.
type claimCheck = func(sig oci.Signature, imageDigest v1.Hash, annotations map[string]any) error
