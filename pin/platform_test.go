package pin

import (
	stdctx "context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
)

// platformImage is a one-layer image whose config says os/arch[/variant].
func platformImage(t *testing.T, seed, platform string) v1.Image {
	t.Helper()
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		t.Fatal(err)
	}
	img := testImage(t, seed+" "+platform)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// pushPlatforms pushes one image per platform, each by its own tag
// (repo:os-arch), and, when index is set, an index of them to repo:index;
// it returns the index digest ("" without one) and the images' by
// platform.
func pushPlatforms(t *testing.T, repo, index string, platforms ...string) (string, map[string]string) {
	t.Helper()
	idx := v1.ImageIndex(empty.Index)
	kids := map[string]string{}
	for _, pl := range platforms {
		img := platformImage(t, repo, pl)
		if err := remote.Write(mustTag(t, repo+":"+strings.ReplaceAll(pl, "/", "-")), img); err != nil {
			t.Fatal(err)
		}
		kids[pl] = digestOf(t, img)
		p, _ := v1.ParsePlatform(pl)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: ggcrtypes.OCIManifestSchema1, Platform: p}})
	}
	if index == "" {
		return "", kids
	}
	if err := remote.WriteIndex(mustTag(t, repo+":"+index), idx); err != nil {
		t.Fatal(err)
	}
	return digestOf(t, idx), kids
}

// TestRunNodePlatforms: with the platforms the pods run on known, a tag
// on an index pins the index, never a child; a single-platform manifest
// some node cannot run is refused, naming its platform, the nodes' and the
// index to pin instead when one lists it; one every node runs is pinned.
func TestRunNodePlatforms(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	multi, kids := pushPlatforms(t, host+"/multi", "v1", "linux/amd64", "linux/arm64/v8")
	_, lone := pushPlatforms(t, host+"/lone", "", "linux/amd64")
	mixed := func(yamlfile.Image) []types.NodePlatform {
		return []types.NodePlatform{{Platform: "linux/amd64", Nodes: []string{"a"}}, {Platform: "linux/arm64", Nodes: []string{"b", "c"}}}
	}
	for _, tc := range []struct {
		name        string
		ref         string
		nodes       func(yamlfile.Image) []types.NodePlatform
		running     string
		allowBroken bool
		want        string   // the digest pinned, "" for none
		says        []string // what the refusal names
	}{
		{"a tag on an index pins the index for arm64", host + "/multi:v1", NodesOf("linux/arm64"), "", false, multi, nil},
		{"a tag on an index pins the index on mixed nodes", host + "/multi:v1", mixed, "", false, multi, nil},
		{"a running child pins the index", host + "/multi:v1", NodesOf("linux/arm64"), kids["linux/arm64/v8"], false, multi, nil},
		{"amd64 manifest, amd64 pods", host + "/multi:linux-amd64", NodesOf("linux/amd64"), "", false, kids["linux/amd64"], nil},
		{"arm64/v8 manifest, arm64 pods", host + "/multi:linux-arm64-v8", NodesOf("linux/arm64"), "", false, kids["linux/arm64/v8"], nil},
		{"no platforms known: pinned as before", host + "/multi:linux-amd64", nil, "", false, kids["linux/amd64"], nil},
		{"amd64 manifest, arm64 pods, an index lists it", host + "/multi:linux-amd64", NodesOf("linux/arm64"), "", false, "",
			[]string{kids["linux/amd64"], "single-platform manifest for linux/amd64", "may run on linux/arm64", "the index " + multi + " lists it", "pin " + host + "/multi@" + multi + " instead"}},
		{"amd64 manifest, some nodes arm64", host + "/multi:linux-amd64", mixed, "", false, "",
			[]string{"node b (linux/arm64), node c (linux/arm64) cannot run it", "linux/amd64 (1 node), linux/arm64 (2 nodes)", multi}},
		{"amd64 manifest, arm64 pods, no index", host + "/lone:linux-amd64", NodesOf("linux/arm64"), "", false, "",
			[]string{lone["linux/amd64"], "no index of " + host + "/lone"}},
		{"refused with --allow-broken too", host + "/lone:linux-amd64", NodesOf("linux/arm64"), "", true, "", []string{"linux/amd64"}},
		{"a running single manifest arm64 pods cannot run", host + "/lone:linux-amd64", NodesOf("linux/arm64"), lone["linux/amd64"], false, "", []string{"linux/amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			in := testDeployment("default", "app", tc.ref)
			if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(in), 0o644); err != nil {
				t.Fatal(err)
			}
			c := Config{Scanner: s, Nodes: tc.nodes, AllowBroken: tc.allowBroken}
			if tc.running != "" {
				c.Running = func(yamlfile.Image) (string, error) { return tc.running, nil }
			}
			r, err := Run(stdctx.Background(), []string{dir}, c)
			if err != nil {
				t.Fatal(err)
			}
			want := in
			if tc.want != "" {
				want = testDeployment("default", "app", tc.ref+"@"+tc.want)
			}
			if got := string(r.Files[0].New); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
			refused := findingsOf(r, pinresult.KindPlatformMismatch)
			if (len(refused) > 0) != (tc.says != nil) || len(refused) > 1 {
				t.Fatalf("findings %v, want a platform-mismatch: %v", r.Findings, tc.says != nil)
			}
			for _, s := range tc.says {
				if !strings.Contains(refused[0].Message, s) {
					t.Errorf("the refusal lacks %q: %s", s, refused[0].Message)
				}
			}
		})
	}
}

