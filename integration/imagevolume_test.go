//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/types"
)

// withDigestGate is the kube-apiserver flag that keeps an image volume's
// digest in pod status (status.containerStatuses[].volumeMounts[]
// .volumeStatus.image.imageRef): alpha and off by default in 1.37, when
// the ImageVolume gate itself is GA and locked on.
const withDigestGate = "--feature-gates=ImageVolumeWithDigest=true"

// imageVolume returns a mutate for workloadWith that adds an image volume
// name of reference ref with policy ("" for Kubernetes' default), mounted
// by the pod's first container.
func imageVolume(name, ref string, policy corev1.PullPolicy) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: ref, PullPolicy: policy}}})
		s.Containers[0].VolumeMounts = append(s.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/" + name})
	}
}

// setVolumeDigests writes, as a kubelet with ImageVolumeWithDigest would,
// the status of each volume mount of the first container of the pod
// labelled app=app, with the imageRef of each image volume (by name), and
// returns the pod as the API server then has it.
func setVolumeDigests(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, app string, imageRefs map[string]string) *corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pod of %s: %v, %d pods", app, err, len(pods.Items))
	}
	pod := &pods.Items[0]
	st := &pod.Status.ContainerStatuses[0]
	st.VolumeMounts = nil
	for _, m := range pod.Spec.Containers[0].VolumeMounts { // the service account token's too
		ms := corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: true}
		if r := imageRefs[m.Name]; r != "" {
			ms.VolumeStatus = &corev1.VolumeStatus{Image: &corev1.ImageVolumeStatus{ImageRef: r}}
		}
		st.VolumeMounts = append(st.VolumeMounts, ms)
	}
	pod, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// mountedImageRefs are the imageRefs a pod's container statuses hold, by
// volume name.
func mountedImageRefs(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, st := range pod.Status.ContainerStatuses {
		for _, m := range st.VolumeMounts {
			if m.VolumeStatus != nil && m.VolumeStatus.Image != nil {
				out[m.Name] = m.VolumeStatus.Image.ImageRef
			}
		}
	}
	return out
}

// volumeUse returns the use of im by image volume name, or nil.
func volumeUse(im *types.Image, name string) *types.Use {
	for i := range im.Uses {
		if im.Uses[i].Volume == name {
			return &im.Uses[i]
		}
	}
	return nil
}

