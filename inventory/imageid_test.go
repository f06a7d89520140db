package inventory

import (
	"testing"

	"github.com/regcheck/regcheck/imageref"
)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

func TestParseImageID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, id     string
		repo, digest string
		kind         ImageIDKind
	}{
		{name: "empty", id: "", kind: ImageIDNone},
		{name: "docker-pullable", id: "docker-pullable://coturn/coturn@" + dA, repo: "docker.io/coturn/coturn", digest: dA, kind: ImageIDRepoDigest},
		{name: "docker-pullable official", id: "docker-pullable://nginx@" + dA, repo: "docker.io/library/nginx", digest: dA, kind: ImageIDRepoDigest},
		{name: "containerd", id: "docker.io/library/nginx@" + dB, repo: "docker.io/library/nginx", digest: dB, kind: ImageIDRepoDigest},
		{name: "registry with port", id: "localhost:5000/team/app@" + dB, repo: "localhost:5000/team/app", digest: dB, kind: ImageIDRepoDigest},
		{name: "tag and digest", id: "ghcr.io/o/r:v1@" + dC, repo: "ghcr.io/o/r", digest: dC, kind: ImageIDRepoDigest},
		{name: "docker image id", id: "docker://" + dA, kind: ImageIDConfig},
		{name: "bare image id", id: dA, kind: ImageIDConfig},
		{name: "short digest", id: "nginx@sha256:abc", kind: ImageIDUnknown},
		{name: "sha512", id: "ghcr.io/o/r@sha512:" + dA[7:] + dA[7:], repo: "ghcr.io/o/r", digest: "sha512:" + dA[7:] + dA[7:], kind: ImageIDRepoDigest},
		{name: "bare sha512 image id", id: "sha512:" + dA[7:] + dA[7:], kind: ImageIDConfig},
		{name: "garbage", id: "something", kind: ImageIDUnknown},
		{name: "tag alone", id: "docker.io/library/nginx:1.27", kind: ImageIDUnknown},
		{name: "no repository", id: "@" + dA, kind: ImageIDUnknown},
		{name: "uppercase repository", id: "docker-pullable://Nginx@" + dA, kind: ImageIDUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			repo, digest, kind := parseImageID(tt.id)
			if repo != tt.repo || digest != tt.digest || kind != tt.kind {
				t.Errorf("parseImageID(%q) = %q, %q, %q; want %q, %q, %q", tt.id, repo, digest, kind, tt.repo, tt.digest, tt.kind)
			}
			r2, d2, ok := ParseImageID(tt.id)
			if r2 != tt.repo || d2 != tt.digest || ok != (tt.kind == ImageIDRepoDigest) {
				t.Errorf("ParseImageID(%q) = %q, %q, %v", tt.id, r2, d2, ok)
			}
		})
	}
}

// TestParseImageAndPullPolicy: the ImageRef and the default pull policy of
// a container's image.
func TestParseImageAndPullPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		image  string
		ref    ImageRef
		policy string
	}{
		{"nginx", ImageRef{Repo: "docker.io/library/nginx"}, "Always"},
		{"nginx:latest", ImageRef{Repo: "docker.io/library/nginx", Tag: "latest"}, "Always"},
		{"coturn/coturn:4.18.0", ImageRef{Repo: "docker.io/coturn/coturn", Tag: "4.18.0"}, "IfNotPresent"},
		{"nginx@" + dA, ImageRef{Repo: "docker.io/library/nginx", Digest: dA}, "IfNotPresent"},
		{"nginx:latest@" + dA, ImageRef{Repo: "docker.io/library/nginx", Tag: "latest", Digest: dA}, "Always"},
		{"localhost:5000/app", ImageRef{Repo: "localhost:5000/app"}, "Always"},
		{"localhost:5000/app:1", ImageRef{Repo: "localhost:5000/app", Tag: "1"}, "IfNotPresent"},
		{"index.docker.io/busybox:1", ImageRef{Repo: "docker.io/library/busybox", Tag: "1"}, "IfNotPresent"},
		{"registry.k8s.io/pause:3.10", ImageRef{Repo: "registry.k8s.io/pause", Tag: "3.10"}, "IfNotPresent"},
		// Kubernetes defaults an image it cannot parse to IfNotPresent.
		{"Nginx", ImageRef{}, "IfNotPresent"},
		{"nginx@sha256:abc", ImageRef{}, "IfNotPresent"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			t.Parallel()
			if got, _ := imageref.Parse(tt.image); got != tt.ref {
				t.Errorf("imageref.Parse(%q) = %+v, want %+v", tt.image, got, tt.ref)
			}
			if got := DefaultPullPolicy(tt.image); got != tt.policy {
				t.Errorf("DefaultPullPolicy(%q) = %q, want %q", tt.image, got, tt.policy)
			}
		})
	}
}
