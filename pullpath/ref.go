package pullpath

import (
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// image is a reference as the runtimes name its parts.
type image struct {
	host   string // registry as in the reference; "docker.io" for Docker Hub
	repo   string // repository path, without the host
	tag    string // empty for a digest reference
	digest string // empty for a tag reference
}

// imageOf takes go-containerregistry's parse of a reference and names Docker
// Hub "docker.io", as the distribution parser that kubelet, containerd and
// CRI-O use does (it also turns index.docker.io into docker.io).
func imageOf(ref name.Reference) image {
	host := ref.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	img := image{host: host, repo: ref.Context().RepositoryStr()}
	switch r := ref.(type) {
	case name.Digest:
		img.digest = r.DigestStr()
		img.tag = tagOf(r.String())
	case name.Tag:
		img.tag = r.TagStr()
	default:
		img.tag = ref.Identifier()
	}
	return img
}

// tagOf finds the tag in "repo:tag@digest", if one was given.
func tagOf(s string) string {
	s, _, _ = strings.Cut(s, "@")
	last := s[strings.LastIndex(s, "/")+1:]
	if _, tag, ok := strings.Cut(last, ":"); ok {
		return tag
	}
	return ""
}

func (i image) byDigest() bool { return i.digest != "" }

// named is host/repo, as distribution's Named.Name() prints it.
func (i image) named() string { return i.host + "/" + i.repo }

// String is host/repo[:tag][@digest], as distribution's reference prints it.
func (i image) String() string {
	s := i.named()
	if i.tag != "" {
		s += ":" + i.tag
	}
	if i.digest != "" {
		s += "@" + i.digest
	}
	return s
}
