package admission

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// TrustRootKeys is the offline material of a policy-controller TrustRoot
// (policy.sigstore.dev/v1alpha1): its spec.sigstoreKeys, PEM-encoded.
type TrustRootKeys struct {
	// RootsPEM are the certificate authorities' chains.
	RootsPEM string
	// RekorPEM and CTLogPEM are the transparency and CT logs' keys.
	RekorPEM, CTLogPEM string
	// Unreadable says why the TrustRoot gives no material offline (a
	// TUF repository or remote mirror), "" when it does.
	Unreadable string
}

// trustRootsGVR is policy-controller's TrustRoot kind.
var trustRootsGVR = schema.GroupVersionResource{Group: "policy.sigstore.dev", Version: "v1alpha1", Resource: "trustroots"}

// isTrustRoot reports whether an object is a policy-controller TrustRoot.
func isTrustRoot(apiVersion, kind string) bool {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.Group == "policy.sigstore.dev" && kind == "TrustRoot"
}

// trustRootOf reads a TrustRoot's spec.sigstoreKeys as policy-controller
// does (pkg/webhook/validator.go, fulcioCertsFromAuthority and
// rekorKeysFromTrustRef: each certificate authority's certChain, each
// tLog's and ctLog's publicKey, PEM bytes base64-encoded in the object). A
// TUF repository (spec.repository) or remote mirror (spec.remote) is not
// read: it would need TUF, and regcheck asks no TUF.
func trustRootOf(obj *unstructured.Unstructured) TrustRootKeys {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	sk, ok, _ := unstructured.NestedMap(spec, "sigstoreKeys")
	if !ok {
		return TrustRootKeys{Unreadable: fmt.Sprintf("the TrustRoot %s holds a TUF repository or remote mirror, not sigstoreKeys: it is not read offline; give its trusted root as --trusted-root", obj.GetName())}
	}
	var out TrustRootKeys
	var bad []string
	field := func(list, key string) string {
		var b strings.Builder
		items, _, _ := unstructured.NestedSlice(sk, list)
		for i, raw := range items {
			m, _ := raw.(map[string]any)
			s, _, _ := unstructured.NestedString(m, key)
			pem, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s[%d].%s", list, i, key))
				continue
			}
			b.Write(pem)
			b.WriteString("\n")
		}
		return b.String()
	}
	out.RootsPEM = field("certificateAuthorities", "certChain")
	out.RekorPEM = field("tLogs", "publicKey")
	out.CTLogPEM = field("ctLogs", "publicKey")
	if len(bad) > 0 {
		out = TrustRootKeys{Unreadable: fmt.Sprintf("the TrustRoot %s: %s not base64", obj.GetName(), strings.Join(bad, ", "))}
	}
	return out
}

// readTrustRoots lists the cluster's TrustRoots: none when the kind is
// not served; a warning when the list fails otherwise.
func (ps *Policies) readTrustRoots(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface) []Problem {
	if len(servedOf(disc, []schema.GroupVersionResource{trustRootsGVR})) == 0 {
		return nil
	}
	list, err := dyn.Resource(trustRootsGVR).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return []Problem{{Warning: true, Source: "cluster", Message: fmt.Sprintf("listing %s: %v; the authorities naming a TrustRoot are not verified (unknown)", trustRootsGVR.GroupResource(), err)}}
	}
	for i := range list.Items {
		ps.addTrustRoot(&list.Items[i])
	}
	return nil
}

// addTrustRoot keeps a TrustRoot's material by name.
func (ps *Policies) addTrustRoot(obj *unstructured.Unstructured) {
	if ps.TrustRoots == nil {
		ps.TrustRoots = map[string]TrustRootKeys{}
	}
	ps.TrustRoots[obj.GetName()] = trustRootOf(obj)
}

// withTrustRoot is e with the material of the TrustRoots it names
// (policy-controller keyless.trustRootRef for the CA and CT log,
// ctlog.trustRootRef for Rekor), as the policy's own: e as it is when it
// names none. A TrustRoot named and not read (not among the files, or
// the cluster's list failed or does not hold it), or one that gives no
// material offline, makes e unverifiable: policy-controller cannot build
// the authority without it ("trustRootRef %s not found",
// sigstore/policy-controller pkg/webhook/validator.go,
// sigstoreKeysFromContext and rekorKeysFromTrustRef), and --trusted-root
// is never taken in its place.
func (ps *Policies) withTrustRoot(e KeyEntry) KeyEntry {
	if ps == nil || e.Unverifiable != "" {
		return e
	}
	if e.logTrustRoot != "" {
		tr := ps.trustRoot(e.logTrustRoot, "ctlog.trustRootRef")
		if tr.Unreadable != "" {
			e.Unverifiable = tr.Unreadable
			return e
		}
		e.RekorPEM = tr.RekorPEM
	}
	if e.trustRoot != "" && e.Keyless != nil {
		tr := ps.trustRoot(e.trustRoot, "keyless.trustRootRef")
		if tr.Unreadable != "" {
			e.Unverifiable = tr.Unreadable
			return e
		}
		k := *e.Keyless
		k.RootsPEM, k.CTLogPEM, k.splitRoots = tr.RootsPEM, tr.CTLogPEM, true
		e.Keyless = &k
	}
	return e
}

// trustRoot is the TrustRoot a policy names at field; one not read has
// Unreadable saying so.
func (ps *Policies) trustRoot(name, field string) TrustRootKeys {
	if tr, ok := ps.TrustRoots[name]; ok {
		return tr
	}
	return TrustRootKeys{Unreadable: fmt.Sprintf("the TrustRoot %s the policy names (%s) was not read: it is not among the files, or the cluster's TrustRoots do not hold it (or could not be listed), and policy-controller cannot build the authority without it: "+
		"give the TrustRoot (-f its manifest, or let regcheck list trustroots.policy.sigstore.dev); --trusted-root is not taken in its place", name, field)}
}
