package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

func push(t *testing.T, ref, content string) string {
	t.Helper()
	d, err := fixture.PushSingle(context.Background(), ref, content)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func deleteManifest(t *testing.T, host, repo, digest string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+host+"/v2/"+repo+"/manifests/"+digest, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete %s@%s: %d", repo, digest, resp.StatusCode)
	}
}

func TestCheck(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	oldApp := push(t, host+"/app:latest", "app v1")
	newApp := push(t, host+"/app:latest", "app v2") // latest moved after the pod started
	steady := push(t, host+"/steady:v1", "steady")
	gone := push(t, host+"/gone:v1", "gone v1")
	push(t, host+"/gone:v1", "gone v2")
	deleteManifest(t, host, "gone", gone) // the running digest is deleted from the registry
	orphan := push(t, host+"/orphan:v1", "orphan v1")
	push(t, host+"/orphan:v1", "orphan v2") // the pinned digest is untagged now
	web := push(t, host+"/web:v1", "web")
	oldCache := push(t, host+"/cache:latest", "cache v1")
	push(t, host+"/cache:latest", "cache v2") // moved; the pod keeps v1 with IfNotPresent
	tool := push(t, host+"/tool:v2", "tool")

	// An index; a CRI-O node reports the platform child it pulled.
	child, err := mutate.AppendLayers(mutate.MediaType(empty.Image, ggcrtypes.OCIManifestSchema1), static.NewLayer([]byte("multi amd64"), ggcrtypes.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, ggcrtypes.OCIImageIndex), mutate.IndexAddendum{Add: child})
	multiTag, _ := name.NewTag(host + "/multi:v1")
	if err := remote.WriteIndex(multiTag, idx); err != nil {
		t.Fatal(err)
	}
	childDigest, _ := child.Digest()

	inv := &inventory.Inventory{
		NodeImages: map[string][]string{gone: {"node-a", "node-b"}},
		Containers: []inventory.Container{
			{Namespace: "prod", OwnerKind: "Deployment", OwnerName: "app", Pod: "app-1", Container: "app",
				Image: host + "/app:latest", RunningDigest: oldApp, PullPolicy: "Always", Node: "node-a"},
			{Namespace: "prod", OwnerKind: "Deployment", OwnerName: "app", Pod: "app-2", Container: "app",
				Image: host + "/app:latest", RunningDigest: oldApp, PullPolicy: "Always", Node: "node-b"},
			{Namespace: "prod", OwnerKind: "StatefulSet", OwnerName: "steady", Pod: "steady-0", Container: "db",
				Image: host + "/steady:v1@" + steady, RunningDigest: steady, PullPolicy: "IfNotPresent"},
			{Namespace: "prod", OwnerKind: "DaemonSet", OwnerName: "gone", Pod: "gone-x", Container: "agent",
				Image: host + "/gone:v1", RunningDigest: gone, PullPolicy: "IfNotPresent"},
			{Namespace: "prod", OwnerKind: "Deployment", OwnerName: "multi", Pod: "multi-1", Container: "m",
				Image: host + "/multi:v1", RunningDigest: childDigest.String(), PullPolicy: "IfNotPresent"},
			{Namespace: "prod", OwnerKind: "Deployment", OwnerName: "old-docker", Pod: "od-1", Container: "c",
				Image: host + "/steady:v1", ImageID: "docker://sha256:7777777777777777777777777777777777777777777777777777777777777777", PullPolicy: "IfNotPresent"},
			{Namespace: "prod", OwnerKind: "CronJob", OwnerName: "orphan", Container: "job",
				Image: host + "/orphan:v1@" + orphan, PullPolicy: "IfNotPresent"}, // a template: no pod
			// Healthy: a tag, IfNotPresent, running the digest the tag still names.
			{Namespace: "prod", OwnerKind: "Deployment", OwnerName: "web", Pod: "web-1", Container: "web",
				Image: host + "/web:v1", RunningDigest: web, PullPolicy: "IfNotPresent", Node: "node-a"},
			// latest, but IfNotPresent set explicitly: the next start does not pull.
			{Namespace: "prod", OwnerKind: "Deployment", OwnerName: "cache", Pod: "cache-1", Container: "cache",
				Image: host + "/cache:latest", RunningDigest: oldCache, PullPolicy: "IfNotPresent", Node: "node-a"},
			// Always on a tag, running what the tag names today.
			{Namespace: "prod", OwnerKind: "Deployment", OwnerName: "tool", Pod: "tool-1", Container: "tool",
				Image: host + "/tool:v2", RunningDigest: tool, PullPolicy: "Always", Node: "node-a"},
		},
	}
	s, err := scan.New()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), s, inv)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*types.Image{}
	for _, im := range res.Images {
		got[im.Reference] = im
	}
	for _, tc := range []struct {
		ref     string
		verdict types.Verdict
		codes   []types.Code
	}{
		{host + "/app:latest", types.AtRisk, []types.Code{types.Drift, types.MutableReference, types.PullAlwaysMutable}},
		{host + "/steady:v1@" + steady, types.OK, nil},
		{host + "/gone:v1", types.AtRisk, []types.Code{types.Drift, types.MutableReference, types.RunningDigestMissing}},
		{host + "/orphan:v1@" + orphan, types.AtRisk, []types.Code{types.PinnedDigestUntagged}},
		// The platform child of the index the tag still points at: no drift.
		{host + "/multi:v1", types.OK, []types.Code{types.MutableReference}},
		// Only an image ID: said, not guessed.
		{host + "/steady:v1", types.OK, []types.Code{types.ImageIDOnly, types.MutableReference}},
		// A tag alone is no risk: ok, with the tag said as info.
		{host + "/web:v1", types.OK, []types.Code{types.MutableReference}},
		{host + "/cache:latest", types.AtRisk, []types.Code{types.Drift, types.MutableReference}},
		// Always on a tag: the next start runs whatever the tag means then.
		{host + "/tool:v2", types.AtRisk, []types.Code{types.MutableReference, types.PullAlwaysMutable}},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			im := got[tc.ref]
			if im == nil {
				t.Fatalf("not in the result; have %v", res.Images)
			}
			var codes []types.Code
			for _, f := range im.Findings {
				codes = append(codes, f.Code)
			}
			sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
			if im.Verdict != tc.verdict || !slices.Equal(codes, tc.codes) {
				t.Errorf("%s %v, want %s %v", im.Verdict, codes, tc.verdict, tc.codes)
			}
		})
	}
	app := got[host+"/app:latest"]
	for _, f := range app.Findings {
		if f.Code == types.Drift && (f.Severity != types.SeverityHigh || f.Digest != newApp || !strings.Contains(f.Message, oldApp)) {
			t.Errorf("drift on latest with Always: %+v; want high, tag now %s, running %s", f, newApp, oldApp)
		}
	}
	if n := len(app.Findings); n != 3 {
		t.Errorf("two pods of one Deployment gave %d findings, want one of each code (3)", n)
	}
	for _, im := range res.Images {
		for _, f := range im.Findings {
			if f.Code == types.MutableReference && f.Severity != types.SeverityInfo {
				t.Errorf("%s: mutable-reference is %s, want info", im.Reference, f.Severity)
			}
			if f.Code == types.PullAlwaysMutable && f.Severity != types.SeverityWarning {
				t.Errorf("%s: pull-always-mutable is %s, want warning", im.Reference, f.Severity)
			}
		}
	}
	for _, f := range got[host+"/cache:latest"].Findings {
		if f.Code == types.Drift && f.Severity != types.SeverityWarning {
			t.Errorf("drift on latest with IfNotPresent: %s, want warning (the next start does not pull)", f.Severity)
		}
	}
	for _, f := range got[host+"/gone:v1"].Findings {
		if f.Code == types.RunningDigestMissing && !strings.Contains(f.Message, "node-a, node node-b") {
			t.Errorf("running-digest-missing should name the nodes holding it: %s", f.Message)
		}
		if f.Code == types.Drift && f.Severity != types.SeverityWarning {
			t.Errorf("drift with IfNotPresent on a version tag: %s, want warning", f.Severity)
		}
	}
}

