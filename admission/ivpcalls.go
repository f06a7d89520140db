package admission

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The validation shapes read: the ones Kyverno's documentation
// (kyverno.io/docs/policy-types/image-validating-policy) and its
// conformance tests (test/conformance/chainsaw/image-validating-policies)
// write, whitespace aside:
//
//	images.containers.map(image, verifyImageSignatures(image, [attestors.a, attestors.b])).all(e, e > 0)
//	images.containers.all(image, verifyImageSignatures(image, [attestors.a]) > 0)
//	images.containers.map(image, verifyAttestationSignatures(image, attestations.x, [attestors.a])).all(e, e > 0)
//
// over images.containers, initContainers or ephemeralContainers, the
// count compared with > n, >= n, or == the number of attestors listed.
// Any other expression is not evaluated: unknown under Deny.
var (
	mapAll = regexp.MustCompile(`^images\.(containers|initContainers|ephemeralContainers)\.map\((\w+),(verify\w+)\((\w+),(.*)\)\)\.all\((\w+),(\w+)(>=|>|==)(\d+)\)$`)
	allCmp = regexp.MustCompile(`^images\.(containers|initContainers|ephemeralContainers)\.all\((\w+),(verify\w+)\((\w+),(.*)\)(>=|>|==)(\d+)\)$`)
	// callArgs are a call's arguments after the image: an optional
	// attestations.x, and the list of attestors.
	callArgs = regexp.MustCompile(`^(?:attestations\.(\w+),)?\[((?:attestors\.\w+,?)*)\]$`)
)

// ivpCall is one recognised verification call and how its count is
// compared.
type ivpCall struct {
	fn          string   // verifyImageSignatures or verifyAttestationSignatures
	attestation string   // attestations.<name>, for verifyAttestationSignatures
	attestors   []string // attestors.<name>, in order
	op          string
	n           int
}

// parseCall recognises expr as one of the documented shapes.
func parseCall(expr string) (ivpCall, bool) {
	s := strings.Join(strings.Fields(expr), "")
	var c ivpCall
	var args string
	if m := mapAll.FindStringSubmatch(s); m != nil {
		if m[2] != m[4] || m[6] != m[7] {
			return c, false
		}
		c.fn, args, c.op = m[3], m[5], m[8]
		c.n, _ = strconv.Atoi(m[9])
	} else if m := allCmp.FindStringSubmatch(s); m != nil {
		if m[2] != m[4] {
			return c, false
		}
		c.fn, args, c.op = m[3], m[5], m[6]
		c.n, _ = strconv.Atoi(m[7])
	} else {
		return c, false
	}
	a := callArgs.FindStringSubmatch(args)
	if a == nil || c.fn != "verifyImageSignatures" && c.fn != "verifyAttestationSignatures" ||
		(c.fn == "verifyAttestationSignatures") != (a[1] != "") {
		return c, false
	}
	c.attestation = a[1]
	for _, at := range strings.Split(a[2], ",") {
		if at != "" {
			c.attestors = append(c.attestors, strings.TrimPrefix(at, "attestors."))
		}
	}
	return c, len(c.attestors) > 0
}

// need is how many of the call's attestors must verify for it to pass;
// ok false when the comparison is not one regcheck models (== fewer than
// all: more verifying would fail it; a need above the count: it never
// passes).
func (c ivpCall) need() (int, bool) {
	k := len(c.attestors)
	var n int
	switch c.op {
	case ">":
		n = c.n + 1
	case ">=":
		n = c.n
	case "==":
		if c.n != k {
			return 0, false
		}
		n = k
	}
	return n, n <= k
}

