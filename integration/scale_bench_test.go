//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/kubeapi"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// Sizes of the scale benchmarks (issue 11, point 7).
const (
	scaleFakePods   = 10000
	scaleRealPods   = 1000
	scaleScanImages = 5000
	scaleScanRepos  = 1500
	scaleRSSBudget  = 200 << 20 // bytes of peak RSS one scan of scaleScanImages may take
)

// scaleFigure is one printed line of BenchmarkScale's table.
type scaleFigure struct {
	what, size, took, note string
}

// BenchmarkScale measures the rest of regcheck at size: scan --cluster's
// inventory of 10,000 pods (a fake clientset; inventory.List's time and,
// with -benchmem, allocations), of 1,000 pods in a real kube-apiserver,
// record's file history at both sizes, and one scan of 5,000 images in
// distribution 3.1.2 by the built binary, whose peak RSS (ru_maxrss from
// wait4) must stay under 200 MiB. It prints a table; times are never
// asserted. Run it with -benchtime 1x, as make bench does.
func BenchmarkScale(b *testing.B) {
	var figs []scaleFigure
	add := func(f scaleFigure) { figs = append(figs, f) }
	b.Run("inventory-fake-10000-pods", func(b *testing.B) { benchInventoryFake(b, add) })
	b.Run("apiserver-1000-pods", func(b *testing.B) { benchAPIServer(b, add) })
	b.Run("scan-5000-images", func(b *testing.B) { benchScan5000(b, add) })
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "what\tsize\ttime\tnotes")
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.what, f.size, f.took, f.note)
	}
	tw.Flush()
}

// clusterObjects are nss namespaces of deploys Deployments each, each with
// a ReplicaSet of pods pods running one container, spread over nodes
// nodes that hold the images: what a cluster's inventory reads.
func clusterObjects(nss, deploys, pods, nodes int) (workloads []runtime.Object, podList []*corev1.Pod, nodeList []*corev1.Node) {
	for n := range nodes {
		nodeList = append(nodeList, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%03d", n)}})
	}
	for ns := range nss {
		namespace := fmt.Sprintf("team-%02d", ns)
		for d := range deploys {
			app := fmt.Sprintf("app-%03d", d)
			image := fmt.Sprintf("registry.example.com/%s/%s:v1", namespace, app)
			digest := fmt.Sprintf("sha256:%064x", ns*deploys+d+1)
			labels := map[string]string{"app": app}
			tmpl := corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			}
			rsName := app + "-6d5f8c7b9"
			workloads = append(workloads,
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: app}, Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}},
				&appsv1.ReplicaSet{
					ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: rsName, OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: app, UID: "d", Controller: ptrTo(true)}}},
					Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
				})
			for p := range pods {
				node := nodeList[(ns*deploys*pods+d*pods+p)%nodes]
				podList = append(podList, &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-%05d", rsName, p), Labels: labels,
						OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: "r", Controller: ptrTo(true)}}},
					Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "app", Image: image}}},
					Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
						Name: "app", Image: image, ImageID: "registry.example.com/" + namespace + "/" + app + "@" + digest, Ready: true, Started: ptrTo(true),
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))}},
					}}},
				})
				if img := []string{"registry.example.com/" + namespace + "/" + app + "@" + digest}; len(node.Status.Images) < 200 {
					node.Status.Images = append(node.Status.Images, corev1.ContainerImage{Names: img, SizeBytes: 1 << 20})
				}
			}
		}
	}
	return workloads, podList, nodeList
}

func ptrTo[T any](v T) *T { return &v }

// benchInventoryFake lists 10,000 pods (100 namespaces of 10 Deployments
// of 10 pods) from a fake clientset, then records them to a file twice.
func benchInventoryFake(b *testing.B, add func(scaleFigure)) {
	ctx := context.Background()
	wl, pods, nodes := clusterObjects(100, 10, scaleFakePods/1000, 100)
	objs := wl
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	cs := fake.NewClientset(objs...)
	b.ReportAllocs()
	inv, took := timeList(ctx, b, cs, scaleFakePods)
	add(scaleFigure{"inventory.List, fake clientset", thousands(scaleFakePods) + " pods", took.Round(time.Millisecond).String(), allocsOf(func() { inventory.List(ctx, cs, "") })})
	add(recordFile(b, inv, "record to a file, from that inventory"))
}

