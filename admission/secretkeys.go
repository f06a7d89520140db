package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PolicyControllerNamespace is policy-controller's system namespace as
// its own manifests install it (config/100-namespace.yaml), where it
// reads every key.secretRef: the reconciler reads
// r.secretlister.Secrets(system.Namespace()), whatever namespace the
// reference names (sigstore/policy-controller
// pkg/reconciler/clusterimagepolicy/clusterimagepolicy.go,
// inlineAndTrackSecret).
const PolicyControllerNamespace = "cosign-system"

// cosignPubKey is the entry of a Secret Kyverno and cosign read a public
// key from (kyverno/kyverno api/kyverno/v1 SecretReference: "The provided
// secret must contain a key named cosign.pub"; sigstore/cosign
// pkg/signature/keys.go, PublicKeyFromKeyRefWithHashAlgo:
// s.Data["cosign.pub"]).
const cosignPubKey = "cosign.pub"

// k8sScheme is cosign's reference to a Secret, k8s://namespace/name
// (sigstore/cosign pkg/cosign/kubernetes/secret.go, KeyReference and
// parseRef), which Kyverno passes to cosign for keys.secret and for a
// publicKeys that is not PEM (pkg/engine/internal/imageverifier.go,
// pkg/image/verifiers/cpol/cosign/cosign.go).
const k8sScheme = "k8s://"

// SecretKey is a Kubernetes Secret an engine reads a policy's public key
// from.
type SecretKey struct {
	// Namespace and Name are the Secret's. For policy-controller the
	// namespace is "" until read: its system namespace.
	Namespace, Name string
	// DataKey is the entry holding the PEM key; "" is the Secret's only
	// entry (policy-controller refuses a Secret with more than one).
	DataKey string
	// Inline is the policy field the key may be given in instead
	// (keys.publicKeys, key.data), for the advice.
	Inline string
}

// String names the Secret and its entry, never what it holds.
func (s SecretKey) String() string {
	ns := s.Namespace
	if ns == "" {
		ns = PolicyControllerNamespace
	}
	if s.DataKey == "" {
		return fmt.Sprintf("Secret %s/%s", ns, s.Name)
	}
	return fmt.Sprintf("Secret %s/%s (%s)", ns, s.Name, s.DataKey)
}

// k8sSecretRef reads cosign's k8s://namespace/name; ok is false for any
// other key reference.
func k8sSecretRef(ref string) (SecretKey, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(ref), k8sScheme)
	if !ok {
		return SecretKey{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return SecretKey{}, false
	}
	return SecretKey{Namespace: ns, Name: name, DataKey: cosignPubKey, Inline: "keys.publicKeys"}, true
}

// secretEntry is the entry of a key kept in a Secret, before the Secret
// is read: unverifiable, saying where the key is and what to do.
// ReadSecrets replaces it with the key when the Secret can be read.
func secretEntry(s SecretKey, tlog bool, path string) KeyEntry {
	return KeyEntry{Path: path, Tlog: tlog, Secret: &s,
		Unverifiable: fmt.Sprintf("the key is kept in %s, which is read only with the cluster's policies: check against the cluster, or give the public key inline as %s", s, s.Inline)}
}

// SecretReader reads the Secrets the policies name their keys in, with
// a GET on each, once: never a list.
type SecretReader struct {
	Client kubernetes.Interface
	// SystemNamespace is policy-controller's namespace;
	// "" is PolicyControllerNamespace.
	SystemNamespace string
}

// secretRead is one Secret's GET: its data, or why it is not there.
type secretRead struct {
	data map[string][]byte
	err  error
}