// readValidations reads spec.validations into what an image needs: a
// signature verified by a set per verifyImageSignatures call (every
// validation must pass, so every set), and an attestation of each
// predicate type verifyAttestationSignatures names, signed by a set of
// the attestors it lists (kyverno/kyverno pkg/cel/libs/imageverify/impl.go,
// verify_image_attestations_string_string_stringarray: the count of the
// attestors whose VerifyAttestationSignature passes; the verifier,
// pkg/image/verifiers/ivpol/cosign/verifier.go, verifies the attestations
// with the attestor's key, then looks for the predicate type among those
// that verified). What is not recognised is kept in iv.unevaluated.
func (iv *ivpSpec) readValidations(spec map[string]any) Needs {
	attestors := ivpAttestors(spec)
	attestations := ivpAttestations(spec)
	n := Needs{Format: AnyFormat}
	vals, _, _ := unstructured.NestedSlice(spec, "validations")
	for i, raw := range vals {
		v, _ := raw.(map[string]any)
		expr, _, _ := unstructured.NestedString(v, "expression")
		path := fmt.Sprintf("spec.validations[%d]", i)
		c, ok := parseCall(expr)
		if !ok {
			iv.unevaluated = append(iv.unevaluated, fmt.Sprintf("%s (%s)", path, truncate(strings.Join(strings.Fields(expr), " "), 80)))
			continue
		}
		need, ok := c.need()
		if !ok {
			iv.unevaluated = append(iv.unevaluated, fmt.Sprintf("%s (a count compared with %s %d over %d attestors)", path, c.op, c.n, len(c.attestors)))
			continue
		}
		if need <= 0 {
			continue // always true
		}
		if slices.ContainsFunc(c.attestors, func(a string) bool { return strings.HasSuffix(attestors[a].Path, ".notary") }) {
			// A Notation signature is an OCI referrer regcheck does not
			// take for a cosign signature: presence would be misjudged.
			iv.unevaluated = append(iv.unevaluated, fmt.Sprintf("%s (a Notary attestor: Notation signatures are not verified by regcheck yet)", path))
			continue
		}
		if c.fn == "verifyAttestationSignatures" {
			t, ok := attestations[c.attestation]
			if !ok {
				iv.unevaluated = append(iv.unevaluated, fmt.Sprintf("%s (attestations.%s: an intoto attestation of this name is not in spec.attestations)", path, c.attestation))
				continue
			}
			set, err := ivpSet(attestors, c.attestors, need)
			if err != nil {
				iv.unevaluated = append(iv.unevaluated, fmt.Sprintf("%s (%v)", path, err))
				continue
			}
			n.Predicates = append(n.Predicates, t)
			n.Attestations = append(n.Attestations, Attestation{PredicateType: t, Sets: []AttestorSet{set}, Path: path + " (attestations." + c.attestation + ")"})
			continue
		}
		set, err := ivpSet(attestors, c.attestors, need)
		if err != nil {
			iv.unevaluated = append(iv.unevaluated, fmt.Sprintf("%s (%v)", path, err))
			continue
		}
		n.Signature = true
		n.Sets = append(n.Sets, set)
	}
	n.entryRepositories(n.attestationSets()...)
	return n
}

// attestationSets are the attestor sets of n's attestations, which read
// in their entries' repositories as the signature's sets do.
func (n *Needs) attestationSets() [][]AttestorSet {
	var out [][]AttestorSet
	for _, a := range n.Attestations {
		out = append(out, a.Sets)
	}
	return out
}

// ivpSet is the attestor set of one call: need of the named attestors'
// entries (0: all of them).
func ivpSet(attestors map[string]KeyEntry, names []string, need int) (AttestorSet, error) {
	set := AttestorSet{Count: need}
	if need == len(names) {
		set.Count = 0
	}
	for _, nm := range names {
		e, ok := attestors[nm]
		if !ok {
			return set, fmt.Errorf("attestors.%s is not in spec.attestors", nm)
		}
		set.Entries = append(set.Entries, e)
	}
	return set, nil
}

