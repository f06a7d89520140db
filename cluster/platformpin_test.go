package cluster

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// TestPlatformPin: a reference that names one platform's manifest (the
// arm64 child of an index, by digest; a tag on an amd64-only image) is
// judged against the platforms of the nodes its workload may run on, as
// its config says: every node of another platform is broken
// (platform-mismatch, naming the index to pin instead), some at-risk, none
// nothing; a DaemonSet runs on every node, so one node of another platform
// is enough.
func TestPlatformPin(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	layer := func(s string) v1.Layer { return static.NewLayer([]byte(s), ggcrtypes.OCILayer) }
	amd := fixture.BuildImage(ggcrtypes.OCIManifestSchema1, v1.Platform{OS: "linux", Architecture: "amd64"}, layer("amd"))
	arm := fixture.BuildImage(ggcrtypes.OCIManifestSchema1, v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}, layer("arm"))
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, ggcrtypes.OCIImageIndex),
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}})
	multiTag, err := name.NewTag(host + "/multi:v1")
	if err != nil {
		t.Fatal(err)
	}
	singleTag, err := name.NewTag(host + "/single:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(multiTag, idx); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(singleTag, amd); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	armDigest, _ := arm.Digest()
	armChild := host + "/multi@" + armDigest.String()
	single := host + "/single:v1"

	node := func(n, arch string) runtime.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{inventory.LabelOS: "linux", inventory.LabelArch: arch}}}
	}
	deployment := func(image string, selector map[string]string) runtime.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "app", Image: image}}}}}}
	}
	daemonSet := func(image string) runtime.Object {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: image}}}}}}
	}
	for _, tc := range []struct {
		name     string
		objs     []runtime.Object
		verdict  types.Verdict
		severity types.Severity // of platform-mismatch; -1: none
		says     []string
	}{
		{"arm64 child, amd64 nodes only", []runtime.Object{node("a1", "amd64"), deployment(armChild, nil)}, types.Broken, types.SeverityCritical,
			[]string{"single-platform manifest for linux/arm64/v8", "node a1 (linux/amd64) cannot run it", "Deployment shop/app container app cannot start", "pin " + host + "/multi@" + idxDigest.String() + " instead"}},
		{"arm64 child, nodes of both", []runtime.Object{node("a1", "amd64"), node("r1", "arm64"), deployment(armChild, nil)}, types.AtRisk, types.SeverityWarning,
			[]string{"node a1 (linux/amd64) cannot run it", "while node r1 (linux/arm64) can"}},
		{"arm64 child, pinned to arm64 by nodeSelector", []runtime.Object{node("a1", "amd64"), node("r1", "arm64"), deployment(armChild, map[string]string{inventory.LabelArch: "arm64"})}, types.AtRisk, -1, nil},
		{"arm64 child, a DaemonSet on nodes of both", []runtime.Object{node("a1", "amd64"), node("r1", "arm64"), daemonSet(armChild)}, types.Broken, types.SeverityCritical,
			[]string{"node a1 (linux/amd64) cannot run it", "DaemonSet shop/agent container agent runs a pod on each of its nodes, those included"}},
		{"amd64-only tag, arm64 nodes", []runtime.Object{node("r1", "arm64"), deployment(single, nil)}, types.Broken, types.SeverityCritical,
			[]string{"single-platform manifest for linux/amd64", "node r1 (linux/arm64) cannot run it"}},
		{"amd64-only tag, amd64 nodes", []runtime.Object{node("a1", "amd64"), deployment(single, nil)}, types.OK, -1, nil},
		{"the index by tag: the runtime picks its child", []runtime.Object{node("a1", "amd64"), deployment(host+"/multi:v1", nil)}, types.OK, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			inv, err := inventory.List(ctx, k8sfake.NewClientset(tc.objs...), "")
			if err != nil {
				t.Fatal(err)
			}
			s, err := scan.New()
			if err != nil {
				t.Fatal(err)
			}
			res, err := Check(ctx, s, inv)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Images) != 1 {
				t.Fatalf("%d images", len(res.Images))
			}
			im := res.Images[0]
			for _, f := range im.Findings {
				t.Logf("%s %s: %s", f.Severity, f.Code, f.Message)
			}
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", im.Verdict, tc.verdict)
			}
			var f *types.Finding
			for i := range im.Findings {
				if im.Findings[i].Code == types.PlatformMismatch {
					f = &im.Findings[i]
				}
			}
			switch {
			case tc.severity < 0 && f != nil:
				t.Errorf("a platform-mismatch: %s", f.Message)
			case tc.severity < 0:
			case f == nil:
				t.Error("no platform-mismatch")
			case f.Severity != tc.severity:
				t.Errorf("severity %s, want %s", f.Severity, tc.severity)
			}
			for _, s := range tc.says {
				if f == nil || !strings.Contains(f.Message, s) {
					t.Errorf("finding does not say %q", s)
				}
			}
		})
	}
}

// TestPlatformPinFault: a config the registry fails to serve (503 on its
// GET) leaves the platform unknown, and so the image: a fault, named.
func TestPlatformPinFault(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img := fixture.BuildImage(ggcrtypes.OCIManifestSchema1, v1.Platform{OS: "linux", Architecture: "amd64"}, static.NewLayer([]byte("amd"), ggcrtypes.OCILayer))
	tag, err := name.NewTag(host + "/single:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inv, err := inventory.List(ctx, k8sfake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "r1", Labels: map[string]string{inventory.LabelOS: "linux", inventory.LabelArch: "arm64"}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: tag.String()}}}}}}), "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scan.New(scan.WithReask(0), scan.WithRetry(1, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(ctx, s, inv)
	if err != nil {
		t.Fatal(err)
	}
	im := res.Images[0]
	if im.Verdict != types.Unknown || !slices.ContainsFunc(im.Findings, func(f types.Finding) bool {
		return f.Code.Fault() && strings.Contains(f.Message, "could not read the platform") && strings.Contains(f.Message, "503")
	}) {
		t.Errorf("verdict %s, findings %+v; want unknown with the config's 503", im.Verdict, im.Findings)
	}
}
