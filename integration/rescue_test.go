//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/rescue"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// ContainerdVersion is the containerd hack/build-bins.sh builds.
const ContainerdVersion = "v2.4.2"

// nodeStore is a node's content store: a real containerd's, filled by
// `ctr content fetch` of the linux/amd64 platform only (as a node's pull),
// or, where containerd cannot run, one laid out as containerd lays it.
type nodeStore struct {
	// Dir is what --from-content-store is given: the containerd root, or
	// the content folder itself.
	Dir string
	// Content is the content folder (…/io.containerd.content.v1.content).
	Content string
	// Real is true when containerd itself filled it.
	Real  bool
	fetch func(ref string) error
}

// containerdReason says why containerd cannot run here, "" when it can.
func containerdReason() string {
	if runtime.GOOS != "linux" {
		return "containerd runs on Linux only"
	}
	if os.Geteuid() != 0 {
		return fmt.Sprintf("containerd runs as root, and the tests run as uid %d", os.Geteuid())
	}
	for _, b := range []string{"containerd-" + ContainerdVersion, "ctr-" + ContainerdVersion} {
		if _, err := bins.Path(b); err != nil {
			return err.Error()
		}
	}
	return ""
}

// startNodeStore starts containerd as root with its own root and state
// folders and its socket in a temporary folder, or, where it cannot run,
// returns a store laid out as containerd lays it.
func startNodeStore(t *testing.T, host string) *nodeStore {
	t.Helper()
	if why := containerdReason(); why != "" || os.Getenv("REGCHECK_NO_CONTAINERD") != "" {
		if why == "" {
			why = "REGCHECK_NO_CONTAINERD is set"
		}
		t.Logf("not running containerd (%s): laying out a content store as containerd does", why)
		content := filepath.Join(t.TempDir(), "io.containerd.content.v1.content")
		for _, d := range []string{"blobs/sha256", "ingest"} {
			if err := os.MkdirAll(filepath.Join(content, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return &nodeStore{Dir: content, Content: content, fetch: func(ref string) error { return layOut(content, ref) }}
	}
	cd := startContainerd(t, false)
	root := cd.root
	run := func(args ...string) error {
		_, err := cd.ctr("k8s.io", args...)
		return err
	}
	start := cd.started
	t.Logf("containerd %s ready in %v (root %s)", ContainerdVersion, time.Since(start).Round(time.Millisecond), root)
	return &nodeStore{Dir: root, Content: filepath.Join(root, "io.containerd.content.v1.content"), Real: true,
		fetch: func(ref string) error {
			return run("content", "fetch", "--plain-http", "--skip-metadata", "--platform", "linux/amd64", ref)
		}}
}

// layOut writes what a linux/amd64 node's pull of ref keeps into a content
// folder as containerd does (blobs/sha256/<hex>, read-only): the index,
// the amd64 manifest, its config and layers; no other platform, no
// attestation.
func layOut(content, ref string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	put := func(b []byte) error {
		h, _, _ := v1.SHA256(bytes.NewReader(b))
		return os.WriteFile(filepath.Join(content, "blobs", "sha256", h.Hex), b, 0o444)
	}
	d, err := remote.Get(r)
	if err != nil {
		return err
	}
	if err := put(d.Manifest); err != nil {
		return err
	}
	img, err := d.Image() // resolves the linux/amd64 child of an index
	if err != nil {
		return err
	}
	raw, _ := img.RawManifest()
	cfg, _ := img.RawConfigFile()
	for _, b := range [][]byte{raw, cfg} {
		if err := put(b); err != nil {
			return err
		}
	}
	layers, _ := img.Layers()
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := put(b); err != nil {
			return err
		}
	}
	return nil
}

// pinnedIndex pushes a two-platform index by digest only to gc/pinned (and
// a tag beside it, without which 2.8.3's GC aborts): the GC deletes the
// index and both children.
func pinnedIndex(t *testing.T, ctx context.Context, host string) (index, amd, arm v1.Hash) {
	t.Helper()
	mk := func(arch, layer string) v1.Image {
		img := gcImage(t, "pinned "+layer)
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		img, err := mutate.ConfigFile(img, cf)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	a, b := mk("amd64", "amd64 layer"), mk("arm64", "arm64 layer")
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, ggcrtypes.OCIImageIndex),
		mutate.IndexAddendum{Add: a, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: b, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	index, _ = idx.Digest()
	amd, _ = a.Digest()
	arm, _ = b.Digest()
	ref, err := name.NewDigest(host+"/gc/pinned@"+index.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	gcPush(t, ctx, host+"/gc/pinned:keep", gcImage(t, "pinned keep"))
	return index, amd, arm
}

// rescuePlan runs rescue -o json and decodes its plan.
func rescuePlan(t *testing.T, wantCode int, args ...string) (*rescue.Plan, string) {
	t.Helper()
	start := time.Now()
	code, out, errOut := runCLI(t, append([]string{"rescue", "-o", "json"}, args...)...)
	if code != wantCode {
		t.Fatalf("regcheck rescue %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, wantCode, out, errOut)
	}
	var p rescue.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("rescue -o json: %v\n%s", err, out)
	}
	t.Logf("rescue %s: %d images in %v", strings.Join(args, " "), len(p.Images), time.Since(start).Round(time.Millisecond))
	return &p, out
}

func planImage(t *testing.T, p *rescue.Plan, suffix string) *rescue.Image {
	t.Helper()
	for _, im := range p.Images {
		if strings.HasSuffix(im.Reference, suffix) {
			return im
		}
	}
	t.Fatalf("no image %s in the plan", suffix)
	return nil
}

// fetchBytes GETs a manifest or blob by digest from the registry.
func fetchBytes(t *testing.T, host, repo, digest string, manifest bool) []byte {
	t.Helper()
	kind := "blobs"
	if manifest {
		kind = "manifests"
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/v2/%s/%s/%s", host, repo, kind, digest), nil)
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s %s@%s: %d", kind, repo, digest, resp.StatusCode)
	}
	return b
}

// findingKeys is an image's findings as code@digest, for comparing scans.
func findingKeys(im *types.Image) []string {
	var out []string
	for _, f := range im.Findings {
		out = append(out, string(f.Code)+"@"+f.Digest)
	}
	slices.Sort(out)
	return out
}

// scanRefs scans refs with a fresh Scanner.
func scanRefs(t *testing.T, refs []string, opts ...scan.Option) map[string]*types.Image {
	t.Helper()
	var ts []types.Target
	for _, r := range refs {
		ts = append(ts, types.Target{Ref: r, Uses: []types.Use{{Source: "args"}}})
	}
	res, err := scan.Run(context.Background(), ts, opts...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*types.Image{}
	for i, im := range res.Images {
		out[refs[i]] = im
	}
	return out
}

// TestRescue is the seed incident undone: docker/distribution 2.8.3's GC
// deletes the untagged children of the seed-shaped indexes (and an index
// pinned by digest with its children); a node's containerd content store,
// filled before the GC with the linux/amd64 pull of each image, restores
// what it holds, byte for byte; what no source holds is named; another
// registry holding everything restores the rest.
func TestRescue(t *testing.T) {
	ctx := context.Background()
	r, imgs := startRegistry(t, registry.V2)
	host := r.Host()
	index, pinnedAmd, pinnedArm := pinnedIndex(t, ctx, host)
	refs := []string{}
	for _, im := range imgs {
		refs = append(refs, im.Ref)
	}
	pinned := host + "/gc/pinned@" + index.String()
	refs = append(refs, pinned)

	// The node pulled every image before the GC.
	store := startNodeStore(t, host)
	start := time.Now()
	for _, ref := range refs {
		if err := store.fetch(ref); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("node content store filled in %v (containerd: %v)", time.Since(start).Round(time.Millisecond), store.Real)
	// A mirror that holds everything, under a prefix.
	mirror := startEmpty(t, registry.V3)
	if _, err := fixture.Push(ctx, mirror.Host(), "mirror/gc/"); err != nil {
		t.Fatal(err)
	}
	pinnedIndex(t, ctx, mirror.Host()+"/mirror")

	collect(t, r)
	before := scanRefs(t, refs)
	if v := before[pinned].Verdict; v != types.Broken {
		t.Fatalf("the pinned index after the GC: %s, want broken", v)
	}

	t.Run("plan", func(t *testing.T) {
		tree := storageTree(t, r.Root)
		p, _ := rescuePlan(t, 1, append([]string{"--from-content-store", store.Dir}, refs...)...)
		if !maps.Equal(tree, storageTree(t, r.Root)) {
			t.Error("a plan changed the registry's storage")
		}
		multi := planImage(t, p, "/gc/multiarch:v1")
		if multi.State != rescue.Partial || !slices.Equal(multi.WholePlatforms, []string{"linux/amd64"}) {
			t.Errorf("multiarch: %s, whole for %v; want partial, whole for linux/amd64", multi.State, multi.WholePlatforms)
		}
		buildx := planImage(t, p, "/gc/buildx:v1")
		if len(buildx.Missing) != 1 || buildx.Missing[0].Code != types.AttestationMissing {
			t.Errorf("buildx: stays missing %+v, want the attestation alone", buildx.Missing)
		}
		pin := planImage(t, p, "/gc/pinned@"+index.String())
		var blocked bool
		for _, pc := range pin.Pieces {
			if pc.Digest == index.String() && pc.Blocked != "" {
				blocked = true
			}
		}
		if !blocked || pin.State != rescue.Partial {
			t.Errorf("pinned index: state %s, pieces %+v; want partial, the index blocked (its arm64 child is in no source)", pin.State, pin.Pieces)
		}
		if single := planImage(t, p, "/gc/single:v1"); single.State != rescue.Whole || len(single.Pieces) != 0 {
			t.Errorf("single: %s with %d pieces, want whole, none", single.State, len(single.Pieces))
		}
	})

	t.Run("write from the node's content store", func(t *testing.T) {
		start := time.Now()
		code, out, errOut := runCLI(t, append([]string{"rescue", "--from-content-store", store.Dir, "--write"}, refs...)...)
		if code != 1 {
			t.Fatalf("rescue --write: exit %d, want 1 (the pinned index, other platforms and the attestation stay missing)\n%s\n%s", code, out, errOut)
		}
		t.Logf("rescue --write from the content store in %v:\n%s", time.Since(start).Round(time.Millisecond), out)
		for _, want := range []string{"cannot be pushed", "attestation-missing", "--tag PREFIX", "--platform linux/amd64"} {
			if !strings.Contains(out, want) {
				t.Errorf("the report does not say %q", want)
			}
		}
		// Every fixture whose amd64 pieces the node holds is whole for
		// linux/amd64; the pinned index is not, and a full scan is no worse.
		amd := scanRefs(t, refs, scan.WithPlatforms("linux/amd64"))
		full := scanRefs(t, refs)
		for _, ref := range refs {
			want := types.OK
			switch {
			case ref == pinned:
				want = types.Broken
			case strings.HasSuffix(ref, "/gc/buildx:v1"):
				want = types.AtRisk // the attestation stays missing
			}
			if got := amd[ref].Verdict; got != want {
				t.Errorf("%s: scan --platform linux/amd64 says %s, want %s (%+v)", ref, got, want, amd[ref].Findings)
			}
			for _, k := range findingKeys(full[ref]) {
				if !slices.Contains(findingKeys(before[ref]), k) {
					t.Errorf("%s: %s after the rescue, not before: worse", ref, k)
				}
			}
		}
		// The restored pieces are the node's bytes, byte for byte.
		restored := 0
		for _, fx := range imgs {
			for _, c := range fx.UntaggedChildren() {
				if c.Platform != "linux/amd64" {
					if serves(t, host, "gc/"+fx.Name, c.Digest.String()) {
						t.Errorf("%s: the %s child came back from an amd64 node", fx.Name, c.Platform)
					}
					continue
				}
				node, err := os.ReadFile(filepath.Join(store.Content, "blobs", "sha256", c.Digest.Hex))
				if err != nil {
					t.Fatal(err)
				}
				if got := fetchBytes(t, host, "gc/"+fx.Name, c.Digest.String(), true); !bytes.Equal(got, node) {
					t.Errorf("%s: the registry serves other bytes for %s than the node holds", fx.Name, c.Digest)
				}
				for _, b := range c.Blobs {
					node, _ := os.ReadFile(filepath.Join(store.Content, "blobs", "sha256", b.Hex))
					if got := fetchBytes(t, host, "gc/"+fx.Name, b.String(), false); !bytes.Equal(got, node) {
						t.Errorf("%s: blob %s differs from the node's", fx.Name, b)
					}
				}
				restored++
			}
		}
		if restored != 3 { // buildx, multiarch and manifestlist amd64 children
			t.Errorf("%d amd64 children checked, want 3", restored)
		}
		// The pinned index cannot come back from one node: its arm64 child is
		// gone everywhere, and the registry refuses the index without it.
		if serves(t, host, "gc/pinned", index.String()) || serves(t, host, "gc/pinned", pinnedArm.String()) {
			t.Error("the pinned index, or its arm64 child, is served")
		}
		if !serves(t, host, "gc/pinned", pinnedAmd.String()) {
			t.Error("the pinned index's amd64 child, which the node holds, was not restored")
		}
		// What rescue predicts, the registry does: it refuses the index.
		body, err := os.ReadFile(filepath.Join(store.Content, "blobs", "sha256", index.Hex))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/v2/gc/pinned/manifests/%s", host, index), bytes.NewReader(body))
		req.Header.Set("Content-Type", string(ggcrtypes.OCIImageIndex))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("docker/distribution 2.8.3 accepted an index whose arm64 child is gone: %d %s", resp.StatusCode, msg)
		} else {
			t.Logf("docker/distribution 2.8.3 refuses the pinned index, as rescue predicts: %d %s", resp.StatusCode, bytes.TrimSpace(msg))
		}
	})

	t.Run("a second run pushes nothing", func(t *testing.T) {
		p, _ := rescuePlan(t, 1, append([]string{"--from-content-store", store.Dir, "--write"}, refs...)...)
		for _, im := range p.Images {
			for _, pc := range im.Pieces {
				if pc.Outcome == rescue.Pushed {
					t.Errorf("%s: pushed %s again", im.Reference, pc.Digest)
				}
			}
		}
	})

	t.Run("untagged children are deleted again by the next GC; --tag holds them", func(t *testing.T) {
		multi := imgs[slices.IndexFunc(imgs, func(f fixture.Image) bool { return f.Name == "multiarch" })]
		amd := multi.Children[0].Digest.String()
		collect(t, r)
		if serves(t, host, "gc/multiarch", amd) {
			t.Fatal("2.8.3's GC kept a restored child no tag holds: the untagged warning would be wrong")
		}
		p, _ := rescuePlan(t, 1, append([]string{"--from-content-store", store.Dir, "--write", "--tag", "rescued"}, refs...)...)
		tagged := 0
		for _, im := range p.Images {
			for _, pc := range im.Pieces {
				if pc.Tag != "" {
					tagged++
				}
				if pc.Untagged && pc.Outcome == rescue.Pushed {
					t.Errorf("%s: %s pushed and left untagged despite --tag (%s)", im.Reference, pc.Digest, pc.Error)
				}
			}
		}
		if tagged == 0 {
			t.Fatal("nothing was tagged")
		}
		collect(t, r)
		if !serves(t, host, "gc/multiarch", amd) {
			t.Error("the GC deleted a restored child tagged by --tag")
		}
		if got := scanRefs(t, []string{multi.Ref}, scan.WithPlatforms("linux/amd64"))[multi.Ref]; got.Verdict != types.OK {
			t.Errorf("multiarch after a GC of the tagged rescue: %s %+v", got.Verdict, got.Findings)
		}
	})

	t.Run("a mirror restores the rest", func(t *testing.T) {
		start := time.Now()
		p, _ := rescuePlan(t, 0, append([]string{"--from-content-store", store.Dir, "--from-registry", mirror.Host() + "/mirror", "--write"}, refs...)...)
		t.Logf("rescue from the mirror in %v: %+v", time.Since(start).Round(time.Millisecond), p.Summary())
		for ref, im := range scanRefs(t, refs) {
			if im.Verdict != types.OK {
				t.Errorf("%s after the mirror's rescue: %s %+v", ref, im.Verdict, im.Findings)
			}
		}
	})
}

// TestRescueClusterJob: rescue --cluster finds the nodes that still hold
// each broken image (a pod running it, nodes[].status.images) and creates,
// as the ServiceAccount deploy/rescue/rbac.yaml sets up, one Job per node
// against a real kube-apiserver: pinned to the node, the content store
// mounted read-only, nothing privileged; and nothing else.
func TestRescueClusterJob(t *testing.T) {
	ctx := t.Context()
	r, imgs := startRegistry(t, registry.V2)
	collect(t, r)
	fx := map[string]fixture.Image{}
	for _, im := range imgs {
		fx[im.Name] = im
	}
	host := r.Host()
	kc := startCluster(t)
	admin := clientFor(t, kc.Config)
	for _, f := range []string{"rbac.yaml", "rescue/rbac.yaml"} {
		if err := applyManifest(ctx, admin, filepath.Join("..", "deploy", f)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller-manager runs: the namespace's default ServiceAccount is made here.
	if _, err := admin.CoreV1().ServiceAccounts("shop").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	multi, buildx := fx["multiarch"], fx["buildx"]
	repoOf := func(f fixture.Image) string { return host + "/gc/" + f.Name }
	// A pod not yet scheduled wants multiarch, which node-a holds in its
	// cache (status.images); a pod on node-b runs buildx; a pod not yet
	// scheduled wants manifestlist, which no node holds.
	for _, n := range []struct {
		name   string
		images [][]string
	}{
		{"node-a", [][]string{{repoOf(multi) + "@" + multi.Digest.String(), multi.Ref}}},
		{"node-b", nil},
	} {
		node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, names := range n.images {
			node.Status.Images = append(node.Status.Images, corev1.ContainerImage{Names: names, SizeBytes: 1 << 20})
		}
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	workload(t, ctx, admin, "shop", "signaling", buildx.Ref, "IfNotPresent", "node-b", repoOf(buildx)+"@"+buildx.Digest.String())
	for pod, image := range map[string]string{"backfill": fx["manifestlist"].Ref, "report": multi.Ref} {
		if _, err := admin.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: pod, Image: image}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Secrets("regcheck").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcheck-push"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saCfg, token, err := kc.ServiceAccountConfig(ctx, "regcheck", "regcheck-rescue")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "rescue", token); err != nil {
		t.Fatal(err)
	}
	args := []string{"rescue", "--cluster", "-A", "--kubeconfig", kubeconfig, "--push-secret", "regcheck/regcheck-push",
		"--job-image", "reg.example.com/regcheck:test", "--tag", "rescued"}

	t.Run("printed, not created, without --apply", func(t *testing.T) {
		code, out, errOut := runCLI(t, args...)
		if code != 1 || !strings.Contains(errOut, "no node holds "+repoOf(fx["manifestlist"])+"@") {
			t.Fatalf("exit %d, want 1 naming manifestlist as held by no node\n%s", code, errOut)
		}
		if n := strings.Count(out, "kind: Job"); n != 2 {
			t.Errorf("%d Jobs printed, want 2:\n%s", n, out)
		}
		jobs, err := admin.BatchV1().Jobs("regcheck").List(ctx, metav1.ListOptions{})
		if err != nil || len(jobs.Items) != 0 {
			t.Fatalf("jobs exist before --apply: %v %v", jobs, err)
		}
	})

	t.Run("created with --apply, as the regcheck-rescue ServiceAccount", func(t *testing.T) {
		code, _, errOut := runCLI(t, append(args, "--apply")...)
		if code != 1 {
			t.Fatalf("exit %d, want 1 (manifestlist is held by no node)\n%s", code, errOut)
		}
		jobs, err := admin.BatchV1().Jobs("regcheck").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"node-a": repoOf(multi) + "@" + multi.Digest.String(), "node-b": repoOf(buildx) + "@" + buildx.Digest.String()}
		if len(jobs.Items) != len(want) {
			t.Fatalf("%d jobs created, want %d", len(jobs.Items), len(want))
		}
		for _, j := range jobs.Items {
			ps := j.Spec.Template.Spec
			img, ok := want[ps.NodeName]
			if !ok {
				t.Errorf("job %s pinned to %q", j.Name, ps.NodeName)
				continue
			}
			c := ps.Containers[0]
			if !slices.Contains(c.Args, img) || !slices.Contains(c.Args, "--write") || !slices.Contains(c.Args, "rescued") {
				t.Errorf("job %s on %s runs %v, want rescue --write --tag rescued %s", j.Name, ps.NodeName, c.Args, img)
			}
			var hostPath string
			for _, v := range ps.Volumes {
				if v.HostPath != nil {
					hostPath = v.HostPath.Path
				}
			}
			if hostPath != rescue.K3sContentStore {
				t.Errorf("job %s mounts host path %q, want %s", j.Name, hostPath, rescue.K3sContentStore)
			}
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly {
					t.Errorf("job %s mounts %s writable", j.Name, m.Name)
				}
			}
			sc := c.SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("job %s container security context %+v: want no privilege", j.Name, sc)
			}
			if psc := ps.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Errorf("job %s may run as root", j.Name)
			}
			if ps.HostNetwork || ps.HostPID || ps.HostIPC || ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken || ps.ServiceAccountName != "regcheck-rescue-job" {
				t.Errorf("job %s: host namespaces or a service account token: %+v", j.Name, ps)
			}
			if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 || j.Spec.TTLSecondsAfterFinished == nil {
				t.Errorf("job %s is not short-lived: backoffLimit %v, ttl %v", j.Name, j.Spec.BackoffLimit, j.Spec.TTLSecondsAfterFinished)
			}
		}
		// Again: the same Jobs exist, nothing more is created.
		if code, _, errOut := runCLI(t, append(args, "--apply")...); code != 1 || !strings.Contains(errOut, "exists already") {
			t.Errorf("second --apply: exit %d\n%s", code, errOut)
		}
	})

	t.Run("the ServiceAccount may do nothing else", func(t *testing.T) {
		sa := clientFor(t, saCfg)
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "x", Image: "x"}}}}}}
		if _, err := sa.BatchV1().Jobs("shop").Create(ctx, job, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("creating a job in shop: %v, want Forbidden", err)
		}
		if err := sa.BatchV1().Jobs("regcheck").Delete(ctx, "x", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("deleting a job in regcheck: %v, want Forbidden", err)
		}
		if _, err := sa.CoreV1().Secrets("regcheck").Get(ctx, "regcheck-push", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("reading the push secret: %v, want Forbidden", err)
		}
		if _, err := sa.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: job.Spec.Template.Spec}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("creating a pod: %v, want Forbidden", err)
		}
	})

	t.Run("deploy/rescue/job.yaml is a valid Job", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("..", "deploy", "rescue", "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		job := obj.(*batchv1.Job)
		job.Spec.Template.Spec.NodeName = "node-a"
		if _, err := admin.BatchV1().Jobs("regcheck").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the Job template: %v", err)
		}
	})
}