// ivpAttestations are the intoto attestations by name: their predicate
// type. A referrer attestation (an OCI 1.1 artifact type) is not among
// them: a call naming one is not evaluated.
func ivpAttestations(spec map[string]any) map[string]string {
	out := map[string]string{}
	list, _, _ := unstructured.NestedSlice(spec, "attestations")
	for _, raw := range list {
		m, _ := raw.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		if t, _, _ := unstructured.NestedString(m, "intoto", "type"); name != "" && t != "" {
			out[name] = t
		}
	}
	return out
}

// ivpAttestors reads spec.attestors by name, each as one key entry: a
// verifyImageSignatures call counts attestors, and Kyverno reads one key
// per attestor (opts.go, decodePEM: the first PEM block).
func ivpAttestors(spec map[string]any) map[string]KeyEntry {
	out := map[string]KeyEntry{}
	list, _, _ := unstructured.NestedSlice(spec, "attestors")
	for i, raw := range list {
		m, _ := raw.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		if name == "" {
			continue
		}
		out[name] = ivpEntry(m, fmt.Sprintf("spec.attestors[%d] (%s)", i, name))
	}
	return out
}

// ivpFieldNames rename, in a message kyvernoEntry wrote, a ClusterPolicy
// field to the ImageValidatingPolicy's.
var ivpFieldNames = strings.NewReplacer("keys.publicKeys", "cosign.key.data", "keys.kms", "cosign.key.kms", "keys.secret", "a Secret")

// ivpEntry reads one attestor through kyvernoEntry, the ClusterPolicy
// path, so that what that path learns to verify (keyless with a trust
// root, a Secret key) applies here too: the attestor's cosign block is
// written as a ClusterPolicy entry (key.data as keys.publicKeys, ctlog's
// insecureIgnoreTlog and rekorPubKey as keys.rekor, keyless with one
// identity as keyless, certificate as certificates, source.repository as
// the entry's repository). A notary attestor, a key given by expression,
// a tag prefix, keyless with several identities are not verified.
func ivpEntry(att map[string]any, path string) KeyEntry {
	cos, ok, _ := unstructured.NestedMap(att, "cosign")
	if !ok {
		if _, notary := att["notary"]; notary {
			return KeyEntry{Path: path + ".notary", Unverifiable: "a Notary attestor (Notation signatures) is not verified by regcheck yet: cosign attestors only"}
		}
		return KeyEntry{Path: path, Unverifiable: "an attestor with neither cosign nor notary"}
	}
	repo, _, _ := unstructured.NestedString(cos, "source", "repository")
	if p, _, _ := unstructured.NestedString(cos, "source", "tagPrefix"); p != "" {
		return KeyEntry{Path: path + ".cosign.source.tagPrefix", Unverifiable: "signatures under a tag prefix are not read by regcheck"}
	}
	e, sub, why := cpEntry(cos)
	if why != "" {
		return KeyEntry{Path: path + ".cosign" + sub, Unverifiable: why, Repository: repo}
	}
	if ann, ok := cos["annotations"]; ok {
		e["annotations"] = ann
	}
	entries := kyvernoEntry(e, path)
	out := entries[0] // the first PEM key, as Kyverno reads it
	out.Path = path + ".cosign" + sub
	out.Unverifiable = ivpFieldNames.Replace(out.Unverifiable)
	if out.Unverifiable != "" && sub == ".keyless" {
		out.Unverifiable += "; Kyverno itself checks keyless signatures against the Fulcio roots (cosign.keyless.roots, else its TUF root) and the Rekor key (cosign.ctlog.rekorPubKey): that is the trust material to supply"
	}
	out.Repository = repo
	if out.Keyless != nil {
		// With the log ignored and a trusted root (always, keyless),
		// a detected bundle is verified at its RFC 3161 timestamp
		// (pkg/image/verifiers/ivpol/cosign/verifier.go,
		// shouldUseSignedTimestamps).
		k := *out.Keyless
		k.bundleSignedTime = true
		out.Keyless = &k
	}
	// Kyverno compares cosign.annotations with the verified signature's
	// OCI annotations (pkg/image/verifiers/ivpol/cosign/verifier.go,
	// VerifyImageSignature; certs.go, checkSignatureAnnotations:
	// sig.Annotations()), not with the signed payload.
	out.annotationsInLayer = len(out.Annotations) > 0
	return out
}

