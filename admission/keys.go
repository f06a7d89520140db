package admission

import (
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// KeyEntry is one way a signature may be accepted: a public key the
// policy names inline, or, with Unverifiable set, a way regcheck cannot
// check offline (a KMS key, a Secret not read, keyless without a trust
// root), and what to supply.
type KeyEntry struct {
	// PEM is the public key, PEM-encoded.
	PEM string
	// Tlog: the engine requires a transparency-log proof for this entry.
	Tlog bool
	// TlogSearch: where a legacy signature carries no proof (no SET),
	// the engine searches Rekor for its entry online (policy-controller
	// with a ctlog: a Rekor client, not Offline), which regcheck cannot
	// decide offline; false: none carried is a refusal.
	TlogSearch bool
	// Unverifiable says why the entry cannot be checked offline.
	Unverifiable string
	// Path is where the entry is in the policy, for the findings.
	Path string
	// Repository is where this entry's signatures are read when not
	// beside the image ("" is the image's own repository).
	Repository string
	// Secret, when set, is the Kubernetes Secret the engine reads the
	// key from (secretkeys.go): unverifiable until SecretReader reads it.
	Secret *SecretKey
	// RekorPEM is the transparency log's public key the policy names
	// (Kyverno rekor.pubkey), checking a carried log proof offline; ""
	// leaves it to the trusted root given (--trusted-root).
	RekorPEM string
	// Keyless, when not nil, makes this a keyless entry: a certificate's
	// identity and the roots it chains to, instead of PEM.
	Keyless *Keyless
	// Annotations, when not nil, are the key-value pairs a signature must
	// carry to be accepted by this entry (Kyverno attestor entries'
	// annotations, else the verifyImages entry's; ImageValidatingPolicy
	// cosign.annotations). Where they are looked for is the engine's:
	// annotationsInLayer.
	Annotations map[string]string
	// annotationsInLayer: the engine compares Annotations with the
	// signature's OCI layer annotations (Kyverno ImageValidatingPolicy),
	// not with the signed payload's optional map as cosign verify -a and
	// Kyverno's ClusterPolicy do.
	annotationsInLayer bool
	// trustRoot and logTrustRoot name the policy-controller TrustRoots
	// whose material the entry takes (keyless.trustRootRef,
	// ctlog.trustRootRef), when they are read (Policies.withTrustRoot).
	trustRoot, logTrustRoot string
	// kyvernoBundle, for a Kyverno ClusterPolicy or Policy attestor
	// entry, is what decides the verifier Kyverno builds for a sigstore
	// bundle (kyvernobundle.go); nil for the other engines.
	kyvernoBundle *kyvernoBundleOpts
	// kyvernoTUF names what Kyverno's legacy path loads from Sigstore's
	// TUF mirror for this entry ("" nothing): what an air-gapped
	// cluster's Kyverno fails on (CosignVerifier.AirGapped).
	kyvernoTUF string
}

// AttestorSet is a set of entries of which Count must accept the
// signature (Kyverno attestors[].count; 0 is every entry).
type AttestorSet struct {
	Count   int
	Entries []KeyEntry
}

// kyvernoAttestors reads a verifyImages entry's attestor sets for its
// signature, as Kyverno 1.x reads them (pkg/engine/handlers/mutation,
// pkg/imageverification/imageverifiers: every set must pass, count
// entries within a set; a publicKeys holding several PEM keys is one
// entry per key for the signature: attestorSets). A Kyverno key requires a transparency-log entry unless
// keys.rekor.ignoreTlog is true (kyverno/kyverno pkg/cosign/cosign.go,
// buildCosignOptions: cosignOpts.IgnoreTlog = opts.IgnoreTlog, which only
// rekor.ignoreTlog sets).
func kyvernoAttestors(vi map[string]any) []AttestorSet {
	atts, _, _ := unstructured.NestedSlice(vi, "attestors")
	sets := attestorSets(atts, "", true)
	if key, ok, _ := unstructured.NestedString(vi, "key"); ok && len(atts) == 0 {
		// The deprecated single key: one set of one entry, the log required.
		if sk, ok := k8sSecretRef(key); ok {
			sets = append(sets, AttestorSet{Entries: []KeyEntry{secretEntry(sk, true, "key")}})
		} else {
			sets = append(sets, AttestorSet{Entries: pemEntries(key, true, "key", "a KMS or Secret key")})
		}
		// Converted to a keys attestor without a ctlog block
		// (api/kyverno/v1 ImageVerification.Convert): the SCT not ignored.
		for i := range sets[len(sets)-1].Entries {
			e := &sets[len(sets)-1].Entries[i]
			e.kyvernoBundle, e.kyvernoTUF = &kyvernoBundleOpts{}, kyvernoTUF(nil, *e)
		}
	}
	return sets
}

// attestorSets reads a list of Kyverno attestor sets (a rule's attestors,
// or an attestation's), its paths starting with prefix. With expand, an
// entry whose publicKeys holds several PEM keys is one entry per key, as
// Kyverno verifies a signature (pkg/engine/internal/imageverifier.go
// verifyAttestorSet: ExpandStaticKeys, then count over the expanded
// entries); without it the entry is its first key alone, as Kyverno
// verifies an attestation (verifyAttestations builds one verifier per
// entry, no ExpandStaticKeys, and pkg/image/verifiers/cpol/cosign
// decodePEM reads the first PEM block: cryptoutils.UnmarshalPEMToPublicKey).
func attestorSets(atts []any, prefix string, expand bool) []AttestorSet {
	var sets []AttestorSet
	for i, raw := range atts {
		a, _ := raw.(map[string]any)
		set := AttestorSet{}
		if c, ok, _ := unstructured.NestedInt64(a, "count"); ok {
			set.Count = int(c)
		}
		entries, _, _ := unstructured.NestedSlice(a, "entries")
		for j, rawE := range entries {
			e, _ := rawE.(map[string]any)
			repo, _, _ := unstructured.NestedString(e, "repository")
			kes := kyvernoEntry(e, fmt.Sprintf("%sattestors[%d].entries[%d]", prefix, i, j))
			if !expand && len(kes) > 1 {
				kes = kes[:1] // several PEM keys: the first
			}
			for _, ke := range kes {
				ke.Repository = repo
				ke.kyvernoBundle = kyvernoCTLog(e)
				ke.kyvernoTUF = kyvernoTUF(e, ke)
				set.Entries = append(set.Entries, ke)
			}
		}
		sets = append(sets, set)
	}
	return sets
}

// kyvernoEntry reads one attestor entry, and the annotations it
// requires (kyverno/kyverno pkg/engine/internal/imageverifier.go,
// buildCosignVerifier: opts.Annotations = attestor.Annotations when set).
func kyvernoEntry(e map[string]any, path string) []KeyEntry {
	out := kyvernoEntryKeys(e, path)
	if ann, found, _ := unstructured.NestedStringMap(e, "annotations"); found {
		for i := range out {
			out[i].Annotations = ann
		}
	}
	return out
}

// withAnnotations is sets with ann as the annotations of each entry that
// names none: a verifyImages entry's annotations (deprecated) are every
// attestor's unless the attestor names its own (buildCosignVerifier:
// opts.Annotations = imageVerify.Annotations, then the attestor's).
func withAnnotations(sets []AttestorSet, ann map[string]string) []AttestorSet {
	if ann == nil {
		return sets
	}
	out := slices.Clone(sets)
	for i := range out {
		out[i].Entries = slices.Clone(out[i].Entries)
		for j := range out[i].Entries {
			if out[i].Entries[j].Annotations == nil {
				out[i].Entries[j].Annotations = ann
			}
		}
	}
	return out
}

// kyvernoEntryKeys reads one attestor entry's key, keyless identity or
// what cannot be verified offline.
func kyvernoEntryKeys(e map[string]any, path string) []KeyEntry {
	keys, ok, _ := unstructured.NestedMap(e, "keys")
	if kl, isKeyless, _ := unstructured.NestedMap(e, "keyless"); !ok && isKeyless {
		return []KeyEntry{kyvernoKeyless(kl, path+".keyless")}
	}
	if !ok {
		what := "keyless identities"
		switch {
		case e["certificates"] != nil:
			what = "certificates"
		case e["attestor"] != nil:
			what = "a nested attestor"
		}
		return []KeyEntry{{Path: path, Unverifiable: what + " are not verified offline yet: give the signing key as keys.publicKeys"}}
	}
	ignore, _, _ := unstructured.NestedBool(keys, "rekor", "ignoreTlog")
	if pub, _, _ := unstructured.NestedString(keys, "publicKeys"); pub != "" {
		rekor, _, _ := unstructured.NestedString(keys, "rekor", "pubkey")
		if sk, ok := k8sSecretRef(pub); ok {
			se := secretEntry(sk, !ignore, path+".keys.publicKeys")
			se.RekorPEM = rekor
			return []KeyEntry{se}
		}
		out := pemEntries(pub, !ignore, path+".keys.publicKeys", "a KMS URI")
		for i := range out {
			out[i].RekorPEM = rekor
		}
		return out
	}
	// keys.secret: Kyverno hands cosign k8s://namespace/name
	// (pkg/engine/internal/imageverifier.go), which reads cosign.pub.
	ns, _, _ := unstructured.NestedString(keys, "secret", "namespace")
	if name, _, _ := unstructured.NestedString(keys, "secret", "name"); name != "" && ns != "" {
		sk := SecretKey{Namespace: ns, Name: name, DataKey: cosignPubKey, Inline: "keys.publicKeys"}
		return []KeyEntry{secretEntry(sk, !ignore, path+".keys.secret")}
	}
	what := "a Secret key (keys.secret) without a name and namespace"
	if _, kms := keys["kms"]; kms {
		what = "a KMS key (keys.kms)"
	}
	return []KeyEntry{{Path: path + ".keys", Unverifiable: what + " cannot be read offline: give the public key inline as keys.publicKeys"}}
}

// pemEntries splits keys into one entry per PEM public key; a value that
// is not PEM (a KMS URI, a k8s:// Secret) is one unverifiable entry.
func pemEntries(keys string, tlog bool, path, notPEM string) []KeyEntry {
	var out []KeyEntry
	rest := []byte(strings.TrimSpace(keys))
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		out = append(out, KeyEntry{PEM: string(pem.EncodeToMemory(b)), Tlog: tlog, Path: path})
	}
	if len(out) == 0 {
		return []KeyEntry{{Path: path, Unverifiable: fmt.Sprintf("%q is not a PEM public key (%s): it cannot be read offline; give the public key inline", truncate(keys, 40), notPEM)}}
	}
	return out
}