// Pods without pull secrets share one set of credentials (the Docker
// config): an image they share is walked once, not once per namespace; a
// pod with secrets gets its own walk, shared with the pods whose secrets
// hold the same bytes (one regcred copied into several namespaces).
func TestCheckWithPullSecretsGroups(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	push(t, host+"/shared:v1", "shared sidecar")
	kc := k8sfake.NewClientset(
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "default"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "default"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "builder"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}},
		// d copies c's regcred; e holds other credentials under that name.
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "builder"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "builder"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "e", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"other.example":{"auth":"dTpw"}}}`)}},
	)
	ctr := func(ns, sa string) inventory.Container {
		return inventory.Container{Namespace: ns, OwnerKind: "Pod", OwnerName: "p", Pod: "p", Container: "c", Image: host + "/shared:v1", ServiceAccount: sa}
	}
	count := func(inv *inventory.Inventory) int {
		t.Helper()
		res, err := CheckWithPullSecretsThen(context.Background(), kc, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Images) != 1 || len(res.Images[0].Uses) != len(inv.Containers) {
			t.Fatalf("images %+v", res.Images)
		}
		n := 0
		for _, r := range res.Requests {
			if r.Kind == "manifest-get" {
				n += r.Count
			}
		}
		return n
	}
	if n := count(&inventory.Inventory{Containers: []inventory.Container{ctr("a", "default"), ctr("b", "default")}}); n != 1 {
		t.Errorf("two namespaces without pull secrets: %d manifest GETs, want 1 (one shared walk)", n)
	}
	if n := count(&inventory.Inventory{Containers: []inventory.Container{ctr("a", "default"), ctr("c", "builder")}}); n != 2 {
		t.Errorf("one namespace with its service account's pull secret: %d manifest GETs, want 2 (a walk each)", n)
	}
	if n := count(&inventory.Inventory{Containers: []inventory.Container{ctr("c", "builder"), ctr("d", "builder")}}); n != 1 {
		t.Errorf("one regcred copied into two namespaces: %d manifest GETs, want 1 (the same credentials, one walk)", n)
	}
	if n := count(&inventory.Inventory{Containers: []inventory.Container{ctr("c", "builder"), ctr("e", "builder")}}); n != 2 {
		t.Errorf("two regcreds of other contents: %d manifest GETs, want 2 (a walk each)", n)
	}
}

// A pull secret that cannot be used makes only its group's images unknown,
// with a credentials-error naming the secret and namespace and never its
// data; the rest of the cluster is checked as usual, and the unusable
// group's images are not asked for.
func TestCheckWithPullSecretsMalformed(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	app := push(t, host+"/app:v1", "app")
	push(t, host+"/tool:v1", "tool")
	shared := push(t, host+"/shared:v1", "shared")
	mu.Lock()
	paths = nil
	mu.Unlock()

	const marker = "s3cr3t-do-not-print"
	dockerConfig := func(auth string) []byte {
		return fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, auth)
	}
	good := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "good", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig(base64.StdEncoding.EncodeToString([]byte("puller:" + marker)))}}
	bad := func(typ corev1.SecretType, key string, data []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "bad", Name: "broken-cred"}, Type: typ, Data: map[string][]byte{key: data}}
	}
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret // in namespace bad; nil for none
		denySA bool           // reading service accounts in namespace bad is forbidden
		names  string         // what the finding's message names
	}{
		{"missing", nil, false, "pull secret broken-cred in namespace bad does not exist"},
		{"not JSON", bad(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, []byte(marker+" {")), false, "pull secret broken-cred in namespace bad is not JSON"},
		{"not a Docker config", bad(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, fmt.Appendf(nil, `{"auths":%q}`, marker)), false, "pull secret broken-cred in namespace bad is not a Docker config"},
		{"wrong type", bad(corev1.SecretTypeOpaque, corev1.DockerConfigJsonKey, dockerConfig(base64.StdEncoding.EncodeToString([]byte("puller:"+marker)))), false, `pull secret broken-cred in namespace bad has type "Opaque"`},
		{"no data", bad(corev1.SecretTypeDockerConfigJson, "other", []byte(marker)), false, "pull secret broken-cred in namespace bad has no .dockerconfigjson data"},
		{"auth is a number", bad(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, fmt.Appendf(nil, `{"auths":{%q:{"auth":987654321}}}`, host)), false, "pull secret broken-cred in namespace bad is not a Docker config"},
		{"bad base64 auth", bad(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, dockerConfig(marker+"!")), false, "pull secret broken-cred in namespace bad has an auth field that is not base64"},
		{"auth without a colon", bad(corev1.SecretTypeDockerConfigJson, corev1.DockerConfigJsonKey, dockerConfig(base64.StdEncoding.EncodeToString([]byte(marker)))), false, "pull secret broken-cred in namespace bad has an auth field that is not base64"},
		{"dockercfg not JSON", bad(corev1.SecretTypeDockercfg, corev1.DockerConfigKey, []byte(marker)), false, "pull secret broken-cred in namespace bad is not JSON (.dockercfg"},
		{"service account unreadable", nil, true, "service account builder in namespace bad could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{
				&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "good", Name: "default"}},
				&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "bad", Name: "builder"}},
				good,
			}
			if tc.secret != nil {
				objs = append(objs, tc.secret)
			}
			kc := k8sfake.NewClientset(objs...)
			if tc.denySA {
				kc.PrependReactor("get", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetNamespace() != "bad" {
						return false, nil, nil
					}
					return true, nil, apierrors.NewForbidden(corev1.Resource("serviceaccounts"), "builder", errors.New("RBAC: no get"))
				})
			}
			var secrets []string
			if !tc.denySA {
				secrets = []string{"broken-cred"}
			}
			inv := &inventory.Inventory{Containers: []inventory.Container{
				{Namespace: "good", OwnerKind: "Deployment", OwnerName: "app", Pod: "app-1", Container: "app", ServiceAccount: "default",
					Image: host + "/app:v1", RunningDigest: app, PullPolicy: "IfNotPresent", ImagePullSecrets: []string{"regcred"}},
				{Namespace: "good", OwnerKind: "Deployment", OwnerName: "sidecar", Pod: "sc-1", Container: "sc", ServiceAccount: "default",
					Image: host + "/shared:v1", RunningDigest: shared, PullPolicy: "IfNotPresent", ImagePullSecrets: []string{"regcred"}},
				{Namespace: "bad", OwnerKind: "Deployment", OwnerName: "tool", Pod: "tool-1", Container: "tool", ServiceAccount: "builder",
					Image: host + "/tool:v1", PullPolicy: "Always", ImagePullSecrets: secrets},
				{Namespace: "bad", OwnerKind: "Deployment", OwnerName: "sidecar", Pod: "sc-2", Container: "sc", ServiceAccount: "builder",
					Image: host + "/shared:v1", RunningDigest: shared, PullPolicy: "IfNotPresent", ImagePullSecrets: secrets},
			}}
			mu.Lock()
			paths = nil
			mu.Unlock()
			res, err := CheckWithPullSecretsThen(context.Background(), kc, inv, nil)
			if err != nil {
				t.Fatalf("one unusable secret failed the scan: %v", err)
			}
			got := map[string]*types.Image{}
			for _, im := range res.Images {
				got[im.Reference] = im
			}
			for _, w := range []struct {
				ref     string
				verdict types.Verdict
				codes   []types.Code
				uses    int
			}{
				{host + "/app:v1", types.OK, []types.Code{types.MutableReference}, 1},
				// Not asked for with the unusable credentials: unknown,
				// plus what the pod spec alone shows.
				{host + "/tool:v1", types.Unknown, []types.Code{types.CredentialsError, types.PullAlwaysMutable}, 1},
				// Fine for the good namespace, unknown for the bad one.
				{host + "/shared:v1", types.Unknown, []types.Code{types.CredentialsError, types.MutableReference}, 2},
			} {
				im := got[w.ref]
				if im == nil {
					t.Fatalf("%s: not in the result", w.ref)
				}
				var codes []types.Code
				for _, f := range im.Findings {
					codes = append(codes, f.Code)
					if f.Code == types.CredentialsError && (!strings.Contains(f.Message, tc.names) || f.Advice == "") {
						t.Errorf("%s: credentials-error %q (advice %q), want it to say %q", w.ref, f.Message, f.Advice, tc.names)
					}
				}
				sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
				if im.Verdict != w.verdict || !slices.Equal(codes, w.codes) || len(im.Uses) != w.uses {
					t.Errorf("%s: %s %v, %d uses; want %s %v, %d uses", w.ref, im.Verdict, codes, len(im.Uses), w.verdict, w.codes, w.uses)
				}
			}
			if len(res.Images) != 3 {
				t.Errorf("%d images, want 3", len(res.Images))
			}
			mu.Lock()
			for _, p := range paths {
				if strings.HasPrefix(p, "/v2/tool/") {
					t.Errorf("the unusable credentials' image was asked for: %s", p)
				}
			}
			mu.Unlock()
			out, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			data := [][]byte{[]byte(marker), []byte("987654321"), good.Data[corev1.DockerConfigJsonKey]}
			if tc.secret != nil {
				for _, d := range tc.secret.Data {
					data = append(data, d)
				}
			}
			for _, d := range data {
				if bytes.Contains(out, d) {
					t.Errorf("a secret's data (%q) appears in the result:\n%s", d, out)
				}
			}
		})
	}
}

// TestTargetsImageVolumes: an image volume is a use like a container's,
// named in Use.Volume, in the tag targets and the running ones alike.
func TestTargetsImageVolumes(t *testing.T) {
	t.Parallel()
	const d = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	tests := []struct {
		name             string
		c                inventory.Container
		want             types.Use
		running, hasTags bool
	}{
		{
			name: "container",
			c: inventory.Container{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Node: "n1",
				Field: inventory.FieldContainers, Container: "models", Image: "reg.example/serve:v1", PullPolicy: "IfNotPresent",
				ImageID: "reg.example/serve@" + d, RunningDigest: d},
			want: types.Use{Source: "cluster", Kind: "Deployment", Namespace: "ml", Name: "serve", Pod: "serve-1", Node: "n1",
				Container: "models", PullPolicy: "IfNotPresent", RunningDigest: d},
			running: true,
		},
		{
			name: "image volume with a running digest",
			c: inventory.Container{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Node: "n1",
				Field: inventory.FieldImageVolumes, Container: "models", Image: "reg.example/models:v3", PullPolicy: "Always",
				ImageID: "reg.example/models@" + d, RunningDigest: d},
			want: types.Use{Source: "cluster", Kind: "Deployment", Namespace: "ml", Name: "serve", Pod: "serve-1", Node: "n1",
				Volume: "models", PullPolicy: "Always", RunningDigest: d},
			running: true,
		},
		{
			name: "image volume of a template",
			c: inventory.Container{Namespace: "ml", OwnerKind: "CronJob", OwnerName: "train",
				Field: inventory.FieldImageVolumes, Container: "data", Image: "reg.example/data:v1", PullPolicy: "IfNotPresent"},
			want: types.Use{Source: "cluster", Kind: "CronJob", Namespace: "ml", Name: "train", Volume: "data", PullPolicy: "IfNotPresent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv := &inventory.Inventory{Containers: []inventory.Container{tt.c}}
			ts := Targets(inv)
			want := tt.want
			want.ImageID = tt.c.ImageID
			if len(ts) != 1 || ts[0].Ref != tt.c.Image || len(ts[0].Uses) != 1 || !reflect.DeepEqual(ts[0].Uses[0], want) {
				t.Errorf("Targets: %+v\nwant one use %+v of %s", ts, want, tt.c.Image)
			}
			rs := RunningTargets(inv)
			if !tt.running {
				if len(rs) != 0 {
					t.Errorf("RunningTargets: %+v, want none", rs)
				}
				return
			}
			if len(rs) != 1 || rs[0].Ref != imageref.RunningOf(tt.c.Image, d) || len(rs[0].Uses) != 1 || !reflect.DeepEqual(rs[0].Uses[0], tt.want) {
				t.Errorf("RunningTargets: %+v\nwant one use %+v of %s", rs, tt.want, imageref.RunningOf(tt.c.Image, d))
			}
		})
	}
}

// TestCheckImageVolume: the findings of an image volume name it, and say
// pullPolicy; a container of the same name in the same pod is its own use.
func TestCheckImageVolume(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	oldModels := push(t, host+"/models:latest", "models v1")
	newModels := push(t, host+"/models:latest", "models v2") // latest moved after the pod started

	inv := &inventory.Inventory{Containers: []inventory.Container{
		// The container runs what the tag names today, with IfNotPresent.
		{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Field: inventory.FieldContainers, Container: "models",
			Image: host + "/models:latest", RunningDigest: newModels, PullPolicy: "IfNotPresent"},
		// The volume of the same name mounts the old digest, with Always.
		{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Field: inventory.FieldImageVolumes, Container: "models",
			Image: host + "/models:latest", RunningDigest: oldModels, PullPolicy: "Always"},
	}}
	s, err := scan.New()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), s, inv)
	if err != nil {
		t.Fatal(err)
	}
	var im *types.Image
	for _, i := range res.Images {
		if i.Reference == host+"/models:latest" {
			im = i
		}
	}
	if im == nil {
		t.Fatalf("models:latest not in the result: %+v", res.Images)
	}
	tests := []struct {
		code     types.Code
		severity types.Severity
		says     []string
		advice   string
	}{
		{types.Drift, types.SeverityHigh, []string{"Deployment ml/serve volume models mounts " + oldModels, newModels}, "@" + oldModels},
		{types.PullAlwaysMutable, types.SeverityWarning, []string{"Deployment ml/serve volume models pulls", "with pullPolicy: Always"}, "use pullPolicy: IfNotPresent"},
		{types.MutableReference, types.SeverityInfo, nil, "regcheck pin"},
	}
	if len(im.Findings) != len(tests) {
		for _, f := range im.Findings {
			t.Logf("%s %s: %s", f.Severity, f.Code, f.Message)
		}
		t.Fatalf("%d findings, want %d (none for the container, which runs what the tag names)", len(im.Findings), len(tests))
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			var f *types.Finding
			for i := range im.Findings {
				if im.Findings[i].Code == tt.code {
					f = &im.Findings[i]
				}
			}
			if f == nil || f.Severity != tt.severity {
				t.Fatalf("finding %+v, want %s", f, tt.severity)
			}
			for _, w := range tt.says {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q does not say %q", f.Message, w)
				}
			}
			if !strings.Contains(f.Advice, tt.advice) {
				t.Errorf("advice %q does not say %q", f.Advice, tt.advice)
			}
		})
	}
}