// TestNodesFrom: a manifest's workload gets the nodes scan --cluster finds
// its pods eligible for (its nodeSelector's); one the cluster does not run,
// every node.
func TestNodesFrom(t *testing.T) {
	t.Parallel()
	node := func(name, arch string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{inventory.LabelOS: "linux", inventory.LabelArch: arch}}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "prod"}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{inventory.LabelArch: "arm64"},
		Containers:   []corev1.Container{{Name: "app", Image: "example.com/api:v1"}}}}
	inv := inventory.FromObjects(inventory.Objects{Pods: []*corev1.Pod{pod}, Nodes: []corev1.Node{node("a", "amd64"), node("b", "arm64"), node("c", "arm64")}})
	nodes := NodesFrom(inv)
	for _, tc := range []struct {
		name string
		img  yamlfile.Image
		want string
	}{
		{"the pod's nodeSelector", yamlfile.Image{Kind: "Pod", Namespace: "prod", Name: "api", Container: "app"}, "[{linux/arm64 [b c]}]"},
		{"not in the cluster", yamlfile.Image{Kind: "Deployment", Namespace: "prod", Name: "web", Container: "app"}, "[{linux/amd64 [a]} {linux/arm64 [b c]}]"},
		{"another container of the pod", yamlfile.Image{Kind: "Pod", Namespace: "prod", Name: "api", Container: "side"}, "[{linux/amd64 [a]} {linux/arm64 [b c]}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := fmt.Sprint(nodes(tc.img)); got != tc.want {
				t.Errorf("nodes %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRunNodePlatformsPerSite: one reference in two workloads is judged
// per workload: pinned where every node runs the manifest, refused where
// some node does not.
func TestRunNodePlatformsPerSite(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	_, kids := pushPlatforms(t, host+"/multi", "v1", "linux/amd64", "linux/arm64")
	ref := host + "/multi:linux-amd64"
	dir := t.TempDir()
	in := testDeployment("default", "held", ref) + "---\n" + testDeployment("default", "free", ref)
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes := func(img yamlfile.Image) []types.NodePlatform {
		if img.Name == "held" {
			return []types.NodePlatform{{Platform: "linux/amd64", Nodes: []string{"a"}}}
		}
		return []types.NodePlatform{{Platform: "linux/amd64", Nodes: []string{"a"}}, {Platform: "linux/arm64", Nodes: []string{"b"}}}
	}
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	want := testDeployment("default", "held", ref+"@"+kids["linux/amd64"]) + "---\n" + testDeployment("default", "free", ref)
	if got := string(r.Files[0].New); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	refused := findingsOf(r, pinresult.KindPlatformMismatch)
	if len(refused) != 1 || refused[0].Line != 23 || !strings.Contains(refused[0].Message, "node b (linux/arm64) cannot run it") {
		t.Errorf("refusals %v, want one, at free's line 23, naming node b", refused)
	}
}
