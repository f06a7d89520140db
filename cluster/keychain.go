package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// credentials are the pull secrets a pod's images are pulled with, as the
// kubelet finds them: the pod's imagePullSecrets and its service account's,
// by name in the pod's namespace. No secrets means the node's own
// credentials, which regcheck stands in for with the Docker config.
type credentials struct {
	namespace, secrets string // both "" for no secrets
	// account names the pod's service account when it could not be read:
	// its pull secrets are then not known.
	account string
}

// String names the group as a person reads it.
func (k credentials) String() string {
	switch {
	case k.account != "" && k.secrets != "":
		return fmt.Sprintf("namespace %s, pull secrets %s and those of service account %s", k.namespace, k.secrets, k.account)
	case k.account != "":
		return fmt.Sprintf("namespace %s, the pull secrets of service account %s", k.namespace, k.account)
	case k.secrets == "":
		return "pods without pull secrets (the Docker config)"
	}
	return fmt.Sprintf("namespace %s, pull secrets %s", k.namespace, k.secrets)
}

// problem is why a group's credentials cannot be used: a secret or service
// account that is missing, unreadable or malformed. Its text names the
// object, never what the object holds.
type problem struct{ message, advice string }

// reader reads service accounts and pull secrets from the cluster, each
// once however many groups name it.
type reader struct {
	c        kubernetes.Interface
	accounts map[string]accountRead // "namespace/name"
	secrets  map[string]secretRead  // "namespace/name"
}

type accountRead struct {
	secrets []string
	problem *problem
}

type secretRead struct {
	secret  corev1.Secret
	problem *problem
}

func newReader(c kubernetes.Interface) *reader {
	return &reader{c: c, accounts: map[string]accountRead{}, secrets: map[string]secretRead{}}
}

// credentialsOf resolves a container's pull secrets: its pod's, plus its
// service account's. A service account that cannot be read (other than
// not found) makes a group of its own, whose check is then impossible. The
// error is the context's only.
func (r *reader) credentialsOf(ctx context.Context, ct inventory.Container) (credentials, error) {
	names := slices.Clone(ct.ImagePullSecrets)
	var account string
	if ct.ServiceAccount != "" {
		a, err := r.account(ctx, ct.Namespace, ct.ServiceAccount)
		if err != nil {
			return credentials{}, err
		}
		if a.problem != nil {
			account = ct.ServiceAccount
		}
		names = append(names, a.secrets...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 && account == "" {
		return credentials{}, nil
	}
	return credentials{namespace: ct.Namespace, secrets: strings.Join(names, ","), account: account}, nil
}

// account reads a service account's imagePullSecrets. Not found is no
// secrets, as for the kubelet.
func (r *reader) account(ctx context.Context, namespace, name string) (accountRead, error) {
	key := namespace + "/" + name
	if a, ok := r.accounts[key]; ok {
		return a, nil
	}
	var a accountRead
	acct, err := r.c.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		for _, ref := range acct.ImagePullSecrets {
			a.secrets = append(a.secrets, ref.Name)
		}
	case apierrors.IsNotFound(err):
	case ctx.Err() != nil:
		return a, ctx.Err()
	default:
		a.problem = &problem{
			message: fmt.Sprintf("service account %s in namespace %s could not be read (%v), so its pull secrets are not known", name, namespace, err),
			advice:  "let regcheck get serviceaccounts and secrets in the namespace (deploy/rbac-pull-secrets.yaml), then check again",
		}
	}
	r.accounts[key] = a
	return a, nil
}

// secret reads one pull secret and checks it is one the kubelet can use.
func (r *reader) secret(ctx context.Context, namespace, name string) (secretRead, error) {
	key := namespace + "/" + name
	if s, ok := r.secrets[key]; ok {
		return s, nil
	}
	var s secretRead
	sec, err := r.c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		s.secret = *sec
		if why := malformed(sec); why != "" {
			s.problem = &problem{
				message: fmt.Sprintf("pull secret %s in namespace %s %s", name, namespace, why),
				advice:  "recreate the secret (kubectl create secret docker-registry), then check again",
			}
		}
	case apierrors.IsNotFound(err):
		s.problem = &problem{
			message: fmt.Sprintf("pull secret %s in namespace %s does not exist", name, namespace),
			advice:  "create the secret, or remove it from the imagePullSecrets of the pod or its service account, then check again",
		}
	case ctx.Err() != nil:
		return s, ctx.Err()
	default:
		s.problem = &problem{
			message: fmt.Sprintf("pull secret %s in namespace %s could not be read (%v)", name, namespace, err),
			advice:  "let regcheck get secrets in the namespace (deploy/rbac-pull-secrets.yaml), then check again",
		}
	}
	r.secrets[key] = s
	return s, nil
}