// truncate shortens s to n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// authorityAttestors reads a ClusterImagePolicy authority's key as one
// set of one entry (any authority of a policy admits, every policy that
// matches must: Rule.Alternatives, one Rule per policy). policy-controller checks a key authority against the
// transparency log only when the authority names one (ctlog.url);
// otherwise it ignores the log (sigstore/policy-controller
// pkg/webhook/validator.go, ValidatePolicySignaturesForAuthority: a
// Rekor client only when authority.CTLog != nil && authority.CTLog.URL
// != nil). With that client and no SET carried, cosign searches Rekor
// for the signature's entry (its Offline is set only when there is no
// client: "If there's keys however, use offline for verification"):
// TlogSearch.
func authorityAttestors(a map[string]any) []AttestorSet {
	url, _, _ := unstructured.NestedString(a, "ctlog", "url")
	ctlog := url != ""
	logRoot, _, _ := unstructured.NestedString(a, "ctlog", "trustRootRef")
	if key, ok, _ := unstructured.NestedMap(a, "key"); ok {
		if data, _, _ := unstructured.NestedString(key, "data"); data != "" {
			// The first PEM key only, as policy-controller reads key.data
			// (pkg/webhook/clusterimagepolicy/clusterimagepolicy_types.go,
			// KeyRef.UnmarshalJSON: cryptoutils.UnmarshalPEMToPublicKey,
			// one key): a second key in the data admits nothing.
			e := pemEntries(data, ctlog, "key.data", "a KMS or Secret key")[0]
			e.logTrustRoot, e.TlogSearch = logRoot, ctlog
			return []AttestorSet{{Entries: []KeyEntry{e}}}
		}
		if name, _, _ := unstructured.NestedString(key, "secretRef", "name"); name != "" {
			// Read in policy-controller's own namespace, whatever
			// secretRef.namespace says (inlineAndTrackSecret).
			sk := SecretKey{Name: name, Inline: "key.data"}
			e := secretEntry(sk, ctlog, "key.secretRef")
			e.TlogSearch = ctlog
			return []AttestorSet{{Entries: []KeyEntry{e}}}
		}
		what := "a Secret key (key.secretRef) without a name"
		if _, kms := key["kms"]; kms {
			what = "a KMS key (key.kms)"
		}
		return []AttestorSet{{Entries: []KeyEntry{{Path: "key", Unverifiable: what + " cannot be read offline: give the public key inline as key.data"}}}}
	}
	if kl, ok, _ := unstructured.NestedMap(a, "keyless"); ok {
		_, hasCTLog := a["ctlog"]
		e := authorityKeyless(kl, hasCTLog)
		e.logTrustRoot = logRoot
		_, e.Keyless.bundleTSA = a["rfc3161timestamp"]
		return []AttestorSet{{Entries: []KeyEntry{e}}}
	}
	return nil
}

