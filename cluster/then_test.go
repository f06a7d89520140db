package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// CheckWithPullSecretsThen applies its work to each walked group's result
// with the group's own Scanner, whose keychain asks the group's pull
// secrets first: what the image policies read the signatures with. A
// group without secrets gets the node's credentials; one whose secret is
// missing is not walked, and the work is not applied to it. A finding
// the work adds is merged as the walk's are; its error is returned.
func TestCheckWithPullSecretsThen(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	push(t, host+"/app:v1", "app")
	auth := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	kc := k8sfake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth))}},
	)
	ctr := func(ns string, secrets ...string) inventory.Container {
		return inventory.Container{Namespace: ns, OwnerKind: "Pod", OwnerName: "p-" + ns, Pod: "p-" + ns, Container: "c", Image: host + "/app:v1", ImagePullSecrets: secrets}
	}
	inv := &inventory.Inventory{Containers: []inventory.Container{ctr("a"), ctr("c", "regcred"), ctr("d", "missing")}}
	repo, err := name.NewRepository(host+"/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	then := func(ctx context.Context, s *scan.Scanner, res *types.Result) error {
		a, err := s.Keychain().Resolve(repo)
		if err != nil {
			return err
		}
		cfg, err := a.Authorization()
		if err != nil {
			return err
		}
		user := cfg.Username
		if a == authn.Anonymous || user == "" {
			user = "anonymous"
		}
		for _, im := range res.Images {
			for _, u := range im.Uses {
				seen = append(seen, u.Namespace+":"+user)
			}
			im.Findings = append(im.Findings, types.NewFinding(types.SignatureMissing, im.Digest, "", "checked as %s", user))
		}
		return nil
	}
	res, err := CheckWithPullSecretsThen(context.Background(), kc, inv, then, scan.WithInsecureRegistries(host), scan.WithKeychain(authn.NewMultiKeychain()))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	if got := strings.Join(seen, " "); got != "a:anonymous c:puller" {
		t.Errorf("the work saw %q; want the pod without secrets anonymous, the pod with regcred as its user, the unusable group not at all", got)
	}
	var msgs []string
	for _, im := range res.Images {
		for _, f := range im.Findings {
			if f.Code == types.SignatureMissing {
				msgs = append(msgs, f.Message)
			}
		}
	}
	slices.Sort(msgs)
	if got := strings.Join(msgs, "|"); got != "checked as anonymous|checked as puller" {
		t.Errorf("merged findings %q, want one per group the work ran on", got)
	}
	boom := fmt.Errorf("policies failed")
	if _, err := CheckWithPullSecretsThen(context.Background(), kc, inv, func(context.Context, *scan.Scanner, *types.Result) error { return boom }); err != boom {
		t.Errorf("error %v, want the work's", err)
	}
}
