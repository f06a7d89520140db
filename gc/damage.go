package gc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Damage is one thing already broken in the storage, whoever uses it.
type Damage struct {
	Repository string     `json:"repository"`
	Kind       DamageKind `json:"kind"`
	// Digest is the manifest or blob concerned; Tag and Parent (an index)
	// say where it was reached from.
	Digest  string `json:"digest"`
	Tag     string `json:"tag,omitempty"`
	Parent  string `json:"parent,omitempty"`
	Message string `json:"message"`
}

// DamageKind names a kind of damage.
type DamageKind string

// Kinds of damage.
const (
	// TagManifestGone: a tag's current link names a manifest the repository
	// no longer serves.
	TagManifestGone DamageKind = "tag-manifest-gone"
	// ChildUnlinked: an index the repository serves lists a child it does not
	// link (what 2.x's --delete-untagged does to tagged indexes).
	ChildUnlinked DamageKind = "child-unlinked"
	// RevisionDataGone: a revision link whose blob data is gone; reached
	// from a tag, a child whose link is there and whose data is not.
	RevisionDataGone DamageKind = "revision-data-gone"
	// LayerLinkDangling: a _layers link whose blob data is gone (2.x's GC
	// deletes blobs and leaves their links).
	LayerLinkDangling DamageKind = "layer-link-dangling"
	// BlobUnavailable: a manifest the repository serves needs a blob it
	// cannot serve (no _layers link, or no data).
	BlobUnavailable DamageKind = "blob-unavailable"
	// ManifestUnreadable: a manifest's blob data is there but cannot be
	// read, or is not a manifest.
	ManifestUnreadable DamageKind = "manifest-unreadable"
)

// Survey lists what is already broken in s, repository by repository: its
// dangling links, then what each tag's image lacks, walked as a node pulls
// it. model decides how manifests resolve (2.x also reads _layers links).
func Survey(s *Storage, model Model) []Damage {
	var out []Damage
	for _, name := range s.Names() {
		r := s.Repositories[name]
		out = append(out, danglingLinks(s, r)...)
		out = append(out, tagDamage(s, r, model)...)
	}
	return out
}

// danglingLinks are r's revision and _layers links whose blob data is gone.
func danglingLinks(s *Storage, r *Repository) []Damage {
	var out []Damage
	for _, l := range r.RevisionOrder {
		if l.Target != "" && !s.Blobs[l.Target] {
			out = append(out, Damage{Repository: r.Name, Kind: RevisionDataGone, Digest: l.Dir, Message: fmt.Sprintf("revision link %s names blob data that is gone", l.Dir)})
		}
	}
	for _, l := range r.LayerOrder {
		if l.Target != "" && !s.Blobs[l.Target] {
			out = append(out, Damage{Repository: r.Name, Kind: LayerLinkDangling, Digest: l.Dir, Message: fmt.Sprintf("_layers link %s names blob data that is gone", l.Dir)})
		}
	}
	return out
}

