package cleanup

import (
	"maps"
	"sort"
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

// TagsOf returns the tags whose current digest is d, sorted.
func (r *Repository) TagsOf(d string) []string {
	var out []string
	for n, t := range r.Tags {
		if t.Digest == d {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Parents returns the manifests listing d as a child, sorted.
func (r *Repository) Parents(d string) []string {
	var out []string
	for pd, m := range r.Manifests {
		for _, c := range m.Children {
			if c == d {
				out = append(out, pd)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Referrers returns the manifests whose subject is d, sorted.
func (r *Repository) Referrers(d string) []string {
	var out []string
	for md, m := range r.Manifests {
		if m.Subject == d {
			out = append(out, md)
		}
	}
	sort.Strings(out)
	return out
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