// malformed says what makes sec unusable as a pull secret, or "". The
// text names what is wrong, never a byte of the data: the errors of the
// JSON and base64 decoders quote input, so none is passed on.
func malformed(sec *corev1.Secret) string {
	var key string
	switch sec.Type {
	case corev1.SecretTypeDockerConfigJson:
		key = corev1.DockerConfigJsonKey
	case corev1.SecretTypeDockercfg:
		key = corev1.DockerConfigKey
	default:
		return fmt.Sprintf("has type %q, not %s or %s", sec.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
	}
	data := sec.Data[key]
	if len(data) == 0 {
		return fmt.Sprintf("has no %s data", key)
	}
	var err error
	if sec.Type == corev1.SecretTypeDockerConfigJson {
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		err = json.Unmarshal(data, &cfg)
	} else {
		var auths map[string]authn.AuthConfig
		err = json.Unmarshal(data, &auths)
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("is not JSON (%s, at byte %d)", key, syntax.Offset)
	case errors.As(err, &typ):
		// Not typ.Value: for a number it holds the number.
		return fmt.Sprintf("is not a Docker config (%s: a value of the wrong JSON type)", key)
	case err != nil:
		// authn.AuthConfig's own decoding: the auth field.
		return fmt.Sprintf("has an auth field that is not base64(username:password) (%s)", key)
	}
	if _, err := k8sauth.NewFromPullSecrets(context.Background(), []corev1.Secret{*sec}); err != nil {
		return fmt.Sprintf("names a registry that is not a host name (%s)", key)
	}
	return ""
}

// keychain reads the group's secrets into the keychain that is asked
// before the node's (nil for a group without secrets). Problems say why the
// group's credentials cannot be used; the error is the context's only.
func (r *reader) keychain(ctx context.Context, k credentials) (authn.Keychain, []problem, error) {
	var problems []problem
	if k.account != "" {
		if p := r.accounts[k.namespace+"/"+k.account].problem; p != nil {
			problems = append(problems, *p)
		}
	}
	if k.secrets == "" {
		return nil, problems, nil // the node's credentials alone
	}
	var secrets []corev1.Secret
	for _, name := range strings.Split(k.secrets, ",") {
		s, err := r.secret(ctx, k.namespace, name)
		if err != nil {
			return nil, nil, err
		}
		if s.problem != nil {
			problems = append(problems, *s.problem)
			continue
		}
		secrets = append(secrets, s.secret)
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	kc, err := k8sauth.NewFromPullSecrets(ctx, secrets)
	if err != nil { // each secret was read alone above
		return nil, []problem{{message: fmt.Sprintf("the pull secrets %s in namespace %s could not be read together", k.secrets, k.namespace)}}, nil
	}
	// The kubelet (pkg/kubelet/images/image_manager.go, and before it
	// kuberuntime_image.go) looks an image up in
	// MakeDockerKeyring(pullSecrets, UnionDockerKeyring{node keyring,
	// credential provider plugins}): the pull secrets' credentials first,
	// then the node's, and it pulls with each in turn until one works. A
	// keychain yields one credential, so the group's is the one the kubelet
	// tries first: a pull secret's that matches the image. Only for an
	// image none matches are the node's asked: the keychain of the scan's
	// options. The CLI makes it the credential provider plugins, then the
	// Docker config: the kubelet asks its node keyring before its plugins,
	// but regcheck's Docker config only stands in for the node's, so an
	// image a plugin matches gets the plugin's (internal/cli/credentials.go).
	return kc, nil, nil
}

// Then is more work on one credentials group's result, with the Scanner
// that walked it (the group's pull secrets asked first): the image
// policies, whose signatures are read with the same credentials.
type Then func(ctx context.Context, s *scan.Scanner, res *types.Result) error

// CheckWithPullSecretsThen is Check with registry credentials found the way the
// kubelet finds them: each container's images are walked with its own pod's
// imagePullSecrets and its service account's, then with the node's
// credentials (the keychain opts give: by default the Docker config), never
// another namespace's. Containers are grouped by (namespace, service account,
// secrets) — every pod without secrets shares one group — and groups whose
// secrets hold the same bytes (one regcred copied into several namespaces)
// are joined; each group gets its own Scanner, built from opts plus its keychain, so an image used
// in two groups is asked for twice, once with each set of credentials. The
// results are merged per reference. A fault (401, 403, …) is kept, naming
// the credentials that met it: it is true for those pods, whose next pull
// meets it too, so the image is then unknown.
//
// A group whose credentials cannot be used (a pull secret missing,
// unreadable, of another type, not JSON, with an auth field that is not
// base64; a service account that cannot be read) is not walked: its images
// are unknown, with a credentials-error finding that names the secret and
// namespace, never the secret's data. The other groups are checked as usual.
// The error is the context's only.
//
// then (when not nil) is applied to each walked group's result with the
// group's Scanner, before the groups are merged: its fault findings, as
// the walk's, name the credentials that met them. A group whose
// credentials cannot be used is not walked, and then is not applied to
// it. then's error is returned.
//
// It needs get on secrets and serviceaccounts (deploy/rbac-pull-secrets.yaml).
func CheckWithPullSecretsThen(ctx context.Context, c kubernetes.Interface, inv *inventory.Inventory, then Then, opts ...scan.Option) (*types.Result, error) {
	rd := newReader(c)
	groups, err := rd.walkGroups(ctx, inv)
	if err != nil {
		return nil, err
	}
	merged := &types.Result{}
	byRef := map[string]*types.Image{}
	for _, g := range groups {
		res, err := g.check(ctx, then, opts)
		if err != nil {
			return nil, err
		}
		mergeGroup(merged, byRef, g.String(), res)
	}
	for _, im := range merged.Images {
		im.UpdateVerdict()
	}
	merged.Requests = types.SumRequests(merged.Requests)
	return merged, nil
}

// walkGroup is the containers walked with one Scanner: those of one set
// of credentials by name (credentials), joined with every other set whose
// secrets hold the same bytes: one regcred copied into N namespaces is
// one walk, not N, since the registry sees the same credentials.
type walkGroup struct {
	keys     []credentials // the first named in findings
	inv      *inventory.Inventory
	kc       authn.Keychain
	problems []problem
}

// String names the group as a person reads it: its first credentials,
// and how many namespaces more hold the same.
func (g *walkGroup) String() string {
	if len(g.keys) == 1 {
		return g.keys[0].String()
	}
	var others []string
	for _, k := range g.keys[1:] {
		if !slices.Contains(others, k.namespace) && k.namespace != g.keys[0].namespace {
			others = append(others, k.namespace)
		}
	}
	if len(others) == 0 {
		return g.keys[0].String()
	}
	if len(others) > 3 {
		others = append(others[:3], fmt.Sprintf("%d more", len(others)-3))
	}
	return fmt.Sprintf("%s (the same secret contents as in namespace %s)", g.keys[0], strings.Join(others, ", "))
}

// walkGroups groups the inventory's containers by their credentials by
// name, in the order first met, then joins the groups whose pull secrets
// are usable and hold the same bytes. The error is the context's only.
func (r *reader) walkGroups(ctx context.Context, inv *inventory.Inventory) ([]*walkGroup, error) {
	byName := map[credentials]*inventory.Inventory{}
	var order []credentials
	for _, ct := range inv.Containers {
		k, err := r.credentialsOf(ctx, ct)
		if err != nil {
			return nil, err
		}
		g, ok := byName[k]
		if !ok {
			g = &inventory.Inventory{NodeImages: inv.NodeImages}
			byName[k] = g
			order = append(order, k)
		}
		g.Containers = append(g.Containers, ct)
	}
	var out []*walkGroup
	byBytes := map[string]*walkGroup{}
	for _, k := range order {
		kc, problems, err := r.keychain(ctx, k)
		if err != nil {
			return nil, err
		}
		fp := r.fingerprint(k)
		if g, ok := byBytes[fp]; ok && len(problems) == 0 {
			g.keys = append(g.keys, k)
			g.inv.Containers = append(g.inv.Containers, byName[k].Containers...)
			continue
		}
		g := &walkGroup{keys: []credentials{k}, inv: byName[k], kc: kc, problems: problems}
		if len(problems) == 0 && fp != "" {
			byBytes[fp] = g
		}
		out = append(out, g)
	}
	return out, nil
}

// fingerprint is a digest of what k's secrets hold, in the order the
// keychain reads them (by name): equal for two groups whose registry
// credentials are the same bytes; "" for a group without secrets (one
// group already) or with a secret not read.
func (r *reader) fingerprint(k credentials) string {
	if k.secrets == "" || k.account != "" {
		return ""
	}
	h := sha256.New()
	for _, name := range strings.Split(k.secrets, ",") {
		s, ok := r.secrets[k.namespace+"/"+name]
		if !ok || s.problem != nil {
			return ""
		}
		key := corev1.DockerConfigJsonKey
		if s.secret.Type == corev1.SecretTypeDockercfg {
			key = corev1.DockerConfigKey
		}
		fmt.Fprintf(h, "%s\x00%d\x00", s.secret.Type, len(s.secret.Data[key]))
		h.Write(s.secret.Data[key])
	}
	return string(h.Sum(nil))
}

// check walks the group: with its keychain asked first, then applying
// then; or, when its credentials cannot be used, asking no registry.
func (g *walkGroup) check(ctx context.Context, then Then, opts []scan.Option) (*types.Result, error) {
	if len(g.problems) > 0 {
		s, err := scan.New(opts...)
		if err != nil {
			return nil, err
		}
		return unchecked(ctx, s, g.inv, g.problems)
	}
	kc := g.kc
	s, err := scan.New(append(slices.Clone(opts), scan.WithKeychainFirst(func() (authn.Keychain, error) { return kc, nil }))...)
	if err != nil {
		return nil, err
	}
	res, err := Check(ctx, s, g.inv)
	if err != nil {
		return nil, err
	}
	if then != nil {
		if err := then(ctx, s, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// mergeGroup adds the result of group k to merged, per reference
// (byRef): a fault finding names k's credentials, which met it.
func mergeGroup(merged *types.Result, byRef map[string]*types.Image, k string, res *types.Result) {
	if merged.Started.IsZero() {
		merged.Started = res.Started
	}
	merged.Duration += res.Duration
	merged.Reasked += res.Reasked
	merged.Recovered += res.Recovered
	merged.Requests = append(merged.Requests, res.Requests...)
	for r, v := range res.Running {
		if merged.Running == nil {
			merged.Running = map[string]types.Verdict{}
		}
		merged.Running[r] = v
	}
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

// unchecked is the result of a group whose credentials cannot be used: no
// registry is asked. Each image is unknown, with one credentials-error
// finding per problem, plus what the pod specs alone show (pull-always on
// a tag, an image ID for a digest). A reference that does not parse is
// broken whatever the credentials.
func unchecked(ctx context.Context, s *scan.Scanner, inv *inventory.Inventory, problems []problem) (*types.Result, error) {
	targets := Targets(inv)
	var invalid []types.Target
	for _, t := range targets {
		if _, _, err := s.Parse(t.Ref); err != nil {
			invalid = append(invalid, t)
		}
	}
	// Run walks no reference that does not parse: no request is sent.
	res, err := s.Run(ctx, invalid)
	if err != nil {
		return nil, err
	}
	byRef := map[string]*types.Image{}
	for _, im := range res.Images {
		byRef["invalid:"+im.Reference] = im
	}
	var images []*types.Image
	for _, t := range targets {
		key := "invalid:" + t.Ref
		norm, _, err := s.Parse(t.Ref)
		if err == nil {
			key = norm
		}
		im, ok := byRef[key]
		if ok && err != nil {
			if !slices.Contains(images, im) {
				images = append(images, im)
			}
			continue
		}
		if !ok {
			im = &types.Image{Reference: norm, Findings: []types.Finding{}, Uses: []types.Use{}}
			for _, p := range problems {
				im.Findings = append(im.Findings, types.NewAdvisedFinding(types.CredentialsError, "", "",
					p.message+": the image was not checked with these credentials", p.advice))
			}
			byRef[key] = im
			images = append(images, im)
		}
		im.Uses = append(im.Uses, t.Uses...)
	}
	res.Images = images
	for _, im := range res.Images {
		im.UpdateVerdict()
		if err := annotate(ctx, s, inv, im, nil); err != nil {
			return nil, err
		}
		im.UpdateVerdict()
	}
	return res, nil
}
