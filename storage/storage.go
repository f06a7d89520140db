package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Storage is a read-only snapshot of a distribution registry's filesystem
// storage (the docker/registry/v2 tree): every repository's tags, revision
// links and layer links, and which blobs have data. Open reads the links;
// manifests are read from blob data when first needed. A Storage is never
// written to: Apply returns a changed copy.
type Storage struct {
	// Root is the docker/registry/v2 directory.
	Root string
	// Repositories by name, and their names in the order the registry's
	// own walk meets them (see repoOrder).
	Repositories map[string]*Repository
	// dirs is every repository-level directory in depth-first sorted order,
	// with which of _layers and _manifests it holds (see Dirs).
	dirs []RepoDir
	// Blobs holds the digests whose blobs/<alg>/<xx>/<hex>/data exists, in
	// walk order in BlobOrder.
	Blobs     map[string]bool
	BlobOrder []string

	manifests *manifestCache // parsed blob data, shared between copies
}

// RepoDir is one repository-level directory of the tree: its name and
// which of _layers and _manifests it holds.
type RepoDir struct {
	Name                string
	Layers, ManifestDir bool
}

// Dirs is every repository-level directory in the depth-first sorted order
// the registry's storage driver walks them; the two GC releases enumerate
// repositories differently from it.
func (s *Storage) Dirs() []RepoDir { return s.dirs }

// Repository is one repository's links.
type Repository struct {
	Name string
	// HasManifests, HasTags, HasRevisions and HasLayers say which of
	// _manifests, _manifests/tags, _manifests/revisions and _layers exist.
	HasManifests, HasTags, HasRevisions, HasLayers bool
	// Tags by name.
	Tags map[string]*Tag
	// TagOrder is the tags in directory order.
	TagOrder []string
	// Revisions maps a revision directory's digest to its link's content;
	// RevisionOrder lists the link files' digests in walk order.
	Revisions     map[string]string
	RevisionOrder []Link
	// Layers maps a _layers directory's digest to its link's content.
	Layers     map[string]string
	LayerOrder []Link
}

// Link is one link file: the digest its directory names and the digest it holds.
type Link struct {
	Dir    string // digest named by the path
	Target string // digest in the file; "" when unreadable
}

// Tag is _manifests/tags/<name>.
type Tag struct {
	Name string
	// Current is the digest in current/link, "" when there is none.
	Current string
	// Index is the set of digests with an index/<alg>/<hex> directory.
	Index map[string]bool
}

// ErrNotStorage means a path holds no distribution storage.
var ErrNotStorage = errors.New("not a distribution filesystem storage")