// tagDamage walks the image of each tag of r and names what it lacks,
// once per kind, digest and parent.
func tagDamage(s *Storage, r *Repository, model Model) []Damage {
	var out []Damage
	seen := map[string]bool{}
	rd := s.Reader(model)
	for _, t := range r.TagOrder {
		cur := r.Tags[t].Current
		if cur == "" {
			continue
		}
		w := walkImage(context.Background(), rd, repoRef(r.Name).Tag(t))
		for _, l := range append(w.losses, w.faults...) {
			d := Damage{Repository: r.Name, Kind: damageKind(s, r, model, l), Digest: l.Digest, Tag: t, Parent: l.Parent, Message: l.Message}
			if d.Kind == TagManifestGone {
				d.Message = fmt.Sprintf("tag %s names manifest %s, which the repository no longer serves", t, cur)
			}
			if key := string(d.Kind) + d.Digest + d.Parent; d.Kind != "" && !seen[key] {
				seen[key] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// damageKind names what a loss of a tag's walk is in the storage; "" for
// what is no damage (a manifest kind not walked, a limit).
func damageKind(s *Storage, r *Repository, model Model, l Loss) DamageKind {
	switch {
	case l.Code == types.LimitExceeded:
		return ""
	case l.Code.Fault():
		return ManifestUnreadable
	case l.blob || l.Code == types.BlobMissing:
		return BlobUnavailable
	case l.Code == types.ManifestMissing && l.Parent == "":
		return TagManifestGone
	case l.Code != types.ChildMissing && l.Code != types.AttestationMissing:
		return ""
	case s.manifestLink(r, l.Digest, model) != "":
		return RevisionDataGone
	}
	return ChildUnlinked
}

// Loss is one thing an image needs that is (or would be) gone.
type Loss struct {
	Code scan.Code `json:"code"`
	// Digest is the manifest or blob lost; Parent the manifest listing it.
	Digest   string `json:"digest"`
	Parent   string `json:"parent,omitempty"`
	Platform string `json:"platform,omitempty"`
	Message  string `json:"message"`

	blob bool // Parent lists it as a config or layer, not as a child
}

// isLoss reports whether a finding says the image lacks something: a fact
// about the image (not a fault), of warning severity or worse.
func isLoss(f types.Finding) bool { return f.Severity >= types.SeverityWarning && !f.Code.Fault() }

// walked is one walk of an image over a view of a registry: what its
// reference resolved to, what it lacks, and what could not be read.
type walked struct {
	digest         string
	losses, faults []Loss
}

// walkImage walks ref over rd as a node pulls it, with the walker every
// store shares, and names for each loss the manifest that lists it.
func walkImage(ctx context.Context, rd walk.Reader, ref name.Reference, opts ...walk.Option) walked {
	t := &recorder{Reader: rd, read: map[string]walk.Manifest{}}
	got := walk.New(t, opts...).Walk(ctx, ref)
	parents := t.parents(got.Digest)
	w := walked{digest: got.Digest}
	for _, f := range got.Findings {
		p := parents[f.Digest+" "+f.Platform]
		l := Loss{Code: f.Code, Digest: f.Digest, Parent: p.digest, Platform: f.Platform, Message: f.Message, blob: p.blob}
		switch {
		case f.Code.Fault():
			w.faults = append(w.faults, l)
		case isLoss(f):
			w.losses = append(w.losses, l)
		}
	}
	return w
}

// recorder is a Reader that keeps the manifests one walk reads, so that a loss
// can name the manifest listing it: a walk's findings say what is lost and
// under which platform, not where from.
type recorder struct {
	walk.Reader
	mu   sync.Mutex
	read map[string]walk.Manifest
}

// Manifest reads through and keeps what it read.
func (t *recorder) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	m, err := t.Reader.Manifest(ctx, repo, digest)
	if err == nil {
		t.mu.Lock()
		t.read[digest] = m
		t.mu.Unlock()
	}
	return m, err
}

// parent is the manifest listing a digest, and whether as a config or layer.
type parent struct {
	digest string
	blob   bool
}

// parents indexes, by "digest platform" as findings name them, the
// manifest read that lists each child and blob: an index listing the child
// under that platform, else an image reached at that platform (top at
// none) listing the blob; the lowest digest where several do.
func (t *recorder) parents(top string) map[string]parent {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]parent{}
	add := func(k string, p parent) {
		if _, ok := out[k]; !ok {
			out[k] = p
		}
	}
	read := slices.Sorted(maps.Keys(t.read))
	at := map[string][]string{top: {""}} // manifest → platforms the walk reached it at
	for _, d := range read {
		for _, c := range t.read[d].Manifests {
			cd, p := c.Digest.String(), walk.PlatformString(c.Platform)
			at[cd] = append(at[cd], p)
			add(cd+" "+p, parent{digest: d})
		}
	}
	for _, d := range read {
		if m := t.read[d]; m.IsImage() {
			for _, p := range at[d] {
				for _, b := range append([]ocispec.Descriptor{m.Config}, m.Layers...) {
					add(b.Digest.String()+" "+p, parent{digest: d, blob: true})
				}
			}
		}
	}
	return out
}

// minus drops from after the losses already in before.
func minus(after, before []Loss) []Loss {
	had := map[string]bool{}
	for _, l := range before {
		had[string(l.Code)+l.Digest+l.Parent] = true
	}
	var out []Loss
	for _, l := range after {
		if !had[string(l.Code)+l.Digest+l.Parent] {
			out = append(out, l)
		}
	}
	return out
}
