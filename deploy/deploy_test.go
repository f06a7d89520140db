// Package deploy_test checks the manifests in deploy/ as the API server
// would read them: client-go's scheme, strict (an unknown or duplicate
// field is an error).
package deploy_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// decode reads every YAML document of a file with client-go's scheme.
func decode(t *testing.T, path string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		obj, _, err := dec.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
		out = append(out, obj)
	}
	return out
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestCronJobSharded: deploy/cronjob-sharded.yaml is a batch/v1 CronJob of
// an Indexed Job whose pods each scan one shard, as many shards as
// completions, as the ServiceAccount deploy/rbac.yaml defines.
func TestCronJobSharded(t *testing.T) {
	objs := decode(t, "cronjob-sharded.yaml")
	if len(objs) != 1 {
		t.Fatalf("%d objects, want 1 CronJob", len(objs))
	}
	cj, ok := objs[0].(*batchv1.CronJob)
	if !ok {
		t.Fatalf("decoded a %T, want a batch/v1 CronJob", objs[0])
	}
	job := cj.Spec.JobTemplate.Spec
	if job.CompletionMode == nil || *job.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", job.CompletionMode)
	}
	if job.Completions == nil || job.Parallelism == nil || *job.Completions != 4 || *job.Parallelism != 4 {
		t.Fatalf("completions %v, parallelism %v: want 4 and 4", job.Completions, job.Parallelism)
	}

	var sa *corev1.ServiceAccount
	for _, o := range decode(t, "rbac.yaml") {
		if s, ok := o.(*corev1.ServiceAccount); ok {
			sa = s
		}
	}
	pod := job.Template.Spec
	if sa == nil || pod.ServiceAccountName != sa.Name || cj.Namespace != sa.Namespace {
		t.Errorf("runs as %s/%s, want the ServiceAccount of rbac.yaml (%+v)", cj.Namespace, pod.ServiceAccountName, sa)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s, want Never (a pod failure policy needs it)", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	args := pod.Containers[0].Args
	want := []string{"scan", "--cluster", "-A", "--shard", fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", *job.Completions), "-o", "prom"}
	if !slices.Equal(args, want) {
		t.Errorf("args %q, want %q", args, want)
	}
	for _, e := range pod.Containers[0].Env {
		if e.Name == "JOB_COMPLETION_INDEX" || e.Name == "REGCHECK_SHARD_COUNT" {
			t.Errorf("env sets %s: the Job controller sets the index, and --shard the count", e.Name)
		}
	}
}
