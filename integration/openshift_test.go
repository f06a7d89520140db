//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// TestClusterScanMirrorSets: scan --cluster on a cluster that serves
// OpenShift's mirror set kinds (schemaless CRDs on the real apiserver)
// walks every use through the registries.conf the MCO renders from them.
// The source is the 2.8.3 registry after its GC, which lost the image the
// workloads pinned; the mirror, a 3.1.2, still holds it. An IDMS names
// the mirror for the source's repositories:
//   - a digest use is found through the mirror: at-risk, mirror-only
//     (broken before the IDMS exists);
//   - a tag use goes to the source only (an IDMS is digest-only): a tag
//     that only the mirror holds is broken, and a tag the source moved
//     resolves to the source's image, not the mirror's.
//
// The cluster's insecure registries (images.config.openshift.io cluster)
// mark both loopback registries, which serve plain HTTP, as the MCO does.
func TestClusterScanMirrorSets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx)
	if err := kubeapi.ApplyCRDs(ctx, kc.Config, filepath.Join("testdata", "openshift", "crds.yaml")); err != nil {
		t.Fatal(err)
	}
	src := startEmpty(t, registry.V2)
	mirror := startEmpty(t, registry.V3)

	// The same image on both; then the source's tag moves on and its GC
	// deletes the untagged old image. "gone" is on the mirror only.
	old := pushSingle(t, src.Host()+"/team/app:v1", "app v1, first build")
	if d := pushSingle(t, mirror.Host()+"/team/app:v1", "app v1, first build"); d != old {
		t.Fatalf("the mirror's copy is %s, the source's %s", d, old)
	}
	pushSingle(t, mirror.Host()+"/team/gone:v1", "gone v1")
	moved := pushSingle(t, src.Host()+"/team/app:v1", "app v1, rebuilt")
	collect(t, src)
	if serves(t, src.Host(), "team/app", old) {
		t.Fatal("the source still serves the old image after its GC")
	}

	pinned := src.Host() + "/team/app@" + old
	tagged := src.Host() + "/team/app:v1"
	gone := src.Host() + "/team/gone:v1"
	ns := "shop"
	namespaceWithSA(t, ctx, cs, ns)
	workload(t, ctx, cs, ns, "pinned", pinned, "IfNotPresent", "node-a", pinned)
	workload(t, ctx, cs, ns, "tagged", tagged, "IfNotPresent", "node-a", src.Host()+"/team/app@"+old)
	workload(t, ctx, cs, ns, "gone", gone, "IfNotPresent", "node-a", "")

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "openshift", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	dyn := dynamicFor(t, kc.Config)
	createObject(t, ctx, dyn, schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "images"}, "Image", "cluster",
		map[string]any{"registrySources": map[string]any{"insecureRegistries": []any{src.Host(), mirror.Host()}}})

	t.Run("no mirror set", func(t *testing.T) {
		_, got := clusterScan(t, kubeconfig)
		verdictIs(t, got, pinned, types.Broken, "")
	})

	createObject(t, ctx, dyn, idmsResource, "ImageDigestMirrorSet", "team",
		map[string]any{"imageDigestMirrors": []any{map[string]any{"source": src.Host() + "/team", "mirrors": []any{mirror.Host() + "/team"}}}})

	t.Run("IDMS", func(t *testing.T) {
		_, got := clusterScan(t, kubeconfig)
		verdictIs(t, got, pinned, types.AtRisk, types.MirrorOnly)
		verdictIs(t, got, gone, types.Broken, "")
		if im := got[tagged]; im == nil || im.Digest != moved {
			t.Errorf("%s resolved to %v, want the source's %s (an IDMS does not apply to tags)", tagged, im, moved)
		} else if slices.ContainsFunc(im.Findings, func(f types.Finding) bool { return f.Code == types.MirrorOnly }) {
			t.Errorf("%s: a mirror-only finding, but the tag never goes to the mirror", tagged)
		}
	})

	// --registries-config is the nodes' own file: the objects are not read.
	t.Run("--registries-config wins", func(t *testing.T) {
		conf := filepath.Join(t.TempDir(), "registries.conf")
		body := fmt.Sprintf("[[registry]]\nlocation = %q\ninsecure = true\n", src.Host())
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, got := clusterScan(t, kubeconfig, "--registries-config", conf)
		verdictIs(t, got, pinned, types.Broken, "")
	})
}

var idmsResource = schema.GroupVersionResource{Group: "config.openshift.io", Version: "v1", Resource: "imagedigestmirrorsets"}

func dynamicFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func createObject(t *testing.T, ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func verdictIs(t *testing.T, got map[string]*types.Image, ref string, verdict types.Verdict, code types.Code) {
	t.Helper()
	im := got[ref]
	if im == nil {
		t.Fatalf("%s not in the report", ref)
	}
	has := code == ""
	for _, f := range im.Findings {
		has = has || f.Code == code
	}
	if im.Verdict != verdict || !has {
		t.Errorf("%s: %s, want %s with %q", ref, im.Verdict, verdict, code)
		for _, f := range im.Findings {
			t.Logf("    %s %s: %s", f.Severity, f.Code, f.Message)
		}
	}
}
