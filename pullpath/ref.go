package pullpath

import (
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/imageref"
)

// image is a reference as the runtimes name its parts.
type image struct {
	host   string // registry as in the reference; "docker.io" for Docker Hub
	repo   string // repository path, without the host
	tag    string // empty for a digest reference
	digest string // empty for a tag reference
}

// imageOf is go-containerregistry's parse of a reference in the
// runtimes' spelling, as imageref reads it (Docker Hub as docker.io).
func imageOf(ref name.Reference) image {
	r := imageref.FromName(ref)
	return image{host: r.Domain(), repo: r.Path(), tag: r.Tag, digest: r.Digest}
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