// entryRepositories settles where each entry's signatures are read: an
// entry's own repository, else the rule's (Kyverno: "If specified
// Repository will override other OCI image repository locations for this
// Attestor", api/kyverno/v1 Attestor.Repository). When every entry reads
// from one repository, the rule's presence is judged there; when they
// differ, PerEntry says so and each entry's verification decides. also
// are more sets read the same way (an ImageValidatingPolicy's
// attestations' attestors).
func (n *Needs) entryRepositories(also ...[]AttestorSet) {
	repos := map[string]bool{}
	for _, sets := range append([][]AttestorSet{n.Sets}, also...) {
		for i := range sets {
			for j := range sets[i].Entries {
				e := &sets[i].Entries[j]
				if e.Repository == "" {
					e.Repository = n.Repository
				}
				repos[e.Repository] = true
			}
		}
	}
	switch len(repos) {
	case 0:
	case 1:
		for r := range repos {
			n.Repository = r
		}
	default:
		n.PerEntry = true
	}
}

// kyvernoTUF names what Kyverno's legacy path loads from Sigstore's TUF
// mirror for the attestor entry raw read as e (buildCosignOptions): the
// Fulcio roots of a keyless entry that names none, the Rekor keys where
// the log is required and rekor.pubkey is not given, the CT log keys
// unless ctlog.ignoreSCT or ctlog.pubkey; "" for none.
func kyvernoTUF(raw map[string]any, e KeyEntry) string {
	var need []string
	if e.Keyless != nil && e.Keyless.RootsPEM == "" {
		need = append(need, "the Fulcio roots")
	}
	if e.Tlog && e.RekorPEM == "" {
		need = append(need, "the Rekor public keys")
	}
	ignoreSCT, pub := false, ""
	for _, kind := range []string{"keys", "keyless", "certificates"} {
		if b, ok, _ := unstructured.NestedBool(raw, kind, "ctlog", "ignoreSCT"); ok {
			ignoreSCT = b
		}
		if p, _, _ := unstructured.NestedString(raw, kind, "ctlog", "pubkey"); p != "" {
			pub = p
		}
	}
	if !ignoreSCT && pub == "" {
		need = append(need, "the CT log public keys")
	}
	return strings.Join(need, ", ")
}
