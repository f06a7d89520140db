package render

import (
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// WithRemote lets kustomize fetch the remote bases and resources the
// tree's kustomizations name (git repositories, HTTP files), with its
// own loader: git and HTTP, as kustomize build does. The default fetches
// nothing: each remote reference is left out with a notice, and the rest
// of its kustomization rendered.
func WithRemote() Option {
	return func(o *options) { o.remote = true }
}

// remoteFS is a memFS that also reads the folders kustomize clones git
// repositories into (kyaml's NewTmpConfirmedDir, kustomize-* in the
// system's temporary folder) from the disk: what a remote base holds.
type remoteFS struct {
	*memFS
	disk   filesys.FileSystem
	prefix string
}

var _ filesys.FileSystem = remoteFS{}

// newRemoteFS returns m reading kustomize's clones from the disk.
func newRemoteFS(m *memFS) filesys.FileSystem {
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		tmp = os.TempDir()
	}
	return remoteFS{memFS: m, disk: filesys.MakeFsOnDisk(), prefix: filepath.Join(tmp, "kustomize-")}
}

// cloned reports whether p is in a folder kustomize cloned into.
func (r remoteFS) cloned(p string) bool { return strings.HasPrefix(filepath.Clean(p), r.prefix) }

// RemoveAll removes a clone from the disk, or p from memory.
func (r remoteFS) RemoveAll(p string) error {
	if r.cloned(p) {
		return r.disk.RemoveAll(p)
	}
	return r.memFS.RemoveAll(p)
}

// IsDir reports whether p is a folder.
func (r remoteFS) IsDir(p string) bool {
	if r.cloned(p) {
		return r.disk.IsDir(p)
	}
	return r.memFS.IsDir(p)
}

// Exists reports whether p exists.
func (r remoteFS) Exists(p string) bool {
	if r.cloned(p) {
		return r.disk.Exists(p)
	}
	return r.memFS.Exists(p)
}

// ReadDir lists the names in folder p.
func (r remoteFS) ReadDir(p string) ([]string, error) {
	if r.cloned(p) {
		return r.disk.ReadDir(p)
	}
	return r.memFS.ReadDir(p)
}

// CleanedAbs splits p into its folder and name (see memFS.CleanedAbs).
func (r remoteFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if r.cloned(p) {
		return r.disk.CleanedAbs(p)
	}
	return r.memFS.CleanedAbs(p)
}

// Glob returns the files that match pattern.
func (r remoteFS) Glob(pattern string) ([]string, error) {
	if r.cloned(pattern) {
		return r.disk.Glob(pattern)
	}
	return r.memFS.Glob(pattern)
}

// ReadFile returns the contents of the file p.
func (r remoteFS) ReadFile(p string) ([]byte, error) {
	if r.cloned(p) {
		return r.disk.ReadFile(p)
	}
	return r.memFS.ReadFile(p)
}

// Walk walks p (see memFS.Walk).
func (r remoteFS) Walk(p string, fn filepath.WalkFunc) error {
	if r.cloned(p) {
		return r.disk.Walk(p, fn)
	}
	return r.memFS.Walk(p, fn)
}
