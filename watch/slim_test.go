package watch

import (
	"fmt"
	"runtime"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fatTemplate is a pod template as a real chart writes it: containers
// with env, probes and mounts, labels and annotations.
func fatTemplate(i int) corev1.PodTemplateSpec {
	var env []corev1.EnvVar
	for e := range 20 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", e), Value: fmt.Sprintf("value-%d-%d", i, e)})
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}}
	c := corev1.Container{Name: "app", Image: "reg.example/app:v1", Env: env, LivenessProbe: probe, ReadinessProbe: probe,
		Args: []string{"--config", "/etc/app/config.yaml", "--verbose"}, VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}}
	side := c
	side.Name, side.Image = "sidecar", "reg.example/proxy:v2"
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "app", "pod-template-hash": fmt.Sprint(i)},
			Annotations: map[string]string{"checksum/config": fmt.Sprintf("%064d", i)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c, side},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}}}
}

func ownedBy(kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}
}

// A ReplicaSet of a Deployment or Rollout and a Job of a CronJob lose
// their template (their owner's covers them); a bare ReplicaSet or Job
// keeps the images of its template.
func TestSlimDropsCoveredTemplates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		obj  any
		tmpl func(any) corev1.PodTemplateSpec
		kept bool
	}{
		{"ReplicaSet of a Deployment", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ownedBy("Deployment", "app")}, Spec: appsv1.ReplicaSetSpec{Template: fatTemplate(1)}},
			func(o any) corev1.PodTemplateSpec { return o.(*appsv1.ReplicaSet).Spec.Template }, false},
		{"ReplicaSet of a Rollout", &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ownedBy("Rollout", "ro")}, Spec: appsv1.ReplicaSetSpec{Template: fatTemplate(1)}},
			func(o any) corev1.PodTemplateSpec { return o.(*appsv1.ReplicaSet).Spec.Template }, false},
		{"bare ReplicaSet", &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: fatTemplate(1)}},
			func(o any) corev1.PodTemplateSpec { return o.(*appsv1.ReplicaSet).Spec.Template }, true},
		{"Job of a CronJob", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ownedBy("CronJob", "nightly")}, Spec: batchv1.JobSpec{Template: fatTemplate(1)}},
			func(o any) corev1.PodTemplateSpec { return o.(*batchv1.Job).Spec.Template }, false},
		{"bare Job", &batchv1.Job{Spec: batchv1.JobSpec{Template: fatTemplate(1)}},
			func(o any) corev1.PodTemplateSpec { return o.(*batchv1.Job).Spec.Template }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := slim(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			got := tc.tmpl(out)
			if n := len(got.Spec.Containers); tc.kept != (n == 2) || !tc.kept && n != 0 {
				t.Fatalf("template containers %d, kept %v", n, tc.kept)
			}
			if tc.kept && (got.Spec.Containers[1].Image != "reg.example/proxy:v2" || got.Spec.Containers[0].Env != nil) {
				t.Errorf("kept template %+v", got.Spec.Containers)
			}
		})
	}
}

// BenchmarkSlimReplicaSets is the live heap that 2,000 Deployment-owned
// ReplicaSets take in an informer's store: stripped as before (the
// template slimmed) and now (the template dropped).
func BenchmarkSlimReplicaSets(b *testing.B) {
	const n = 2000
	for _, tc := range []struct {
		name string
		slim func(*appsv1.ReplicaSet)
	}{
		{"template-slimmed", func(rs *appsv1.ReplicaSet) {
			slimMeta(&rs.ObjectMeta)
			slimTemplate(&rs.Spec.Template)
			rs.Status = appsv1.ReplicaSetStatus{}
		}},
		{"template-dropped", func(rs *appsv1.ReplicaSet) { slim(rs) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var kept []*appsv1.ReplicaSet
			for range b.N {
				kept = nil
				before := liveHeap()
				kept = make([]*appsv1.ReplicaSet, n)
				for i := range kept {
					rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: "web",
						OwnerReferences: ownedBy("Deployment", fmt.Sprintf("app-%d", i))}, Spec: appsv1.ReplicaSetSpec{Template: fatTemplate(i)}}
					tc.slim(rs)
					kept[i] = rs
				}
				b.ReportMetric(float64(liveHeap()-before)/n, "live-B/rs")
			}
			runtime.KeepAlive(kept)
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
