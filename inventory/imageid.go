package inventory

import "strings"

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
// The repository is normalized with [NormalizeRepo], so "nginx" and
// "docker.io/library/nginx" compare equal.
func ParseImageID(id string) (repo, digest string, isRepoDigest bool) {
	repo, digest, kind := parseImageID(id)
	return repo, digest, kind == ImageIDRepoDigest
}

func parseImageID(id string) (repo, digest string, kind ImageIDKind) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", "", ImageIDNone
	}
	if i := strings.Index(id, "://"); i >= 0 {
		id = id[i+3:]
	}
	at := strings.LastIndex(id, "@")
	if at < 0 {
		if isDigest(id) {
			return "", "", ImageIDConfig
		}
		return "", "", ImageIDUnknown
	}
	name, dgst := id[:at], id[at+1:]
	if name == "" || !isDigest(dgst) {
		return "", "", ImageIDUnknown
	}
	// A runtime may report "repo:tag@sha256:…"; the tag is not part of the repository.
	name, _ = splitTag(name)
	return NormalizeRepo(name), dgst, ImageIDRepoDigest
}

// isDigest reports whether s looks like "algorithm:hex" with a known algorithm.
func isDigest(s string) bool {
	alg, hex, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	var n int
	switch alg {
	case "sha256":
		n = 64
	case "sha384":
		n = 96
	case "sha512":
		n = 128
	default:
		return false
	}
	if len(hex) != n {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// splitTag splits "repo:tag" into repo and tag; a colon before the last "/" is a registry port.
func splitTag(name string) (repo, tag string) {
	i := strings.LastIndex(name, ":")
	if i < 0 || strings.Contains(name[i+1:], "/") {
		return name, ""
	}
	return name[:i], name[i+1:]
}

// ImageRef is an image reference from a pod spec, split into its parts.
type ImageRef struct {
	Repo   string // normalized with NormalizeRepo: "docker.io/library/nginx"
	Tag    string // as written; empty when none was given
	Digest string // "sha256:…" when the reference pins one
}

// ParseImage splits an image reference as written in a pod spec
// ("nginx", "nginx:1.27", "ghcr.io/o/r:v1@sha256:…"). It does not validate.
func ParseImage(image string) ImageRef {
	image = strings.TrimSpace(image)
	var ref ImageRef
	if at := strings.LastIndex(image, "@"); at >= 0 {
		ref.Digest = image[at+1:]
		image = image[:at]
	}
	name, tag := splitTag(image)
	ref.Repo, ref.Tag = NormalizeRepo(name), tag
	return ref
}

// NormalizeRepo expands a repository name the way Docker does:
// "nginx" → "docker.io/library/nginx", "coturn/coturn" → "docker.io/coturn/coturn",
// "index.docker.io/x/y" → "docker.io/x/y". Other registries are left alone.
func NormalizeRepo(name string) string {
	if name == "" {
		return ""
	}
	first, rest, ok := strings.Cut(name, "/")
	if !ok || !(strings.ContainsAny(first, ".:") || first == "localhost") {
		// No registry host: Docker Hub.
		if !ok {
			return "docker.io/library/" + name
		}
		return "docker.io/" + name
	}
	if first == "index.docker.io" || first == "registry-1.docker.io" {
		first = "docker.io"
	}
	if first == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return first + "/" + rest
}

// DefaultPullPolicy is the pull policy Kubernetes sets when a container has none:
// Always when the tag is "latest" or there is neither tag nor digest, IfNotPresent otherwise
// (so "repo@sha256:…" defaults to IfNotPresent, "repo:latest@sha256:…" to Always).
func DefaultPullPolicy(image string) string {
	ref := ParseImage(image)
	if ref.Tag == "latest" || ref.Tag == "" && ref.Digest == "" {
		return "Always"
	}
	return "IfNotPresent"
}
