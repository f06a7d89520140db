package rescue

import (
	"fmt"
	"strings"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// assembler turns what a walk over the overlay learnt into an image's
// pieces, in push order: it visits the tree again from the top, children
// and blobs before the manifests that reference them.
type assembler struct {
	ov        *overlay
	im        *Image
	seen      map[string]bool
	blobs     []*Piece
	manifests []*Piece
}

// manifest visits a manifest and, first, what it references.
func (a *assembler) manifest(d string, kind Kind, platform string) {
	if a.seen[d] {
		return
	}
	a.seen[d] = true
	ans := a.ov.answerOf(a.im.repo, d)
	if ans == nil || ans.manifest == nil {
		return // not reached, or no copy anywhere: the walk's findings say so
	}
	m := ans.manifest
	switch {
	case m.IsIndex():
		for _, c := range m.Manifests {
			a.manifest(c.Digest.String(), childKind(c.MediaType, walk.IsAttestation(c)), walk.PlatformString(c.Platform))
		}
	case m.IsImage():
		a.blob(m.Config.Digest.String(), KindConfig, platform)
		for _, l := range m.Layers {
			if !walk.IsForeignLayer(l.MediaType) {
				a.blob(l.Digest.String(), KindLayer, platform)
			}
		}
	}
	if ans.found != nil {
		a.manifests = append(a.manifests, &Piece{Digest: d, Kind: kind, MediaType: m.MediaType, Platform: platform,
			Size: ans.found.size, Source: ans.found.source.String(), source: ans.found.source, body: ans.found.body})
	}
}

func childKind(mediaType string, attestation bool) Kind {
	switch {
	case attestation:
		return KindAttestation
	case walk.IsIndex(mediaType):
		return KindIndex
	}
	return KindManifest
}

func (a *assembler) blob(d string, kind Kind, platform string) {
	if a.seen[d] {
		return
	}
	a.seen[d] = true
	if ans := a.ov.answerOf(a.im.repo, d); ans != nil && ans.found != nil {
		a.blobs = append(a.blobs, &Piece{Digest: d, Kind: kind, Platform: platform, Size: ans.found.size,
			Source: ans.found.source.String(), source: ans.found.source})
	}
}

// block marks the manifests the registry would refuse: one whose config,
// layers or children are neither served nor pushable. Manifests come
// children first, so a child's block is known before its index's. Each
// blocked manifest stays missing; the rest are untagged unless the
// reference's own tag points at them.
func (a *assembler) block() {
	blocked := map[string]bool{}
	for _, p := range a.manifests {
		var lacking []string
		for _, ref := range a.references(p.Digest) {
			if !a.available(ref.digest, blocked) {
				lacking = append(lacking, ref.what+" "+types.ShortDigest(ref.digest))
			}
		}
		if len(lacking) > 0 {
			blocked[p.Digest] = true
			p.Blocked = fmt.Sprintf("the registry refuses a manifest whose references are not all present, and no source holds its %s", strings.Join(lacking, ", "))
			a.im.Missing = append(a.im.Missing, types.NewFinding(missingCode(p, a.im.Digest), p.Digest, p.Platform,
				"%s %s is in %s, but cannot be pushed: %s", p.Kind, p.Digest, p.Source, p.Blocked))
			continue
		}
		p.Untagged = p.Digest != a.im.Digest || a.im.tag == ""
	}
}

// missingCode is the finding a blocked manifest stays as.
func missingCode(p *Piece, top string) types.Code {
	switch {
	case p.Digest == top:
		return types.ManifestMissing
	case p.Kind == KindAttestation:
		return types.AttestationMissing
	}
	return types.ChildMissing
}

type reference struct{ digest, what string }

// references lists what a registry checks before it accepts a manifest:
// an index's children; an image's config and (distributable) layers.
func (a *assembler) references(d string) []reference {
	ans := a.ov.answerOf(a.im.repo, d)
	if ans == nil || ans.manifest == nil {
		return nil
	}
	m := ans.manifest
	var out []reference
	switch {
	case m.IsIndex():
		for _, c := range m.Manifests {
			what := walk.PlatformString(c.Platform) + " manifest"
			if walk.IsAttestation(c) {
				what = "attestation manifest"
			}
			out = append(out, reference{c.Digest.String(), strings.TrimSpace(what)})
		}
	case m.IsImage():
		out = append(out, reference{m.Config.Digest.String(), "config"})
		for i, l := range m.Layers {
			if !walk.IsForeignLayer(l.MediaType) {
				out = append(out, reference{l.Digest.String(), fmt.Sprintf("layer %d", i+1)})
			}
		}
	}
	return out
}

// available reports whether the registry will serve d after the rescue.
func (a *assembler) available(d string, blocked map[string]bool) bool {
	ans := a.ov.answerOf(a.im.repo, d)
	return ans != nil && (ans.inRegistry || (ans.found != nil && !blocked[d]))
}

// wholePlatforms lists the platforms of the top index whose image a node
// can pull whole after the rescue.
func (a *assembler) wholePlatforms() []string {
	top := a.ov.answerOf(a.im.repo, a.im.Digest)
	if top == nil || top.manifest == nil || !top.manifest.IsIndex() {
		return nil
	}
	blocked := map[string]bool{}
	for _, p := range a.manifests {
		if p.Blocked != "" {
			blocked[p.Digest] = true
		}
	}
	if !a.available(a.im.Digest, blocked) {
		return nil // no node pulls through an index the registry will not serve
	}
	var out []string
	for _, c := range top.manifest.Manifests {
		if !walk.IsAttestation(c) && c.Platform != nil && a.complete(c.Digest.String(), blocked, 0) {
			out = append(out, walk.PlatformString(c.Platform))
		}
	}
	return out
}

// complete reports whether d and everything a node pulls under it will be
// served after the rescue.
func (a *assembler) complete(d string, blocked map[string]bool, depth int) bool {
	if !a.available(d, blocked) || depth > walk.MaxDepth {
		return false
	}
	m := a.ov.answerOf(a.im.repo, d).manifest
	if m == nil {
		return true // a blob
	}
	for _, r := range a.references(d) {
		if strings.HasPrefix(r.what, "attestation") {
			continue
		}
		if !a.complete(r.digest, blocked, depth+1) {
			return false
		}
	}
	return true
}