// Open reads the storage under path: the registry's rootdirectory (holding
// docker/registry/v2) or the v2 directory itself. It only reads.
func Open(path string) (*Storage, error) {
	root := path
	for _, cand := range []string{filepath.Join(path, "docker", "registry", "v2"), path} {
		if isDir(filepath.Join(cand, "repositories")) || isDir(filepath.Join(cand, "blobs")) {
			root = cand
			break
		}
		root = ""
	}
	if root == "" {
		return nil, fmt.Errorf("%s: %w (want the registry's rootdirectory, holding docker/registry/v2)", path, ErrNotStorage)
	}
	s := &Storage{Root: root, Repositories: map[string]*Repository{}, Blobs: map[string]bool{}, manifests: &manifestCache{m: map[string]*Stored{}}}
	if err := s.readRepositories(); err != nil {
		return nil, err
	}
	if err := s.readBlobs(); err != nil {
		return nil, err
	}
	return s, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// readRepositories walks repositories/ depth first in sorted order, as the
// registry's storage driver walk does, recording every directory that holds
// _layers or _manifests. Directories starting with "_" are not entered.
func (s *Storage) readRepositories() error {
	base := filepath.Join(s.Root, "repositories")
	var walk func(dir, name string) error
	walk = func(dir, name string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("reading %s: %w", dir, err)
		}
		for _, e := range entries { // os.ReadDir sorts by name
			if !e.IsDir() {
				continue
			}
			child := filepath.Join(dir, e.Name())
			switch {
			case e.Name() == "_layers" || e.Name() == "_manifests":
				s.dirs = append(s.dirs, RepoDir{Name: name, Layers: e.Name() == "_layers", ManifestDir: e.Name() == "_manifests"})
				if _, ok := s.Repositories[name]; !ok {
					r, err := readRepository(dir, name)
					if err != nil {
						return err
					}
					s.Repositories[name] = r
				}
			case strings.HasPrefix(e.Name(), "_"):
			default:
				n := e.Name()
				if name != "" {
					n = name + "/" + n
				}
				if err := walk(child, n); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if !isDir(base) {
		return nil
	}
	return walk(base, "")
}

func readRepository(dir, name string) (*Repository, error) {
	r := &Repository{Name: name, Tags: map[string]*Tag{}, Revisions: map[string]string{}, Layers: map[string]string{}}
	r.HasManifests = isDir(filepath.Join(dir, "_manifests"))
	r.HasLayers = isDir(filepath.Join(dir, "_layers"))
	tags := filepath.Join(dir, "_manifests", "tags")
	r.HasTags = isDir(tags)
	if r.HasTags {
		entries, err := os.ReadDir(tags)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", tags, err)
		}
		for _, e := range entries {
			t := &Tag{Name: e.Name(), Index: map[string]bool{}}
			t.Current, _ = readLink(filepath.Join(tags, e.Name(), "current", "link"))
			idx, err := linkDirs(filepath.Join(tags, e.Name(), "index"))
			if err != nil {
				return nil, err
			}
			for _, l := range idx {
				t.Index[l.Dir] = true
			}
			r.Tags[t.Name] = t
			r.TagOrder = append(r.TagOrder, t.Name)
		}
	}
	revs := filepath.Join(dir, "_manifests", "revisions")
	r.HasRevisions = isDir(revs)
	var err error
	if r.RevisionOrder, err = linkFiles(revs); err != nil {
		return nil, err
	}
	for _, l := range r.RevisionOrder {
		r.Revisions[l.Dir] = l.Target
	}
	if r.LayerOrder, err = linkFiles(filepath.Join(dir, "_layers")); err != nil {
		return nil, err
	}
	for _, l := range r.LayerOrder {
		r.Layers[l.Dir] = l.Target
	}
	return r, nil
}

// linkFiles returns every file named "link" under dir, in walk order, with
// the digest its path names (<alg>/<hex>/link) and the one it holds.
func linkFiles(dir string) ([]Link, error) {
	if !isDir(dir) {
		return nil, nil
	}
	var out []Link
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "link" {
			return nil
		}
		parent := filepath.Dir(p)
		l := Link{Dir: filepath.Base(filepath.Dir(parent)) + ":" + filepath.Base(parent)}
		l.Target, _ = readLink(p)
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking %s: %w", dir, err)
	}
	return out, nil
}

// linkDirs returns the <alg>/<hex> directories under dir (a tag's index),
// whether or not they hold a link.
func linkDirs(dir string) ([]Link, error) {
	algs, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	var out []Link
	for _, a := range algs {
		hexes, err := os.ReadDir(filepath.Join(dir, a.Name()))
		if err != nil {
			continue
		}
		for _, h := range hexes {
			l := Link{Dir: a.Name() + ":" + h.Name()}
			l.Target, _ = readLink(filepath.Join(dir, a.Name(), h.Name(), "link"))
			out = append(out, l)
		}
	}
	return out, nil
}

// readLink reads a link file: one digest.
func readLink(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	d := strings.TrimSpace(string(b))
	if !validDigest(d) {
		return "", fmt.Errorf("%s: invalid digest %q", p, d)
	}
	return d, nil
}

func validDigest(d string) bool {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || alg == "" || len(hex) < 32 {
		return false
	}
	for _, c := range hex {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// readBlobs walks blobs/ for data files, as the registry's blob enumerator does.
func (s *Storage) readBlobs() error {
	base := filepath.Join(s.Root, "blobs")
	if !isDir(base) {
		return nil
	}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "data" {
			return nil
		}
		dir := filepath.Dir(p)
		hex := filepath.Base(dir)
		alg := filepath.Base(filepath.Dir(filepath.Dir(dir)))
		dg := alg + ":" + hex
		if !s.Blobs[dg] {
			s.Blobs[dg] = true
			s.BlobOrder = append(s.BlobOrder, dg)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("walking %s: %w", base, err)
	}
	return nil
}

// blobPath is where a blob's data lives.
func (s *Storage) blobPath(d string) string {
	alg, hex, _ := strings.Cut(d, ":")
	if len(hex) < 2 {
		return ""
	}
	return filepath.Join(s.Root, "blobs", alg, hex[:2], hex, "data")
}

// Names returns the repository names, sorted.
func (s *Storage) Names() []string {
	out := make([]string, 0, len(s.Repositories))
	for n := range s.Repositories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Removal is what a garbage collection deletes from a storage: blob data,
// manifests' revision links (and their tags' index entries) and layer links.
type Removal struct {
	Blobs      []string
	Revisions  []Revision
	LayerLinks []RepoDigest
}

// Revision is one manifest's revision link in a repository, with the tags
// whose index/ directory names it.
type Revision struct {
	RepoDigest
	TagIndex []string
}

// RepoDigest is a digest in one repository.
type RepoDigest struct {
	Repository string
	Digest     string
}

// Without returns a copy of s with what r deletes removed; nil removes
// nothing. s is not changed, nor is anything on disk.
func (s *Storage) Without(r *Removal) *Storage {
	out := &Storage{Root: s.Root, Repositories: map[string]*Repository{}, dirs: s.dirs, Blobs: map[string]bool{}, manifests: s.manifests}
	for n, repo := range s.Repositories {
		c := *repo
		c.Tags = map[string]*Tag{}
		for tn, t := range repo.Tags {
			ct := *t
			ct.Index = maps.Clone(t.Index)
			c.Tags[tn] = &ct
		}
		c.Revisions = maps.Clone(repo.Revisions)
		c.Layers = maps.Clone(repo.Layers)
		c.RevisionOrder = append([]Link(nil), repo.RevisionOrder...)
		c.LayerOrder = append([]Link(nil), repo.LayerOrder...)
		out.Repositories[n] = &c
	}
	if r == nil {
		for d := range s.Blobs {
			out.Blobs[d] = true
		}
		out.BlobOrder = s.BlobOrder
		return out
	}
	gone := map[string]bool{}
	for _, d := range r.Blobs {
		gone[d] = true
	}
	for _, d := range s.BlobOrder {
		if !gone[d] {
			out.Blobs[d] = true
			out.BlobOrder = append(out.BlobOrder, d)
		}
	}
	for _, m := range r.Revisions {
		repo := out.Repositories[m.Repository]
		delete(repo.Revisions, m.Digest)
		repo.RevisionOrder = dropLink(repo.RevisionOrder, m.Digest)
		for _, t := range m.TagIndex {
			delete(repo.Tags[t].Index, m.Digest)
		}
	}
	for _, l := range r.LayerLinks {
		repo := out.Repositories[l.Repository]
		delete(repo.Layers, l.Digest)
		repo.LayerOrder = dropLink(repo.LayerOrder, l.Digest)
	}
	return out
}

func dropLink(ls []Link, d string) []Link {
	out := ls[:0:0]
	for _, l := range ls {
		if l.Dir != d {
			out = append(out, l)
		}
	}
	return out
}

// WithTags returns a copy of s in which each tag names its digest, as if
// the tag had been pushed: _manifests/tags/<tag>/current/link and
// index/<digest>. A repository that does not hold the digest's revision
// is left as it is. s is not changed, nor is anything on disk.
func (s *Storage) WithTags(tags []TagLink) *Storage {
	out := s.Without(nil)
	for _, tl := range tags {
		repo := out.Repositories[tl.Repository]
		if repo == nil || repo.Revisions[tl.Digest] == "" {
			continue
		}
		t := repo.Tags[tl.Tag]
		if t == nil {
			t = &Tag{Name: tl.Tag, Index: map[string]bool{}}
			repo.Tags[tl.Tag] = t
			repo.TagOrder = append(repo.TagOrder, tl.Tag)
			sort.Strings(repo.TagOrder)
		}
		if t.Index == nil {
			t.Index = map[string]bool{}
		}
		t.Current = tl.Digest
		t.Index[tl.Digest] = true
		repo.HasTags, repo.HasManifests = true, true
	}
	return out
}

// TagLink is a tag in a repository naming a digest.
type TagLink struct {
	Repository, Tag, Digest string
}

// WithoutTags returns a copy of s without the tags drop names, as if their
// folders under _manifests/tags had been removed. s is not changed, nor is
// anything on disk.
func (s *Storage) WithoutTags(drop func(repository, tag string) bool) *Storage {
	out := s.Without(nil)
	for name, repo := range out.Repositories {
		var order []string
		for _, t := range repo.TagOrder {
			if drop(name, t) {
				delete(repo.Tags, t)
				continue
			}
			order = append(order, t)
		}
		repo.TagOrder = order
	}
	return out
}