// cpEntry writes a cosign attestor as a ClusterPolicy attestor entry;
// sub is the field it was read from; why says why it cannot be written.
func cpEntry(cos map[string]any) (e map[string]any, sub, why string) {
	rekor := map[string]any{}
	if ig, _, _ := unstructured.NestedBool(cos, "ctlog", "insecureIgnoreTlog"); ig {
		rekor["ignoreTlog"] = true
	}
	if k, _, _ := unstructured.NestedString(cos, "ctlog", "rekorPubKey"); k != "" {
		rekor["pubkey"] = k
	}
	if u, _, _ := unstructured.NestedString(cos, "ctlog", "url"); u != "" {
		rekor["url"] = u
	}
	if key, ok, _ := unstructured.NestedMap(cos, "key"); ok {
		data, _, _ := unstructured.NestedString(key, "data")
		kms, _, _ := unstructured.NestedString(key, "kms")
		switch {
		case data != "":
			return map[string]any{"keys": map[string]any{"publicKeys": data, "rekor": rekor}}, ".key.data", ""
		case kms != "":
			return map[string]any{"keys": map[string]any{"kms": kms, "rekor": rekor}}, ".key.kms", ""
		}
		return nil, ".key.expression", "a key given by a CEL expression is not evaluated: give the public key as cosign.key.data"
	}
	if kl, ok, _ := unstructured.NestedMap(cos, "keyless"); ok {
		ids, _, _ := unstructured.NestedSlice(kl, "identities")
		if len(ids) != 1 {
			return nil, ".keyless", fmt.Sprintf("keyless with %d identities is not verified offline by regcheck", len(ids))
		}
		id, _ := ids[0].(map[string]any)
		if _, own := cos["trustedRoot"]; own {
			// Kyverno checks the certificate against it, not its TUF
			// root (opts.go, resolveTrustedMaterial), and --trusted-root
			// is not taken in its place.
			return nil, ".trustedRoot", "a keyless attestor with its own trusted root (cosign.trustedRoot) is not verified offline by regcheck: Kyverno verifies the certificate against that root, not --trusted-root"
		}
		if _, ok := id["subjectExpression"]; ok {
			return nil, ".keyless.identities[0].subjectExpression", "a subject given by a CEL expression is not evaluated: give it as subject or subjectRegExp"
		}
		k := map[string]any{"rekor": rekor}
		for _, f := range []string{"subject", "issuer", "subjectRegExp", "issuerRegExp"} {
			if v, _, _ := unstructured.NestedString(id, f); v != "" {
				k[f] = v
			}
		}
		if roots, _, _ := unstructured.NestedString(kl, "roots"); roots != "" {
			k["roots"] = roots
		}
		// opts.IgnoreSCT = att.CTLog.InsecureIgnoreSCT (kyverno
		// pkg/image/verifiers/ivpol/cosign/opts.go, checkOptions).
		if ig, _, _ := unstructured.NestedBool(cos, "ctlog", "insecureIgnoreSCT"); ig {
			k["ctlog"] = map[string]any{"ignoreSCT": true}
		}
		return map[string]any{"keyless": k}, ".keyless", ""
	}
	if c, ok, _ := unstructured.NestedMap(cos, "certificate"); ok {
		cert, _, _ := unstructured.NestedString(c, "cert", "value")
		chain, _, _ := unstructured.NestedString(c, "certChain", "value")
		return map[string]any{"certificates": map[string]any{"cert": cert, "certChain": chain, "rekor": rekor}}, ".certificate", ""
	}
	return nil, "", "a cosign attestor with no key, keyless or certificate"
}
