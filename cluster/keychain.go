package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
)

// credentials names where a pod's registry credentials come from, as the
// kubelet reads them: its namespace, service account and imagePullSecrets.
type credentials struct {
	namespace, serviceAccount, secrets string
}

func credentialsOf(c inventory.Container) credentials {
	secrets := slices.Clone(c.ImagePullSecrets)
	slices.Sort(secrets)
	return credentials{c.Namespace, c.ServiceAccount, strings.Join(secrets, ",")}
}

// keychain reads the secrets of one credentials group, then falls back to
// the local Docker config.
func (k credentials) keychain(ctx context.Context, c kubernetes.Interface) (authn.Keychain, error) {
	var secrets []string
	if k.secrets != "" {
		secrets = strings.Split(k.secrets, ",")
	}
	kc, err := k8sauth.New(ctx, c, k8sauth.Options{Namespace: k.namespace, ServiceAccountName: k.serviceAccount, ImagePullSecrets: secrets})
	if err != nil {
		return nil, fmt.Errorf("reading the pull secrets of serviceaccount %s/%s: %w", k.namespace, k.serviceAccount, err)
	}
	return authn.NewMultiKeychain(kc, authn.DefaultKeychain), nil
}

// CheckWithPullSecrets is Check with registry credentials found the way the
// kubelet finds them: each container's images are walked with its own pod's
// imagePullSecrets and its service account's (then the Docker config), never
// another namespace's. Containers are grouped by (namespace, service account,
// secrets); each group gets its own Scanner, built from opts plus its
// keychain, so an image used in two groups is asked for twice, once with
// each set of credentials. The results are merged per reference. A fault
// (401, 403, …) is kept, naming the credentials that met it: it is true for
// those pods, whose next pull meets it too, so the image is then unknown.
//
// It needs get on secrets and serviceaccounts (deploy/rbac-pull-secrets.yaml).
func CheckWithPullSecrets(ctx context.Context, c kubernetes.Interface, inv *inventory.Inventory, opts ...scan.Option) (*scan.Result, error) {
	groups := map[credentials]*inventory.Inventory{}
	var order []credentials
	for _, ct := range inv.Containers {
		k := credentialsOf(ct)
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

// String names the group as a person reads it.
func (k credentials) String() string {
	s := fmt.Sprintf("namespace %s, service account %s", k.namespace, k.serviceAccount)
	if k.secrets != "" {
		s += ", imagePullSecrets " + k.secrets
	}
	return s
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
