package gc

import (
	"fmt"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sort"
	"strings"

	"github.com/regcheck/regcheck/scan"
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
	// (what 2.x's --delete-untagged does to tagged indexes).
	ChildUnlinked DamageKind = "child-unlinked"
	// RevisionDataGone: a revision link whose blob data is gone.
	RevisionDataGone DamageKind = "revision-data-gone"
	// LayerLinkDangling: a _layers link whose blob data is gone (2.x's GC
	// deletes blobs and leaves their links).
	LayerLinkDangling DamageKind = "layer-link-dangling"
	// BlobUnavailable: a manifest the repository serves needs a blob it
	// cannot serve (no _layers link, or no data).
	BlobUnavailable DamageKind = "blob-unavailable"
)

// Survey lists what is already broken in s, repository by repository.
// model decides how manifests resolve (2.x also reads _layers links).
func Survey(s *Storage, model Model) []Damage {
	var out []Damage
	for _, name := range s.Names() {
		r := s.Repositories[name]
		for _, l := range r.RevisionOrder {
			if l.Target != "" && !s.Blobs[l.Target] {
				out = append(out, Damage{Repository: name, Kind: RevisionDataGone, Digest: l.Dir, Message: fmt.Sprintf("revision link %s names blob data that is gone", l.Dir)})
			}
		}
		for _, l := range r.LayerOrder {
			if l.Target != "" && !s.Blobs[l.Target] {
				out = append(out, Damage{Repository: name, Kind: LayerLinkDangling, Digest: l.Dir, Message: fmt.Sprintf("_layers link %s names blob data that is gone", l.Dir)})
			}
		}
		seen := map[string]bool{}
		for _, t := range r.TagOrder {
			cur := r.Tags[t].Current
			if cur == "" {
				continue
			}
			if _, ok := s.linkedManifest(r, cur, model); !ok {
				out = append(out, Damage{Repository: name, Kind: TagManifestGone, Digest: cur, Tag: t, Message: fmt.Sprintf("tag %s names manifest %s, which the repository no longer serves", t, cur)})
				continue
			}
			for _, l := range walkImage(s, r, cur, model) {
				key := string(l.kind) + l.Digest + l.Parent
				if seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, Damage{Repository: name, Kind: l.kind, Digest: l.Digest, Tag: t, Parent: l.Parent, Message: l.Message})
			}
		}
	}
	return out
}

// Loss is one thing an image needs that is (or would be) gone.
type Loss struct {
	Code scan.Code `json:"code"`
	// Digest is the manifest or blob lost; Parent the manifest listing it.
	Digest   string `json:"digest"`
	Parent   string `json:"parent,omitempty"`
	Platform string `json:"platform,omitempty"`
	Message  string `json:"message"`

	kind DamageKind
}

// walkImage walks manifest d in r as a node pulls it: the manifest, each
// index child, and each child's config and layers. It returns what cannot
// be served, in the scan engine's vocabulary.
func walkImage(s *Storage, r *Repository, d string, model Model) []Loss {
	var out []Loss
	var walk func(d, parent, platform string, attestation bool, depth int)
	walk = func(d, parent, platform string, attestation bool, depth int) {
		target, ok := s.linkedManifest(r, d, model)
		if !ok {
			code, what := scan.ChildMissing, "the index lists a "+platform+" manifest "+d+" that the repository no longer serves"
			if attestation {
				code, what = scan.AttestationMissing, "attestation manifest "+d+" is gone"
			}
			if parent == "" {
				code, what = scan.ManifestMissing, "manifest "+d+" is gone"
			}
			out = append(out, Loss{Code: code, Digest: d, Parent: parent, Platform: platform, Message: what, kind: ChildUnlinked})
			return
		}
		m, err := s.manifest(target)
		if err != nil {
			out = append(out, Loss{Code: scan.ManifestMissing, Digest: d, Parent: parent, Platform: platform, Message: err.Error(), kind: RevisionDataGone})
			return
		}
		if m.isIndex() {
			if depth > 2 {
				return
			}
			for _, c := range m.Manifests {
				walk(c.Digest, d, c.Platform.String(), attestation || isAttestation(c), depth+1)
			}
			return
		}
		for i, b := range m.references() {
			if b.Digest == "" || scan.IsForeignLayer(b.MediaType) || s.linkedBlob(r, b.Digest) {
				continue
			}
			what := "layer"
			if i == 0 && len(m.FSLayers) == 0 {
				what = "config"
			}
			where := "manifest " + d
			if platform != "" {
				where = "the " + platform + " manifest " + d
			}
			code := scan.BlobMissing
			if attestation {
				code = scan.AttestationMissing
			}
			out = append(out, Loss{Code: code, Digest: b.Digest, Parent: d, Platform: platform, Message: fmt.Sprintf("%s blob %s of %s is gone", what, b.Digest, where), kind: BlobUnavailable})
		}
	}
	walk(d, "", "", false, 0)
	return out
}