// TestImageVolumeCluster: a real kube-apiserver (with ImageVolumeWithDigest,
// so that pod status keeps the digests) whose Deployment mounts two image
// volumes from a real docker/distribution 2.8.3: weights, the buildx index
// whose children the registry's own GC deletes, and models, on a latest
// that moved after the pod started. scan --cluster finds both, naming the
// volume; record records and diffs them; pin --from-cluster pins a
// manifest's volume to the digest it mounts.
func TestImageVolumeCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc, cs := startKube(t, ctx, withDigestGate)
	reg, imgs := startRegistry(t, registry.V2)
	host := reg.Host()
	buildx := fixtureDigests(imgs)["buildx"]
	ref := func(repo, rest string) string { return host + "/" + repo + rest }

	server := pushSingle(t, ref("c/server", ":v1"), "server v1")
	modelsA := pushSingle(t, ref("c/models", ":latest"), "models, first training")
	ns := "ml"
	namespaceWithSA(t, ctx, cs, ns)
	workloadWith(t, ctx, cs, ns, "serve", ref("c/server", ":v1"), "IfNotPresent", "node-a", ref("c/server", "@"+server), func(s *corev1.PodSpec) {
		imageVolume("weights", ref("gc/buildx", ":v1"), corev1.PullIfNotPresent)(s)
		imageVolume("models", ref("c/models", ":latest"), "")(s) // latest: Always by default
	})
	pod := setVolumeDigests(t, ctx, cs, ns, "serve", map[string]string{
		"weights": ref("gc/buildx", "@"+buildx),
		"models":  "docker-pullable://" + ref("c/models", "@"+modelsA),
	})
	if got := mountedImageRefs(pod); len(got) != 2 || got["weights"] == "" || got["models"] == "" {
		t.Fatalf("the API server did not keep the volume digests (%s): %v", withDigestGate, got)
	}
	if pod.Spec.Volumes[1].Image.PullPolicy != corev1.PullAlways {
		t.Errorf("the API server defaulted models' pullPolicy to %q, want Always (the rule regcheck applies)", pod.Spec.Volumes[1].Image.PullPolicy)
	}
	modelsB := pushSingle(t, ref("c/models", ":latest"), "models, retrained") // upstream moves on
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "gpu-prod", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}

	t.Run("before GC", func(t *testing.T) {
		code, got := clusterScan(t, kubeconfig)
		checkImages(t, got, map[string]want{
			ref("c/server", ":v1"):     {types.OK, []string{"mutable-reference"}},
			ref("gc/buildx", ":v1"):    {types.OK, []string{"mutable-reference"}},
			ref("c/models", ":latest"): {types.AtRisk, []string{"drift", "mutable-reference", "pull-always-mutable"}},
		})
		if code != cli.ExitClean {
			t.Errorf("exit %d, want 0", code)
		}
		if im := got[ref("c/models", ":latest")]; im != nil {
			d := finding(im, types.Drift)
			if d == nil || d.Severity != types.SeverityHigh || !strings.Contains(d.Message, "Deployment ml/serve volume models mounts "+modelsA) || d.Digest != modelsB {
				t.Errorf("drift: %+v; want high, naming volume models mounting %s, the tag now at %s", d, modelsA, modelsB)
			}
			p := finding(im, types.PullAlwaysMutable)
			if p == nil || !strings.Contains(p.Message, "volume models") || !strings.Contains(p.Message, "pullPolicy: Always") {
				t.Errorf("pull-always-mutable: %+v; want it to name volume models and its pullPolicy", p)
			}
		}
	})

	t.Run("record", func(t *testing.T) {
		history := filepath.Join(t.TempDir(), "history.json")
		run := func(args ...string) []byte {
			t.Helper()
			code, out, errs := runCLI(t, append([]string{"record", "-A", "--kubeconfig", kubeconfig, "--out", history, "-o", "json"}, args...)...)
			if code != cli.ExitClean {
				t.Fatalf("record %v: exit %d\n%s", args, code, errs)
			}
			return []byte(out)
		}
		var first struct {
			Containers int
			Entries    []recordresult.Entry
		}
		if err := json.Unmarshal(run(), &first); err != nil {
			t.Fatal(err)
		}
		volumes := map[string]string{}
		for _, e := range first.Entries {
			if e.Volume != "" {
				if e.Container != "" || e.OwnerKind != "Deployment" || e.OwnerName != "serve" {
					t.Errorf("volume entry %+v", e)
				}
				volumes[e.Volume] = e.Digest
			}
		}
		if first.Containers != 3 || volumes["weights"] != buildx || volumes["models"] != modelsA {
			t.Errorf("first record: %d entries, volumes %v; want 3 (the container and two volumes), weights at %s, models at %s", first.Containers, volumes, buildx, modelsA)
		}

		// The pod restarts with the volume on the new digest.
		setVolumeDigests(t, ctx, cs, ns, "serve", map[string]string{
			"weights": ref("gc/buildx", "@"+buildx), "models": ref("c/models", "@"+modelsB)})
		var second struct{ Changes []recordresult.Change }
		if err := json.Unmarshal(run("--diff"), &second); err != nil {
			t.Fatal(err)
		}
		if len(second.Changes) != 1 || second.Changes[0].Volume != "models" || second.Changes[0].Container != "" || second.Changes[0].To != modelsB {
			t.Errorf("record --diff: %+v, want volume models only, now at %s", second.Changes, modelsB)
		}
		// Back as it was for the scans below: a change the table names too.
		setVolumeDigests(t, ctx, cs, ns, "serve", map[string]string{
			"weights": ref("gc/buildx", "@"+buildx), "models": "docker-pullable://" + ref("c/models", "@"+modelsA)})
		code, out, errs := runCLI(t, "record", "-A", "--kubeconfig", kubeconfig, "--out", history, "--diff")
		if code != cli.ExitClean || !strings.Contains(out, "volume models") || !strings.Contains(out, "1 containers changed digest") {
			t.Errorf("record --diff table: exit %d, does not name volume models:\n%s%s", code, out, errs)
		}
	})

	// pin --from-cluster pins the manifest's volume to the digest it
	// mounts (A), not to the one the tag moved to (B).
	t.Run("pin --from-cluster", func(t *testing.T) {
		dir := t.TempDir()
		manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
  namespace: ml
spec:
  template:
    spec:
      containers:
        - name: serve
          image: %s
      volumes:
        - name: models
          image:
            reference: %s # retrained nightly
`, ref("c/server", ":v1"), ref("c/models", ":latest"))
		file := writeFile(t, dir, "serve.yaml", manifest)
		code, out, errs := runCLI(t, "pin", "--write", "--from-cluster", "-A", "--kubeconfig", kubeconfig, dir)
		if code != cli.ExitClean {
			t.Fatalf("pin --from-cluster: exit %d\n%s%s", code, out, errs)
		}
		want := strings.NewReplacer(ref("c/server", ":v1"), ref("c/server", ":v1@"+server),
			ref("c/models", ":latest"), ref("c/models", ":latest@"+modelsA)).Replace(manifest)
		if got := readFile(t, file); got != want {
			t.Errorf("pin --from-cluster wrote:\n%s\nwant:\n%s", got, want)
		}
	})

	// The registry's own GC deletes buildx's untagged children.
	collect(t, reg)

	t.Run("after GC", func(t *testing.T) {
		code, got := clusterScan(t, kubeconfig)
		checkImages(t, got, map[string]want{
			ref("c/server", ":v1"):     {types.OK, []string{"mutable-reference"}},
			ref("gc/buildx", ":v1"):    {types.Broken, []string{"attestation-missing", "child-missing"}},
			ref("c/models", ":latest"): {types.AtRisk, []string{"drift", "mutable-reference", "pull-always-mutable", "running-digest-missing"}},
		})
		if code != cli.ExitFindings {
			t.Errorf("exit %d, want 1: an image volume's image is broken", code)
		}
		if im := got[ref("gc/buildx", ":v1")]; im != nil {
			u := volumeUse(im, "weights")
			if len(im.Uses) != 1 || u == nil || u.Container != "" || u.Pod == "" || u.PullPolicy != "IfNotPresent" || u.RunningDigest != buildx {
				t.Errorf("uses of the broken image: %+v; want volume weights of the pod, IfNotPresent, mounting %s", im.Uses, buildx)
			}
		}
		var out, errb bytes.Buffer
		code = cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb}, []string{"scan", "--cluster", "-A", "--kubeconfig", kubeconfig})
		if code != cli.ExitFindings || !strings.Contains(out.String(), "Deployment ml/serve volume weights") {
			t.Errorf("table: exit %d, does not name the volume:\n%s%s", code, out.String(), errb.String())
		}
	})
}

// TestImageVolumeStatusWithoutDigestGate: an API server of 1.37 as it
// ships (ImageVolumeWithDigest off) drops an image volume's imageRef from
// pod status, so the volume is listed and recorded with no running digest.
func TestImageVolumeStatusWithoutDigestGate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cs := startKube(t, ctx)
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	namespaceWithSA(t, ctx, cs, "ml")
	workloadWith(t, ctx, cs, "ml", "serve", "reg.example/server:v1", "IfNotPresent", "node-a", "reg.example/server@"+digest,
		imageVolume("weights", "reg.example/weights:v3", ""))
	pod := setVolumeDigests(t, ctx, cs, "ml", "serve", map[string]string{"weights": "reg.example/weights@" + digest})
	if got := mountedImageRefs(pod); len(got) != 0 {
		t.Fatalf("volume mount status has image refs %v: want them dropped without %s", got, withDigestGate)
	}
	inv, err := inventory.List(ctx, cs, "ml")
	if err != nil {
		t.Fatal(err)
	}
	var vols []inventory.Container
	for _, c := range inv.Containers {
		if c.ImageVolume() {
			vols = append(vols, c)
		}
	}
	if len(vols) != 1 || vols[0].Pod == "" || vols[0].Container != "weights" || vols[0].PullPolicy != "IfNotPresent" || vols[0].ImageID != "" || vols[0].RunningDigest != "" {
		t.Errorf("image volumes: %+v; want weights of the pod, IfNotPresent, with no digest", vols)
	}
	snap := record.FromInventory("prod", time.Now(), inv)
	n := 0
	for _, e := range snap.Entries {
		if e.Volume == "weights" && e.Digest == "" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("record entries %+v: want weights once, with no digest", snap.Entries)
	}
}

// TestImageVolumeFiles: scan -f finds a pod's image volume reference at its
// line, naming the volume; pin --write adds its digest there, as for the
// container's image beside it, and a second run changes nothing.
func TestImageVolumeFiles(t *testing.T) {
	reg, imgs := startRegistry(t, registry.V3)
	host := reg.Host()
	digests := fixtureDigests(imgs)
	dir := t.TempDir()
	pod := fmt.Sprintf(`# a pod that mounts its model as an image volume
apiVersion: v1
kind: Pod
metadata:
  name: serve
  namespace: ml
spec:
  containers:
    - name: server
      image: %[1]s/gc/app-a:v1
      volumeMounts:
        - {name: weights, mountPath: /weights}
  volumes:
    - name: cache
      emptyDir: {}
    - name: weights
      image:
        reference: %[1]s/gc/multiarch:v1 # two platforms
        pullPolicy: IfNotPresent
`, host)
	file := writeFile(t, dir, "serve.yaml", pod)

	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb}, []string{"scan", "-f", file, "-o", "json"})
	if code != cli.ExitClean {
		t.Fatalf("scan -f: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var doc struct{ Images []*types.Image }
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var vol *types.Image
	for _, im := range doc.Images {
		if im.Reference == host+"/gc/multiarch:v1" {
			vol = im
		}
	}
	if len(doc.Images) != 2 || vol == nil {
		t.Fatalf("scan -f found %d images, want app-a and the volume's multiarch: %+v", len(doc.Images), doc.Images)
	}
	if u := volumeUse(vol, "weights"); len(vol.Uses) != 1 || u == nil || u.File != file || u.Line != 18 || u.Kind != "Pod" ||
		u.Name != "serve" || u.Container != "" || u.PullPolicy != "IfNotPresent" || vol.Verdict != types.OK || vol.Digest != digests["multiarch"] {
		t.Errorf("the volume's image: %s %s, uses %+v; want ok at %s, volume weights at %s:18", vol.Verdict, vol.Digest, vol.Uses, digests["multiarch"], file)
	}

	code, stdout, errs := runCLI(t, "pin", "--write", dir)
	if code != cli.ExitClean {
		t.Fatalf("pin --write: exit %d\n%s%s", code, stdout, errs)
	}
	want := strings.NewReplacer(host+"/gc/app-a:v1", host+"/gc/app-a:v1@"+digests["app-a"],
		host+"/gc/multiarch:v1", host+"/gc/multiarch:v1@"+digests["multiarch"]).Replace(pod)
	if got := readFile(t, file); got != want {
		t.Errorf("pin --write wrote:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(stdout, fmt.Sprintf("%s:18: %s/gc/multiarch:v1 → %s/gc/multiarch:v1@%s", file, host, host, digests["multiarch"])) {
		t.Errorf("pin --write does not list the volume's change at line 18:\n%s", stdout)
	}
	code, stdout, errs = runCLI(t, "pin", "--write", dir)
	if code != cli.ExitClean || stdout != "" || readFile(t, file) != want {
		t.Errorf("second pin --write: exit %d, stdout %q, file changed: %v\n%s", code, stdout, readFile(t, file) != want, errs)
	}
	if code, stdout, errs = runCLI(t, "pin", "--check", dir); code != cli.ExitClean {
		t.Errorf("pin --check after --write: exit %d\n%s%s", code, stdout, errs)
	}
}
