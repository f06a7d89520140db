package watch

import (
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// The slimmed containers and the tolerations of a pod spec are the same
// for every pod of a workload (and the tolerations for most pods of a
// cluster: the two the API server adds), yet each pod decoded from the API
// holds its own: a corev1.Container is about 700 bytes even with three of
// its fields set. The informers' transform hands out one shared slice per
// distinct value instead. The objects in an informer's cache are read-only
// (client-go's rule), and each shared slice has len == cap, so that an
// append to it copies and never writes into another pod's.
var (
	sharedContainers  = &sharedSlices[corev1.Container]{max: 4096}
	sharedTolerations = &sharedSlices[corev1.Toleration]{max: 4096}
)

// sharedSlices is a map of slices by a key that spells their value,
// emptied when it holds max: bounded whatever the cluster, and still what
// a cluster's workloads need between two emptyings.
type sharedSlices[T any] struct {
	mu  sync.Mutex
	max int
	m   map[string][]T
}

// get returns the slice held for key, or holds and returns s. An empty s is
// returned as is (nil stays nil).
func (c *sharedSlices[T]) get(key string, s []T) []T {
	if len(s) == 0 {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if held, ok := c.m[key]; ok {
		return held
	}
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[string][]T, min(c.max, 64))
	}
	s = s[:len(s):len(s)]
	c.m[key] = s
	return s
}

// shareContainers is cs slimmed to the names, images and pull policies
// inventory reads, shared with every pod spec that has the same.
func shareContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	var key strings.Builder
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: intern(c.Name), Image: intern(c.Image), ImagePullPolicy: c.ImagePullPolicy}
		for _, f := range []string{c.Name, c.Image, string(c.ImagePullPolicy)} {
			key.WriteString(strconv.Quote(f))
		}
	}
	return sharedContainers.get(key.String(), out)
}

// shareTolerations is ts, shared with every pod spec that has the same.
// Each toleration's key is its protobuf encoding, whole whatever fields a
// later API adds.
func shareTolerations(ts []corev1.Toleration) []corev1.Toleration {
	if len(ts) == 0 {
		return ts
	}
	var key strings.Builder
	for i := range ts {
		b, err := ts[i].Marshal()
		if err != nil {
			return ts // not shared: kept as decoded
		}
		key.WriteString(strconv.Itoa(len(b)))
		key.WriteByte(':')
		key.Write(b)
	}
	return sharedTolerations.get(key.String(), ts)
}
