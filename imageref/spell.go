package imageref

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"github.com/google/go-containerregistry/pkg/name"
)

// The spellings of one reference, each named for the consumer that reads
// it. They differ on Docker Hub above all: the runtimes and the kubelet
// say docker.io/library/nginx, go-containerregistry and policy-controller
// index.docker.io/library/nginx, Kyverno docker.io/nginx when the manifest
// wrote "nginx".

// dockerHub is Docker Hub's registry as the runtimes spell it.
const dockerHub = "docker.io"

// Path is the repository without its registry host: "library/nginx",
// "team/app".
func (r Ref) Path() string {
	_, p, _ := strings.Cut(r.Repo, "/")
	return p
}

// KubeletKey is the image the kubelet hands a credential provider plugin
// and matches the plugin's matchImages against: the repository, without
// tag or digest, with Docker Hub as docker.io ("docker.io/library/nginx",
// "registry.example.com/team/app").
func (r Ref) KubeletKey() string { return r.Repo }

// Running is the reference a node would pull a running digest by: r's
// repository at digest ("docker.io/library/nginx@sha256:…"). The
// runtime's imageID may name another repository the same bits were first
// pulled from (an image promoted from staging to prod), which says
// nothing about this one. For the zero Ref it is "@" + digest.
func (r Ref) Running(digest string) string { return r.Repo + "@" + digest }

// RunningOf is Parse(image).Running(digest), for a caller holding the
// image string as a pod spec wrote it: the reference a node would pull
// the running digest by. An image that does not parse gives "@"+digest,
// which no registry serves and no lookup matches.
func RunningOf(image, digest string) string {
	r, _ := Parse(image)
	return r.Running(digest)
}

// Registry spells a registry host as the runtimes do:
// go-containerregistry's Docker Hub, "index.docker.io", is "docker.io";
// any other host is as given.
func Registry(host string) string {
	if host == name.DefaultRegistry {
		return dockerHub
	}
	return host
}

// FromRepository reads a repository go-containerregistry has parsed as
// the runtimes spell it: Docker Hub as docker.io, the path as
// go-containerregistry gives it (library/ included).
func FromRepository(repo name.Repository) Ref {
	return Ref{Repo: Registry(repo.RegistryStr()) + "/" + repo.RepositoryStr()}
}

// FromName reads a reference go-containerregistry has already parsed (a
// name.Tag or name.Digest, as a keychain or a mirror lookup is handed
// it), without parsing it again, as the runtimes spell it: Docker Hub as
// docker.io. A tag reference keeps go-containerregistry's tag ("latest"
// when none was written, where Parse leaves Tag empty); a digest
// reference keeps the tag it was written with, if any.
func FromName(ref name.Reference) Ref {
	r := FromRepository(ref.Context())
	switch n := ref.(type) {
	case name.Digest:
		r.Digest = n.DigestStr()
		r.Tag = tagOf(n.String())
	case name.Tag:
		r.Tag = n.TagStr()
	default:
		r.Tag = ref.Identifier()
	}
	return r
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

// PolicyControllerName is the name sigstore policy-controller matches a
// ClusterImagePolicy's images[].glob against: go-containerregistry's
// ref.Name() of the image (policy-controller pkg/webhook/validator.go,
// validateContainerImage: name.ParseReference, then
// GetMatchingPolicies(ref.Name(), …)). Docker Hub is
// index.docker.io/library/…; ":latest" is added when no tag was written;
// a digest reference is repo@digest, its tag dropped. When
// go-containerregistry refuses the repository, it is Normalized.
func (r Ref) PolicyControllerName() string {
	repo, ok := r.ggcrRepo()
	switch {
	case !ok:
		return r.Normalized()
	case r.Digest != "":
		return repo + "@" + r.Digest
	}
	return repo + ":" + r.EffectiveTag()
}

// ggcrRepo is go-containerregistry's full name of r's repository
// (ref.Context().Name(): "index.docker.io/library/nginx"), and whether it
// accepts the repository.
func (r Ref) ggcrRepo() (string, bool) {
	repo, err := name.NewRepository(r.Repo, name.WeakValidation)
	if err != nil {
		return "", false
	}
	return repo.Name(), true
}

// KyvernoName is the name Kyverno matches a verifyImages rule's
// imageReferences against, from the image as the manifest wrote it
// (kyverno pkg/utils/image/infos.go, GetImageInfo and ImageInfo.String;
// matched by pkg/engine/utils/image.go, ImageMatches): docker.io is put
// before a first element that is not a host, and nothing else is
// normalised, so "nginx" is docker.io/nginx:latest, "library/nginx"
// docker.io/library/nginx:latest and "index.docker.io/library/nginx:1"
// stays as written; ":latest" is added when neither tag nor digest was
// written, and a digest reference is repo@digest, its tag dropped. This
// is Kyverno's default configuration (defaultRegistry docker.io,
// enableDefaultRegistryMutation true).
func KyvernoName(written string) (string, error) {
	s := strings.TrimSpace(written)
	if i := strings.IndexRune(s, '/'); i == -1 || !strings.ContainsAny(s[:i], ".:") && s[:i] != "localhost" && strings.ToLower(s[:i]) == s[:i] {
		s = dockerHub + "/" + s
	}
	ref, err := reference.Parse(s)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", written, err)
	}
	named, ok := ref.(reference.Named)
	if !ok {
		return "", fmt.Errorf("invalid image reference %q: no repository", written)
	}
	if d, ok := ref.(reference.Digested); ok {
		return named.Name() + "@" + d.Digest().String(), nil
	}
	tag := "latest"
	if t, ok := ref.(reference.Tagged); ok {
		tag = t.Tag()
	}
	return named.Name() + ":" + tag, nil
}

// KyvernoNames are the names regcheck matches Kyverno imageReferences
// against today, from the normalised reference, which no longer says how
// the manifest wrote it: registry/path:tag (:latest when none), or
// registry/path@digest, and for an official image both
// docker.io/library/nginx and docker.io/nginx. Kyverno itself tries one
// name only, KyvernoName of the image as written (kept until admission
// carries the written image, issue 28).
func (r Ref) KyvernoNames() []string {
	repos := []string{r.Repo}
	if rest, ok := strings.CutPrefix(r.Repo, "docker.io/library/"); ok {
		repos = append(repos, "docker.io/"+rest)
	}
	var out []string
	for _, repo := range repos {
		switch {
		case r.Digest != "":
			out = append(out, repo+"@"+r.Digest)
		case r.Tag != "":
			out = append(out, repo+":"+r.Tag)
		default:
			out = append(out, repo+":latest")
		}
	}
	return out
}