// timeList times inventory.List over every namespace, b.N times, and
// checks it found want containers.
func timeList(ctx context.Context, b *testing.B, cs kubernetes.Interface, want int) (*inventory.Inventory, time.Duration) {
	b.Helper()
	b.ResetTimer()
	var inv *inventory.Inventory
	start := time.Now()
	for range b.N {
		var err error
		if inv, err = inventory.List(ctx, cs, ""); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	if len(inv.Containers) != want {
		b.Fatalf("listed %d containers, want %d", len(inv.Containers), want)
	}
	b.ReportMetric(float64(len(inv.Containers)), "containers/op")
	return inv, took
}

// allocsOf measures one call's allocations (the fake clientset's copies
// of every object included).
func allocsOf(f func()) string {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	f()
	goruntime.ReadMemStats(&after)
	return fmt.Sprintf("%s allocations, %.0f MB allocated per list (the fake's object copies included)",
		thousands(int(after.Mallocs-before.Mallocs)), float64(after.TotalAlloc-before.TotalAlloc)/1e6)
}

// recordFile saves a snapshot of inv to a new history file, then a
// second one over it (the merge a nightly run does), and says how long
// each took and how large the file is.
func recordFile(b *testing.B, inv *inventory.Inventory, what string) scaleFigure {
	ctx := context.Background()
	st := &record.File{Path: filepath.Join(b.TempDir(), "history.json")}
	var took []string
	for i := range 2 {
		start := time.Now()
		if _, err := record.Save(ctx, st, record.FromInventory("bench", time.Date(2026, 12, 1, i, 0, 0, 0, time.UTC), inv)); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start).Round(time.Millisecond).String())
	}
	fi, err := os.Stat(st.Path)
	if err != nil {
		b.Fatal(err)
	}
	return scaleFigure{what, thousands(len(inv.Containers)) + " containers", strings.Join(took, ", then "), fmt.Sprintf("first snapshot, then a second merged; history %.1f MB", float64(fi.Size())/1e6)}
}

// benchAPIServer creates 1,000 pods in a real kube-apiserver (10
// namespaces of 10 Deployments of 10 pods, their status written through
// pods/status as a kubelet does; no scheduler, so nodeName is set at
// creation), then times inventory.List and regcheck record against it.
func benchAPIServer(b *testing.B, add func(scaleFigure)) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	kc, err := kubeapi.Start(ctx, b.TempDir(), kubeapi.DefaultBinDir())
	if err != nil {
		b.Fatalf("starting kube-apiserver: %v", err)
	}
	defer kc.Stop()
	started := time.Since(start)
	cfg := rest.CopyConfig(kc.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	if err := createCluster(ctx, cs, 10, 10, scaleRealPods/100, 10); err != nil {
		b.Fatal(err)
	}
	created := time.Since(start)

	_, took := timeList(ctx, b, cs, scaleRealPods)
	add(scaleFigure{"inventory.List, real kube-apiserver", thousands(scaleRealPods) + " pods", took.Round(time.Millisecond).String(),
		fmt.Sprintf("apiserver ready in %v; pods created with their status in %v", started.Round(100*time.Millisecond), created.Round(100*time.Millisecond))})

	// regcheck record, the command, twice over one history file.
	hist := filepath.Join(b.TempDir(), "history.json")
	var times []string
	for range 2 {
		start := time.Now()
		var out, errb strings.Builder
		code := cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, []string{"record", "-A", "--kubeconfig", kc.Kubeconfig, "--out", hist, "-o", "json"})
		if code != 0 {
			b.Fatalf("regcheck record: exit %d\n%s", code, errb.String())
		}
		times = append(times, time.Since(start).Round(time.Millisecond).String())
	}
	fi, err := os.Stat(hist)
	if err != nil {
		b.Fatal(err)
	}
	add(scaleFigure{"regcheck record -A --out FILE, real kube-apiserver", thousands(scaleRealPods) + " pods", strings.Join(times, ", then "),
		fmt.Sprintf("the command, in process: first snapshot, then a second; history %.1f MB", float64(fi.Size())/1e6)})
}

