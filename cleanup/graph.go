package cleanup

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Repository is one repository as a cleanup sees it: its tags, the
// manifests the registry holds, the edges between them, and the times and
// ids the service's export adds (zero when unknown).
type Repository struct {
	// Name is the repository's path on its registry, without the host
	// ("org/app").
	Name      string
	Tags      map[string]*Tag
	Manifests map[string]*Manifest

	mu sync.Mutex
	ix *graphIndex
}

// Tag is one tag of a repository.
type Tag struct {
	Name   string
	Digest string
	// Pushed is when the tag was created or last moved; Pulled when it was
	// last pulled.
	Pushed time.Time
	Pulled time.Time
}

// Manifest is one manifest the registry holds, by digest.
type Manifest struct {
	Digest       string
	MediaType    string
	ArtifactType string
	// Children are an index's manifests (platform images and attestation
	// manifests), in the index's order.
	Children []string
	// Platform is an index child's platform ("linux/arm64"), as its parent
	// lists it.
	Platform string
	// Subject is the manifest an OCI 1.1 referrer is about.
	Subject string
	// Pushed is when the manifest was pushed (GHCR's created_at, ECR's
	// imagePushedAt, Harbor's push_time); Updated a later change the
	// service records (GHCR's updated_at); Pulled the last pull.
	Pushed  time.Time
	Updated time.Time
	Pulled  time.Time
	// ID is the service's own id for it (a GHCR package version id).
	ID string
	// Archived says the service keeps it in an archive tier (ECR's
	// ARCHIVE storage class): listed, and not pullable until restored.
	Archived bool
}

// graphIndex is a repository's edges by digest, built once in one pass
// over its tags and manifests (a GHCR export of 10,000 versions asked
// TagsOf for each: 10^8 comparisons), and again when the number of tags or
// manifests changes.
type graphIndex struct {
	tags, manifests int // len(Tags), len(Manifests) when built
	tagsOf          map[string][]string
	parents         map[string][]string
	referrers       map[string][]string
}

// index returns r's graph index, building it when r has grown or shrunk
// since.
func (r *Repository) index() *graphIndex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ix := r.ix; ix != nil && ix.tags == len(r.Tags) && ix.manifests == len(r.Manifests) {
		return ix
	}
	ix := &graphIndex{tags: len(r.Tags), manifests: len(r.Manifests),
		tagsOf: map[string][]string{}, parents: map[string][]string{}, referrers: map[string][]string{}}
	for n, t := range r.Tags {
		ix.tagsOf[t.Digest] = append(ix.tagsOf[t.Digest], n)
	}
	for d, m := range r.Manifests {
		seen := map[string]bool{}
		for _, c := range m.Children {
			if !seen[c] {
				seen[c] = true
				ix.parents[c] = append(ix.parents[c], d)
			}
		}
		if m.Subject != "" {
			ix.referrers[m.Subject] = append(ix.referrers[m.Subject], d)
		}
	}
	for _, byDigest := range []map[string][]string{ix.tagsOf, ix.parents, ix.referrers} {
		for _, v := range byDigest {
			sort.Strings(v)
		}
	}
	r.ix = ix
	return ix
}

// TagsOf returns the tags whose current digest is d, sorted. Like Parents
// and Referrers it reads an index of the repository built once: a change
// in place (a tag moved, a child added) after a query is seen once a tag
// or manifest is added or removed.
func (r *Repository) TagsOf(d string) []string {
	return slices.Clone(r.index().tagsOf[d])
}

// Parents returns the manifests listing d as a child, sorted.
func (r *Repository) Parents(d string) []string {
	return slices.Clone(r.index().parents[d])
}

// Referrers returns the manifests whose subject is d, sorted.
func (r *Repository) Referrers(d string) []string {
	return slices.Clone(r.index().referrers[d])
}

// Clone returns a deep copy of r.
func (r *Repository) Clone() *Repository {
	c := &Repository{Name: r.Name, Tags: make(map[string]*Tag, len(r.Tags)), Manifests: make(map[string]*Manifest, len(r.Manifests))}
	for n, t := range r.Tags {
		tc := *t
		c.Tags[n] = &tc
	}
	for d, m := range r.Manifests {
		mc := *m
		mc.Children = append([]string(nil), m.Children...)
		c.Manifests[d] = &mc
	}
	return c
}

// SortedTags returns the tag names, sorted.
func (r *Repository) SortedTags() []string {
	return sortedKeys(r.Tags)
}

// SortedManifests returns the manifest digests, sorted.
func (r *Repository) SortedManifests() []string {
	return sortedKeys(r.Manifests)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