// ReadSecrets reads the key of every entry of ps kept in a Secret: an
// entry whose Secret holds a PEM public key is verified with it as with
// an inline key; one whose Secret cannot be read (forbidden, not found,
// no such entry, not a key) stays unverifiable, naming the Secret and
// what to do. Only the Secrets the policies name are read, each with one
// GET. The error is the context's only.
func (r SecretReader) ReadSecrets(ctx context.Context, ps *Policies) error {
	if ps == nil || r.Client == nil {
		return nil
	}
	read := map[string]secretRead{}
	for _, rule := range ps.Rules {
		for a := range rule.Alternatives {
			for s := range rule.Alternatives[a].Sets {
				entries := rule.Alternatives[a].Sets[s].Entries
				for i := range entries {
					if entries[i].Secret == nil || entries[i].PEM != "" {
						continue
					}
					if err := r.resolve(ctx, &entries[i], read); err != nil {
						return err
					}
				}
			}
		}
	}
	return ctx.Err()
}

// resolve reads e's Secret (once per Secret, through read) and fills e's
// key, or says why it cannot be.
func (r SecretReader) resolve(ctx context.Context, e *KeyEntry, read map[string]secretRead) error {
	sk := *e.Secret
	if sk.Namespace == "" {
		sk.Namespace = r.SystemNamespace
		if sk.Namespace == "" {
			sk.Namespace = PolicyControllerNamespace
		}
	}
	key := sk.Namespace + "/" + sk.Name
	got, ok := read[key]
	if !ok {
		sec, err := r.Client.CoreV1().Secrets(sk.Namespace).Get(ctx, sk.Name, metav1.GetOptions{})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		got = secretRead{err: err}
		if err == nil {
			got.data = sec.Data
		}
		read[key] = got
	}
	e.Secret = &sk
	pem, why := secretPEM(sk, got)
	if why != "" {
		e.Unverifiable = why
		return nil
	}
	e.PEM, e.Unverifiable = pem, ""
	e.Path += " (" + sk.String() + ")"
	return nil
}

// secretPEM is the PEM public key sk names in what the GET gave, or why
// there is none. The text names the Secret and its entries, never a
// byte of what they hold.
func secretPEM(sk SecretKey, got secretRead) (string, string) {
	switch {
	case apierrors.IsNotFound(got.err):
		return "", fmt.Sprintf("%s does not exist: the engine cannot load the policy's key; create it, or give the public key inline as %s", sk, sk.Inline)
	case apierrors.IsForbidden(got.err):
		return "", fmt.Sprintf("%s could not be read (forbidden: regcheck may not get it): grant get on that Secret (a Role with resourceNames: [%s] in namespace %s; the chart's policyKeySecrets), or give the public key inline as %s", sk, sk.Name, sk.Namespace, sk.Inline)
	case got.err != nil:
		return "", fmt.Sprintf("%s could not be read (%s): check again, or give the public key inline as %s", sk, apierrors.ReasonForError(got.err), sk.Inline)
	}
	data, why := secretData(sk, got.data)
	if why != "" {
		return "", why
	}
	if _, err := cryptoutils.UnmarshalPEMToPublicKey(data); err != nil {
		return "", fmt.Sprintf("%s does not hold a PEM public key: the engine cannot load it; put the public key there (cosign public-key), or give it inline as %s", sk, sk.Inline)
	}
	return string(data), ""
}

// secretData is the entry of data sk names: DataKey, or for
// policy-controller the one entry there must be (inlineAndTrackSecret
// refuses a Secret with none or several, and the policy is then not
// compiled).
func secretData(sk SecretKey, data map[string][]byte) ([]byte, string) {
	if sk.DataKey != "" {
		if v, ok := data[sk.DataKey]; ok && len(v) > 0 {
			return v, ""
		}
		return nil, fmt.Sprintf("%s has no %s entry: the engine cannot load the policy's key; put the public key there, or give it inline as %s", sk, sk.DataKey, sk.Inline)
	}
	if len(data) != 1 {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Sprintf("%s has %d entries (%s), where policy-controller takes exactly one: it does not compile the policy; keep the public key alone in the Secret, or give it inline as %s", sk, len(data), strings.Join(keys, ", "), sk.Inline)
	}
	for _, v := range data {
		return v, ""
	}
	return nil, ""
}
