package inventory

import (
	"strings"
	"unique"

	"github.com/opencontainers/go-digest"
	"github.com/regcheck/regcheck/imageref"
)

// ImageIDKind says what a container status's imageID holds.
type ImageIDKind string

const (
	// ImageIDNone: the status has no imageID (no status yet, or the image was never pulled).
	ImageIDNone ImageIDKind = ""
	// ImageIDRepoDigest: "repo@sha256:…", the manifest digest a registry serves; it can be pulled by digest.
	ImageIDRepoDigest ImageIDKind = "repo-digest"
	// ImageIDConfig: a bare "sha256:…" (docker://sha256:… included), the local image/config ID.
	// It is not a registry digest and cannot be pulled.
	ImageIDConfig ImageIDKind = "image-id"
	// ImageIDUnknown: anything else.
	ImageIDUnknown ImageIDKind = "unknown"
)

// ParseImageID normalizes a container status imageID as container runtimes report it:
//
//	docker-pullable://repo@sha256:…  → repo, sha256:…, true
//	repo@sha256:…                    → repo, sha256:…, true
//	docker://sha256:…, sha256:…      → "", "", false (an image ID, not a repo digest)
//
// The repository is normalized by [imageref.Parse], so "nginx" and
// "docker.io/library/nginx" compare equal.
func ParseImageID(id string) (repo, digest string, isRepoDigest bool) {
	repo, digest, kind := parseImageID(id)
	return repo, digest, kind == ImageIDRepoDigest
}

func parseImageID(id string) (repo, dgst string, kind ImageIDKind) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", "", ImageIDNone
	}
	if _, rest, ok := strings.Cut(id, "://"); ok {
		id = rest
	}
	if _, err := digest.Parse(id); err == nil {
		return "", "", ImageIDConfig
	}
	// A runtime may report "repo:tag@sha256:…"; the tag is not part of the repository.
	ref, err := imageref.Parse(id)
	if err != nil || !ref.Pinned() {
		return "", "", ImageIDUnknown
	}
	// Interned: every pod of an image reports the same imageID, and a
	// watcher keeps the digest of each container it saw run.
	return unique.Make(ref.Repo).Value(), unique.Make(ref.Digest).Value(), ImageIDRepoDigest
}

// ImageRef is a pod spec's image reference split into its parts by
// [imageref.Parse]: the zero ImageRef when the image does not parse (the
// API server accepts any string; the kubelet reports InvalidImageName).
type ImageRef = imageref.Ref

// DefaultPullPolicy is the pull policy Kubernetes sets when a container has none:
// Always when the tag is "latest" or there is neither tag nor digest, IfNotPresent otherwise
// (so "repo@sha256:…" defaults to IfNotPresent, "repo:latest@sha256:…" to Always),
// and IfNotPresent for an image that does not parse.
func DefaultPullPolicy(image string) string {
	ref, _ := imageref.Parse(image)
	return defaultPullPolicy(ref)
}

func defaultPullPolicy(ref ImageRef) string {
	if ref.Repo != "" && ref.EffectiveTag() == "latest" {
		return "Always"
	}
	return "IfNotPresent"
}
