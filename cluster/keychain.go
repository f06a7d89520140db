package cluster

import (
	"context"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
)

// credentials are the pull secrets a pod's images are pulled with, as the
// kubelet finds them: the pod's imagePullSecrets and its service account's,
// by name in the pod's namespace. No secrets means the node's own
// credentials, which regcheck stands in for with the Docker config.
type credentials struct {
	namespace, secrets string // both "" for no secrets
}

// credentialsOf resolves a container's pull secrets: its pod's, plus its
// service account's (one GET per service account, remembered in sa).
func credentialsOf(ctx context.Context, c kubernetes.Interface, ct inventory.Container, sa map[string][]string) (credentials, error) {
	names := slices.Clone(ct.ImagePullSecrets)
	key := ct.Namespace + "/" + ct.ServiceAccount
	saSecrets, ok := sa[key]
	if !ok && ct.ServiceAccount != "" {
		acct, err := c.CoreV1().ServiceAccounts(ct.Namespace).Get(ctx, ct.ServiceAccount, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return credentials{}, fmt.Errorf("reading serviceaccount %s: %w", key, err)
		default:
			for _, r := range acct.ImagePullSecrets {
				saSecrets = append(saSecrets, r.Name)
			}
		}
		sa[key] = saSecrets
	}
	names = append(names, saSecrets...)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return credentials{}, nil
	}
	return credentials{ct.Namespace, strings.Join(names, ",")}, nil
}

// keychain reads the group's secrets, then falls back to the Docker config.
func (k credentials) keychain(ctx context.Context, c kubernetes.Interface) (authn.Keychain, error) {
	if k.secrets == "" {
		return authn.DefaultKeychain, nil
	}
	kc, err := k8sauth.New(ctx, c, k8sauth.Options{Namespace: k.namespace, ServiceAccountName: k8sauth.NoServiceAccount, ImagePullSecrets: strings.Split(k.secrets, ",")})
	if err != nil {
		return nil, fmt.Errorf("reading the pull secrets %s in namespace %s: %w", k.secrets, k.namespace, err)
	}
	return authn.NewMultiKeychain(kc, authn.DefaultKeychain), nil
}

// String names the group as a person reads it.
func (k credentials) String() string {
	if k.secrets == "" {
		return "pods without pull secrets (the Docker config)"
	}
	return fmt.Sprintf("namespace %s, pull secrets %s", k.namespace, k.secrets)
}

// CheckWithPullSecrets is Check with registry credentials found the way the
// kubelet finds them: each container's images are walked with its own pod's
// imagePullSecrets and its service account's (then the Docker config), never
// another namespace's. Containers are grouped by (namespace, service account,
// secrets) — every pod without secrets shares one group — and each group
// gets its own Scanner, built from opts plus its keychain, so an image used
// in two groups is asked for twice, once with each set of credentials. The results are merged per reference. A fault
// (401, 403, …) is kept, naming the credentials that met it: it is true for
// those pods, whose next pull meets it too, so the image is then unknown.
//
// It needs get on secrets and serviceaccounts (deploy/rbac-pull-secrets.yaml).
func CheckWithPullSecrets(ctx context.Context, c kubernetes.Interface, inv *inventory.Inventory, opts ...scan.Option) (*scan.Result, error) {
	groups := map[credentials]*inventory.Inventory{}
	var order []credentials
	sa := map[string][]string{}
	for _, ct := range inv.Containers {
		k, err := credentialsOf(ctx, c, ct, sa)
		if err != nil {
			return nil, err
		}
		g, ok := groups[k]
		if !ok {
			g = &inventory.Inventory{NodeImages: inv.NodeImages}
			groups[k] = g
			order = append(order, k)
		}
		g.Containers = append(g.Containers, ct)
	}
	merged := &scan.Result{}
	byRef := map[string]*scan.Image{}
	for _, k := range order {
		kc, err := k.keychain(ctx, c)
		if err != nil {
			return nil, err
		}
		s, err := scan.New(append(slices.Clone(opts), scan.WithKeychain(kc))...)
		if err != nil {
			return nil, err
		}
		res, err := Check(ctx, s, groups[k])
		if err != nil {
			return nil, err
		}
		if merged.Started.IsZero() {
			merged.Started = res.Started
		}
		merged.Duration += res.Duration
		merged.Requests = append(merged.Requests, res.Requests...)
		for _, im := range res.Images {
			for i, f := range im.Findings {
				if f.Code.Fault() {
					im.Findings[i].Message = fmt.Sprintf("with the pull credentials of %s: %s", k, f.Message)
				}
			}
			prev, ok := byRef[im.Reference]
			if !ok {
				byRef[im.Reference] = im
				merged.Images = append(merged.Images, im)
				continue
			}
			prev.Uses = append(prev.Uses, im.Uses...)
			if prev.Digest == "" {
				prev.Digest, prev.MediaType = im.Digest, im.MediaType
			}
			for _, f := range im.Findings {
				if !slices.Contains(prev.Findings, f) {
					prev.Findings = append(prev.Findings, f)
				}
			}
		}
	}
	for _, im := range merged.Images {
		im.UpdateVerdict()
	}
	merged.Requests = sumRequests(merged.Requests)
	return merged, nil
}

// sumRequests adds up the counts of the same host, kind and status.
func sumRequests(rs []scan.RequestCount) []scan.RequestCount {
	type key struct{ host, kind, status string }
	idx := map[key]int{}
	var out []scan.RequestCount
	for _, r := range rs {
		k := key{r.Host, r.Kind, r.Status}
		if i, ok := idx[k]; ok {
			out[i].Count += r.Count
			continue
		}
		idx[k] = len(out)
		out = append(out, r)
	}
	return out
}