// isAttestation asks scan, which knows buildx's annotations.
func isAttestation(d Descriptor) bool {
	od := ocispec.Descriptor{Annotations: d.Annotations}
	if d.Platform != nil {
		od.Platform = &ocispec.Platform{OS: d.Platform.OS, Architecture: d.Platform.Architecture, Variant: d.Platform.Variant}
	}
	return scan.IsAttestation(od)
}

// InUse is one in-use image as found in the storage.
type InUse struct {
	// Reference is the normalized reference; Repository and Tag or Digest
	// locate it in the storage.
	Reference  string     `json:"reference"`
	Repository string     `json:"repository"`
	Tag        string     `json:"tag,omitempty"`
	Digest     string     `json:"digest,omitempty"`
	Uses       []scan.Use `json:"uses,omitempty"`
}

// Entry is an in-use image that is (or would be) broken or at risk.
type Entry struct {
	Reference  string `json:"reference"`
	Repository string `json:"repository"`
	// Digest is what the reference resolves to in the storage.
	Digest string `json:"digest,omitempty"`
	// Verdict is broken, or at-risk when only attestations are lost.
	Verdict scan.Verdict `json:"verdict"`
	// Reason says in one line what happens to it.
	Reason string `json:"reason"`
	// Losses are the manifests and blobs it loses; Lost their digests.
	Losses []Loss   `json:"losses"`
	Lost   []string `json:"lost"`
	// DeletedBlobs are the blobs it needs whose data the run deletes,
	// those under a lost child included.
	DeletedBlobs []string   `json:"deletedBlobs,omitempty"`
	Advice       string     `json:"advice"`
	Uses         []scan.Use `json:"uses,omitempty"`
}

// examine walks an in-use image in s and returns what it lacks.
func examine(s *Storage, im InUse, model Model) (digest string, losses []Loss) {
	r := s.Repositories[im.Repository]
	if r == nil {
		return "", []Loss{{Code: scan.ManifestMissing, Message: "repository " + im.Repository + " is not in the storage"}}
	}
	d := im.Digest
	if d == "" {
		t := r.Tags[im.Tag]
		if t == nil || t.Current == "" {
			return "", []Loss{{Code: scan.TagMissing, Message: fmt.Sprintf("tag %s is not in repository %s", im.Tag, im.Repository)}}
		}
		d = t.Current
	}
	return d, walkImage(s, r, d, model)
}

// entry builds an Entry from losses; nil when there are none.
func entry(im InUse, digest string, losses []Loss, advice string) *Entry {
	if len(losses) == 0 {
		return nil
	}
	e := &Entry{Reference: im.Reference, Repository: im.Repository, Digest: digest, Verdict: scan.AtRisk, Losses: losses, Uses: im.Uses, Advice: advice}
	var children, blobs, atts, top []string
	for _, l := range losses {
		if l.Code != scan.AttestationMissing {
			e.Verdict = scan.Broken
		}
		if l.Digest != "" {
			e.Lost = append(e.Lost, l.Digest)
		}
		switch l.Code {
		case scan.ChildMissing:
			children = append(children, l.Platform+" "+scan.ShortDigest(l.Digest))
		case scan.BlobMissing:
			blobs = append(blobs, scan.ShortDigest(l.Digest))
		case scan.AttestationMissing:
			atts = append(atts, scan.ShortDigest(l.Digest))
		default:
			top = append(top, l.Message)
		}
	}
	sort.Strings(e.Lost)
	var parts []string
	parts = append(parts, top...)
	if len(children) > 0 {
		parts = append(parts, "index kept, child manifest "+strings.Join(children, ", ")+" unlinked")
	}
	if len(blobs) > 0 {
		parts = append(parts, fmt.Sprintf("%d blob(s) gone: %s", len(blobs), strings.Join(blobs, ", ")))
	}
	if len(atts) > 0 {
		parts = append(parts, "attestation(s) lost: "+strings.Join(atts, ", "))
	}
	e.Reason = strings.Join(parts, "; ")
	return e
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

// needs lists every manifest and blob digest image d in r reaches in s.
func needs(s *Storage, r *Repository, d string, model Model) map[string]bool {
	out := map[string]bool{}
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		out[d] = true
		target, ok := s.linkedManifest(r, d, model)
		if !ok || depth > 3 {
			return
		}
		m, err := s.manifest(target)
		if err != nil {
			return
		}
		if m.isIndex() {
			for _, c := range m.Manifests {
				walk(c.Digest, depth+1)
			}
			return
		}
		for _, b := range m.references() {
			if b.Digest != "" {
				out[b.Digest] = true
			}
		}
	}
	walk(d, 0)
	return out
}
