package cluster

import (
	"context"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/internal/fixture"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
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

	// An index; a CRI-O node reports the platform child it pulled.
	child, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), static.NewLayer([]byte("multi amd64"), types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{Add: child})
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
	got := map[string]*scan.Image{}
	for _, im := range res.Images {
		got[im.Reference] = im
	}
	for _, tc := range []struct {
		ref     string
		verdict scan.Verdict
		codes   []scan.Code
	}{
		{host + "/app:latest", scan.AtRisk, []scan.Code{scan.Drift, scan.MutableReference, scan.PullAlwaysMutable}},
		{host + "/steady:v1@" + steady, scan.OK, nil},
		{host + "/gone:v1", scan.AtRisk, []scan.Code{scan.Drift, scan.MutableReference, scan.RunningDigestMissing}},
		{host + "/orphan:v1@" + orphan, scan.AtRisk, []scan.Code{scan.PinnedDigestUntagged}},
		// The platform child of the index the tag still points at: no drift.
		{host + "/multi:v1", scan.AtRisk, []scan.Code{scan.MutableReference}},
		// Only an image ID: said, not guessed.
		{host + "/steady:v1", scan.AtRisk, []scan.Code{scan.ImageIDOnly, scan.MutableReference}},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			im := got[tc.ref]
			if im == nil {
				t.Fatalf("not in the result; have %v", res.Images)
			}
			var codes []scan.Code
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
		if f.Code == scan.Drift && (f.Severity != scan.SeverityHigh || f.Digest != newApp || !strings.Contains(f.Message, oldApp)) {
			t.Errorf("drift on latest with Always: %+v; want high, tag now %s, running %s", f, newApp, oldApp)
		}
	}
	if n := len(app.Findings); n != 3 {
		t.Errorf("two pods of one Deployment gave %d findings, want one of each code (3)", n)
	}
	for _, f := range got[host+"/gone:v1"].Findings {
		if f.Code == scan.RunningDigestMissing && !strings.Contains(f.Message, "node-a, node node-b") {
			t.Errorf("running-digest-missing should name the nodes holding it: %s", f.Message)
		}
		if f.Code == scan.Drift && f.Severity != scan.SeverityWarning {
			t.Errorf("drift with IfNotPresent on a version tag: %s, want warning", f.Severity)
		}
	}
}

// Pods without pull secrets share one set of credentials (the Docker
// config): an image they share is walked once, not once per namespace; a
// pod with secrets gets its own walk.
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
	)
	ctr := func(ns, sa string) inventory.Container {
		return inventory.Container{Namespace: ns, OwnerKind: "Pod", OwnerName: "p", Pod: "p", Container: "c", Image: host + "/shared:v1", ServiceAccount: sa}
	}
	count := func(inv *inventory.Inventory) int {
		t.Helper()
		res, err := CheckWithPullSecrets(context.Background(), kc, inv)
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
}