// createCluster creates clusterObjects' objects in a real API server, 16
// at a time, and writes each pod's status through pods/status.
func createCluster(ctx context.Context, cs kubernetes.Interface, nss, deploys, pods, nodes int) error {
	wl, podList, nodeList := clusterObjects(nss, deploys, pods, nodes)
	for ns := range nss {
		name := fmt.Sprintf("team-%02d", ns)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		// No controller-manager makes the default service account, which
		// admission wants for a pod.
		if _, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, n := range nodeList {
		g.Go(func() error {
			st := n.Status
			got, err := cs.CoreV1().Nodes().Create(gctx, n, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			got.Status = st
			_, err = cs.CoreV1().Nodes().UpdateStatus(gctx, got, metav1.UpdateOptions{})
			return err
		})
	}
	for _, o := range wl {
		g.Go(func() error {
			var err error
			switch o := o.(type) {
			case *appsv1.Deployment:
				_, err = cs.AppsV1().Deployments(o.Namespace).Create(gctx, o, metav1.CreateOptions{})
			case *appsv1.ReplicaSet:
				_, err = cs.AppsV1().ReplicaSets(o.Namespace).Create(gctx, o, metav1.CreateOptions{})
			}
			return err
		})
	}
	for _, p := range podList {
		g.Go(func() error {
			st := p.Status
			got, err := cs.CoreV1().Pods(p.Namespace).Create(gctx, p, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			got.Status = st
			_, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(gctx, got, metav1.UpdateOptions{})
			return err
		})
	}
	return g.Wait()
}

// benchScan5000 pushes 5,000 intact images (point 5's generator, 1,500
// repositories) and scans them with the built regcheck, cold, measuring
// its peak RSS.
func benchScan5000(b *testing.B, add func(scaleFigure)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := buildRegcheck(b)
	r := startEmpty(b, registry.V3)
	st, refs, list := pushState(ctx, b, r, stateConfig{Images: scaleScanImages, Repos: scaleScanRepos, Seed: 5})
	b.ResetTimer()
	var (
		p   procRun
		err error
	)
	for range b.N {
		if p, err = runProc(ctx, nil, bin, "scan", "--no-cache", "--images-from", list, "-o", "json"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var doc report.Document
	if err := json.Unmarshal(p.stdout, &doc); err != nil || p.code != 0 {
		b.Fatalf("scan: exit %d, %v\n%s", p.code, err, p.stderr)
	}
	if n := doc.Summary.Verdicts[types.OK]; n != len(refs) {
		b.Errorf("%d of %d images ok: %v", n, len(refs), doc.Summary.Verdicts)
	}
	b.ReportMetric(float64(p.rss)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(sum(doc.Summary.Requests)), "requests/op")
	add(scaleFigure{"regcheck scan --no-cache, distribution 3.1.2", thousands(len(refs)) + " images", p.wall.Round(10 * time.Millisecond).String(),
		fmt.Sprintf("peak RSS %s (GNU time's %%M; budget 200 MiB); %s requests; %d repositories pushed in %v", rssText(p.rss), thousands(sum(doc.Summary.Requests)), scaleScanRepos, st.Pushed.Round(time.Second))})
	if p.rss < 0 {
		b.Logf("no %s: peak RSS not measured (Debian's package time installs it)", timeBinary)
	}
	if p.rss > scaleRSSBudget {
		b.Errorf("peak RSS %d MiB over the %d MiB budget", p.rss>>20, scaleRSSBudget>>20)
	}
}
