package protect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Remote writes tags through a registry's API: a tag is the manifest's
// bytes PUT by the tag (push rights on the repository); a release is
// DELETE /v2/NAME/manifests/TAG, which distribution 3.x answers 202
// keeping the manifest (delete rights; docker/distribution 2.x refuses it).
type Remote struct {
	// Host is the registry's host[:port].
	Host string
	// Options are go-containerregistry's: transport, keychain.
	Options []remote.Option
}

var (
	_ Tagger   = Remote{}
	_ Untagger = Remote{}
)

// Tag PUTs the exact bytes of repository@digest by tag, with their media type.
func (r Remote) Tag(ctx context.Context, repository, digest, tag string) error {
	d, err := name.NewDigest(r.Host + "/" + repository + "@" + digest)
	if err != nil {
		return fmt.Errorf("tagging %s@%s: %w", repository, digest, err)
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, r.Options...)
	desc, err := remote.Get(d, opts...)
	if err != nil {
		return fmt.Errorf("reading %s@%s to tag it: %w", repository, digest, err)
	}
	if desc.Digest.String() != digest {
		return fmt.Errorf("reading %s@%s to tag it: the registry served %s", repository, digest, desc.Digest)
	}
	if err := remote.Tag(d.Context().Tag(tag), desc, opts...); err != nil {
		return fmt.Errorf("writing tag %s:%s (needs push rights): %w", repository, tag, err)
	}
	return nil
}

// Untag deletes the tag by name, never by digest.
func (r Remote) Untag(ctx context.Context, repository, tag string) error {
	t, err := name.NewTag(r.Host + "/" + repository + ":" + tag)
	if err != nil {
		return fmt.Errorf("deleting tag %s:%s: %w", repository, tag, err)
	}
	if err := remote.Delete(t, append([]remote.Option{remote.WithContext(ctx)}, r.Options...)...); err != nil {
		return fmt.Errorf("deleting tag %s:%s: %w", repository, tag, err)
	}
	return nil
}

// StorageUntagger removes a tag from a registry's filesystem storage: the
// _manifests/tags/TAG folder, which is what docker/distribution 2.x's own
// tag delete removes. It needs write access to the storage.
type StorageUntagger struct {
	// Root is the docker/registry/v2 directory.
	Root string
}

var _ Untagger = StorageUntagger{}

// repoGrammar is the distribution spec's repository name grammar: it has
// no "..", so a name cannot leave the storage.
var repoGrammar = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

// Untag removes the tag's folder; the manifest and its other tags stay.
func (s StorageUntagger) Untag(_ context.Context, repository, tag string) error {
	if !repoGrammar.MatchString(repository) || !tagGrammar.MatchString(tag) {
		return fmt.Errorf("removing tag %s:%s: not a repository and tag", repository, tag)
	}
	dir := filepath.Join(s.Root, "repositories", filepath.FromSlash(repository), "_manifests", "tags", tag)
	if _, err := os.Stat(filepath.Join(dir, "current", "link")); err != nil {
		return fmt.Errorf("removing tag %s:%s from the storage: %w", repository, tag, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing tag %s:%s from the storage (needs write access): %w", repository, tag, err)
	}
	return nil
}
