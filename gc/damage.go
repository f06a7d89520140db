package gc

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Survey lists what is already broken in s, repository by repository: its
// dangling links, then what each tag's image lacks, walked as a node pulls
// it. model decides how manifests resolve (2.x also reads _layers links).
func Survey(s *storage.Storage, model gcresult.Model) []gcresult.Damage {
	var out []gcresult.Damage
	for _, name := range s.Names() {
		r := s.Repositories[name]
		out = append(out, danglingLinks(s, r)...)
		out = append(out, tagDamage(s, r, model)...)
	}
	return out
}

// danglingLinks are r's revision and _layers links whose blob data is gone.
func danglingLinks(s *storage.Storage, r *storage.Repository) []gcresult.Damage {
	var out []gcresult.Damage
	for _, l := range r.RevisionOrder {
		if l.Target != "" && !s.Blobs[l.Target] {
			out = append(out, gcresult.Damage{Repository: r.Name, Kind: gcresult.RevisionDataGone, Digest: l.Dir, Message: fmt.Sprintf("revision link %s names blob data that is gone", l.Dir)})
		}
	}
	for _, l := range r.LayerOrder {
		if l.Target != "" && !s.Blobs[l.Target] {
			out = append(out, gcresult.Damage{Repository: r.Name, Kind: gcresult.LayerLinkDangling, Digest: l.Dir, Message: fmt.Sprintf("_layers link %s names blob data that is gone", l.Dir)})
		}
	}
	return out
}

// tagDamage walks the image of each tag of r and names what it lacks,
// once per kind, digest and parent.
func tagDamage(s *storage.Storage, r *storage.Repository, model gcresult.Model) []gcresult.Damage {
	var out []gcresult.Damage
	seen := map[string]bool{}
	rd := s.Reader(storageVersion(model))
	for _, t := range r.TagOrder {
		cur := r.Tags[t].Current
		if cur == "" {
			continue
		}
		w := walkImage(context.Background(), rd, storage.Repo(r.Name).Tag(t))
		for _, l := range append(w.losses, w.faults...) {
			d := gcresult.Damage{Repository: r.Name, Kind: damageKind(s, r, model, l), Digest: l.Digest, Tag: t, Parent: l.Parent, Message: l.Message}
			if d.Kind == gcresult.TagManifestGone {
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
func damageKind(s *storage.Storage, r *storage.Repository, model gcresult.Model, l gcresult.Loss) gcresult.DamageKind {
	switch {
	case l.Code == types.LimitExceeded:
		return ""
	case l.Code.Fault():
		return gcresult.ManifestUnreadable
	case l.Blob || l.Code == types.BlobMissing:
		return gcresult.BlobUnavailable
	case l.Code == types.ManifestMissing && l.Parent == "":
		return gcresult.TagManifestGone
	case l.Code != types.ChildMissing && l.Code != types.AttestationMissing:
		return ""
	case s.ManifestLink(r, l.Digest, storageVersion(model)) != "":
		return gcresult.RevisionDataGone
	}
	return gcresult.ChildUnlinked
}

// isLoss reports whether a finding says the image lacks something: a fact
// about the image (not a fault), of warning severity or worse.
func isLoss(f types.Finding) bool { return f.Severity >= types.SeverityWarning && !f.Code.Fault() }

// walked is one walk of an image over a view of a registry: what its
// reference resolved to, what it lacks, and what could not be read.
type walked struct {
	digest         string
	losses, faults []gcresult.Loss
}

// walkImage walks ref over rd as a node pulls it, with the walker every
// store shares, and names for each loss the manifest that lists it (from
// the tree the walk found).
func walkImage(ctx context.Context, rd walk.Reader, ref name.Reference, opts ...walk.Option) walked {
	got := walk.New(rd, opts...).Walk(ctx, ref)
	parents := parentsIn(got.Tree)
	w := walked{digest: got.Digest}
	for _, f := range got.Findings {
		p := parents[f.Digest+" "+f.Platform]
		l := gcresult.Loss{Code: f.Code, Digest: f.Digest, Parent: p.digest, Platform: f.Platform, Message: f.Message, Blob: p.blob}
		switch {
		case f.Code.Fault():
			w.faults = append(w.faults, l)
		case isLoss(f):
			w.losses = append(w.losses, l)
		}
	}
	return w
}

// parent is the manifest listing a digest, and whether as a config or layer.
type parent struct {
	digest string
	blob   bool
}

// parentsIn indexes, by "digest platform" as findings name them, the
// manifest that lists each child and blob in a walk's tree: a child under
// its platform, a blob under the platform of the manifest listing it (none
// at the top); the first in the tree's order where several do.
func parentsIn(root *types.Node) map[string]parent {
	out := map[string]parent{}
	var visit func(n *types.Node, platform string)
	visit = func(n *types.Node, platform string) {
		for _, c := range n.Children {
			if c.Digest == "" {
				continue // a platform the index has no child for
			}
			k, p := c.Digest+" "+platform, parent{digest: n.Digest, blob: true}
			if c.Kind == "manifest" || c.Kind == "index" || c.Kind == "attestation" {
				k, p = c.Digest+" "+c.Label, parent{digest: n.Digest}
			}
			if _, ok := out[k]; !ok {
				out[k] = p
			}
			if len(c.Children) > 0 {
				visit(c, c.Label)
			}
		}
	}
	if root != nil {
		visit(root, "")
	}
	return out
}

// minus drops from after the losses already in before.
func minus(after, before []gcresult.Loss) []gcresult.Loss {
	had := map[string]bool{}
	for _, l := range before {
		had[string(l.Code)+l.Digest+l.Parent] = true
	}
	var out []gcresult.Loss
	for _, l := range after {
		if !had[string(l.Code)+l.Digest+l.Parent] {
			out = append(out, l)
		}
	}
	return out
}
