package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/inventory"
)

// Keychain returns registry credentials the way the kubelet finds them: each
// container's pod imagePullSecrets and its ServiceAccount's, then the local
// Docker config. Secrets are read once per (namespace, service account,
// secrets) combination. The credentials of every pod are offered for every
// image: a check that an image exists is read-only, and a registry that
// rejects one set of credentials makes the image unknown, never broken.
//
// It needs get on secrets and serviceaccounts (deploy/rbac-pull-secrets.yaml).
func Keychain(ctx context.Context, c kubernetes.Interface, inv *inventory.Inventory) (authn.Keychain, error) {
	type key struct{ ns, sa, secrets string }
	seen := map[key]bool{}
	var keys []key
	for _, ct := range inv.Containers {
		secrets := append([]string(nil), ct.ImagePullSecrets...)
		sort.Strings(secrets)
		k := key{ct.Namespace, ct.ServiceAccount, strings.Join(secrets, ",")}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.ns+"/"+a.sa+"/"+a.secrets < b.ns+"/"+b.sa+"/"+b.secrets
	})
	chains := make([]authn.Keychain, 0, len(keys)+1)
	for _, k := range keys {
		var secrets []string
		if k.secrets != "" {
			secrets = strings.Split(k.secrets, ",")
		}
		kc, err := k8sauth.New(ctx, c, k8sauth.Options{Namespace: k.ns, ServiceAccountName: k.sa, ImagePullSecrets: secrets})
		if err != nil {
			return nil, fmt.Errorf("reading pull secrets of serviceaccount %s/%s: %w", k.ns, k.sa, err)
		}
		chains = append(chains, kc)
	}
	return authn.NewMultiKeychain(append(chains, authn.DefaultKeychain)...), nil
}
