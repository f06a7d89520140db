package rescue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/inventory"
)

// Holders returns the nodes that still hold digest: those whose
// status.images names it, and those running a container from it. Sorted.
func Holders(inv *inventory.Inventory, digest string) []string {
	set := map[string]bool{}
	for _, n := range inv.NodeImages[digest] {
		set[n] = true
	}
	for _, c := range inv.Containers {
		if c.RunningDigest == digest && c.Node != "" {
			set[c.Node] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Assignment is one Job: a node and the images its content store restores.
type Assignment struct {
	Node   string
	Images []string
}

// Assign picks the fewest nodes that together hold every image (greedy:
// the node holding the most images not yet covered first, ties by name).
// holders maps an image reference (repo@digest) to its holder nodes; an
// image with none is left out, and returned apart.
func Assign(holders map[string][]string) (out []Assignment, unheld []string) {
	left := map[string]bool{}
	for img, nodes := range holders {
		if len(nodes) == 0 {
			unheld = append(unheld, img)
			continue
		}
		left[img] = true
	}
	slices.Sort(unheld)
	for len(left) > 0 {
		cover := map[string][]string{}
		for img := range left {
			for _, n := range holders[img] {
				cover[n] = append(cover[n], img)
			}
		}
		best := ""
		for _, n := range slices.Sorted(maps.Keys(cover)) {
			if best == "" || len(cover[n]) > len(cover[best]) {
				best = n
			}
		}
		imgs := slices.Sorted(slices.Values(cover[best]))
		for _, img := range imgs {
			delete(left, img)
		}
		out = append(out, Assignment{Node: best, Images: imgs})
	}
	return out, unheld
}

// K3sContentStore is where k3s keeps containerd's content store on a node.
const K3sContentStore = "/var/lib/rancher/k3s/agent/containerd/" + contentDir

// JobSpec says how rescue Jobs are made.
type JobSpec struct {
	// Namespace of the Jobs, which must hold PushSecret.
	Namespace string
	// PushSecret is a kubernetes.io/dockerconfigjson Secret with push
	// credentials for the registries, mounted as the Docker config.
	PushSecret string
	// Image is the regcheck image the Job runs.
	Image string
	// ContentStore is the content store folder on the node, mounted
	// read-only (K3sContentStore for k3s, /var/lib/containerd/… else).
	ContentStore string
	// ServiceAccount the Job's pod runs as; it needs no rights, and its
	// token is not mounted.
	ServiceAccount string
	// Args are passed to rescue after the images' flags (--tag, --insecure-registry).
	Args []string
}

// Job labels.
const (
	LabelApp  = "app.kubernetes.io/name"
	LabelNode = "regcheck.io/rescue-node"
)

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// Job returns the Job that restores a's images from a.Node's content store:
// pinned to the node (spec.nodeName), the content store mounted read-only
// from the host, run once as a non-root user with no privilege, no
// capability and a read-only root filesystem, deleted an hour after it
// ends. Its name is derived from the node and images, so the same rescue
// is not created twice.
func (s JobSpec) Job(a Assignment) *batchv1.Job {
	sum := sha256.Sum256([]byte(a.Node + "\n" + strings.Join(a.Images, "\n")))
	node := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(a.Node), "-"), "-")
	if len(node) > 30 {
		node = strings.TrimRight(node[:30], "-")
	}
	name := "regcheck-rescue-" + node + "-" + hex.EncodeToString(sum[:])[:8]
	args := append([]string{"rescue", "--from-content-store", "/content", "--write"}, s.Args...)
	args = append(args, a.Images...)
	f, t := false, true
	uid := int64(65532)
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace,
			Labels: map[string]string{LabelApp: "regcheck-rescue", LabelNode: labelValue(a.Node)}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr(int32(0)),
			ActiveDeadlineSeconds:   ptr(int64(1800)),
			TTLSecondsAfterFinished: ptr(int32(3600)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelApp: "regcheck-rescue"}},
				Spec: corev1.PodSpec{
					NodeName:                     a.Node,
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           s.ServiceAccount,
					AutomountServiceAccountToken: &f,
					// nodeName bypasses the scheduler; a NoExecute taint would still evict it.
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &t, RunAsUser: &uid, RunAsGroup: &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name: "rescue", Image: s.Image, Args: args,
						Env: []corev1.EnvVar{{Name: "DOCKER_CONFIG", Value: "/push"}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "content", MountPath: "/content", ReadOnly: true},
							{Name: "push", MountPath: "/push", ReadOnly: true},
						},
						SecurityContext: &corev1.SecurityContext{Privileged: &f, AllowPrivilegeEscalation: &f,
							ReadOnlyRootFilesystem: &t, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "content", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
							Path: s.ContentStore, Type: ptr(corev1.HostPathDirectory)}}},
						{Name: "push", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: s.PushSecret,
							Items:      []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}}}}},
					},
				},
			},
		},
	}
}

// labelValue shortens a node name to a label value (63 characters).
func labelValue(s string) string {
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-_.")
}

func ptr[T any](v T) *T { return &v }

// Validate rejects a spec a Job cannot be made from.
func (s JobSpec) Validate() error {
	switch {
	case s.Namespace == "" || s.PushSecret == "":
		return fmt.Errorf("a rescue Job needs the namespace and name of a push Secret")
	case s.Image == "":
		return fmt.Errorf("a rescue Job needs the regcheck image to run")
	case !strings.HasPrefix(s.ContentStore, "/"):
		return fmt.Errorf("content store path %q on the node: want an absolute path", s.ContentStore)
	}
	return nil
}
