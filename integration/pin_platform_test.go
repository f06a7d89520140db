//go:build integration

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// TestPinPlatforms: on the real registry 2.8.3, pin --platform names the
// platforms the pods run on. A tag on an index pins the index, never a
// child. An amd64-only manifest pinned for arm64 (or for amd64 and arm64,
// comma-separated) is refused, the file left as is, exit 1: the refusal
// names the manifest's platform, the pods' and the index to pin instead
// when a tag reaches one listing it. Pinned for amd64, it is pinned.
func TestPinPlatforms(t *testing.T) {
	r, imgs := startRegistry(t, registry.V2)
	digests := fixtureDigests(imgs)
	var amd64Child string
	for _, im := range imgs {
		if im.Name == "partial" {
			amd64Child = im.Children[0].Digest.String()
		}
	}
	host := r.Host() + "/gc/"
	dir := t.TempDir()
	multi := writeFile(t, dir, "multi.yaml", deployment("multi", host+"multiarch:v1", ""))
	child := writeFile(t, dir, "child.yaml", deployment("child", host+"partial:v1-amd64", ""))
	solo := writeFile(t, dir, "solo.yaml", deployment("solo", host+"app-a:v1", ""))

	for _, platforms := range []string{"linux/arm64", "linux/amd64,linux/arm64"} {
		code, out, errs := runCLI(t, "pin", "--write", "--platform", platforms, dir)
		if code != cli.ExitFindings {
			t.Fatalf("--platform %s: exit %d, want 1\n%s%s", platforms, code, out, errs)
		}
		if got, want := readFile(t, multi), deployment("multi", host+"multiarch:v1@"+digests["multiarch"], ""); got != want {
			t.Errorf("--platform %s: multi.yaml:\n%s\nwant the index digest:\n%s", platforms, got, want)
		}
		if readFile(t, child) != deployment("child", host+"partial:v1-amd64", "") || readFile(t, solo) != deployment("solo", host+"app-a:v1", "") {
			t.Errorf("--platform %s: a single amd64 manifest was pinned:\n%s%s", platforms, readFile(t, child), readFile(t, solo))
		}
		for _, want := range []string{
			child + ":10: platform-mismatch: refusing to pin " + host + "partial:v1-amd64 to " + amd64Child,
			"single-platform manifest for linux/amd64; the pods may run on " + strings.ReplaceAll(platforms, ",", ", ") + ": linux/arm64 cannot run it",
			"the index " + digests["partial"] + " lists it: pin " + host + "partial@" + digests["partial"] + " instead",
			solo + ":10: platform-mismatch: refusing to pin " + host + "app-a:v1 to " + digests["app-a"],
			"no index of " + host + "app-a the registry's tags reach lists it",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("--platform %s: stderr lacks %q:\n%s", platforms, want, errs)
			}
		}
	}

	code, out, errs := runCLI(t, "pin", "--write", "--platform", "linux/amd64", dir)
	if code != cli.ExitClean {
		t.Fatalf("--platform linux/amd64: exit %d, want 0\n%s%s", code, out, errs)
	}
	if got := readFile(t, child); !strings.Contains(got, "partial:v1-amd64@"+amd64Child) {
		t.Errorf("the amd64 child was not pinned for amd64 pods:\n%s", got)
	}
	if got := readFile(t, filepath.Join(dir, "solo.yaml")); !strings.Contains(got, "app-a:v1@"+digests["app-a"]) {
		t.Errorf("app-a was not pinned for amd64 pods:\n%s", got)
	}
}

// TestPinFromClusterPlatforms: on the real kube-apiserver with an amd64
// and an arm64 Node, pin --from-cluster judges a single-platform manifest
// against the nodes each workload may run on, as scan --cluster computes
// them: partial:v1-amd64 (the amd64 child of partial:v1, tagged) run by a
// Deployment held to amd64 by its nodeSelector is pinned; the same
// reference run by a Deployment free to run on both is refused, naming the
// arm64 node and the index to pin instead; multiarch:v1 is pinned to its
// index.
func TestPinFromClusterPlatforms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx)
	r, imgs := startRegistry(t, registry.V2)
	digests := fixtureDigests(imgs)
	var amd64Child string
	for _, im := range imgs {
		if im.Name == "partial" {
			amd64Child = im.Children[0].Digest.String()
		}
	}
	for _, n := range []struct{ name, arch string }{{"amd-1", "amd64"}, {"arm-1", "arm64"}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/arch": n.arch}}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := "shop"
	namespaceWithSA(t, ctx, cs, ns)
	host := r.Host() + "/gc/"
	child, multi := host+"partial:v1-amd64", host+"multiarch:v1"
	onAmd64 := func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"kubernetes.io/arch": "amd64"} }
	workloadWith(t, ctx, cs, ns, "held", child, "IfNotPresent", "amd-1", host+"partial@"+amd64Child, onAmd64)
	workloadWith(t, ctx, cs, ns, "free", child, "IfNotPresent", "amd-1", host+"partial@"+amd64Child, nil)
	workloadWith(t, ctx, cs, ns, "multi", multi, "IfNotPresent", "arm-1", host+"multiarch@"+digests["multiarch"], nil)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "mixed", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	manifest := func(name, image string) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  template:\n    spec:\n      containers:\n        - name: %s\n          image: %s\n", name, ns, name, image)
	}
	held := writeFile(t, dir, "held.yaml", manifest("held", child))
	free := writeFile(t, dir, "free.yaml", manifest("free", child))
	multiFile := writeFile(t, dir, "multi.yaml", manifest("multi", multi))
	code, out, errs := runCLI(t, "pin", "--write", "--from-cluster", "--kubeconfig", kubeconfig, "-n", ns, dir)
	if code != cli.ExitFindings {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	if got := readFile(t, held); got != manifest("held", child+"@"+amd64Child) {
		t.Errorf("held.yaml (amd64 nodes only):\n%s\nwant the amd64 manifest pinned", got)
	}
	if got := readFile(t, free); got != manifest("free", child) {
		t.Errorf("free.yaml (amd64 and arm64 nodes) was changed:\n%s", got)
	}
	if got := readFile(t, multiFile); got != manifest("multi", multi+"@"+digests["multiarch"]) {
		t.Errorf("multi.yaml:\n%s\nwant the index pinned", got)
	}
	for _, want := range []string{
		free + ":11: platform-mismatch: refusing to pin " + child + " to " + amd64Child,
		"node arm-1 (linux/arm64) cannot run it",
		"pin " + host + "partial@" + digests["partial"] + " instead",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}
