package protect

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Options say which collector to shield against and how to name the tags.
type Options struct {
	// Model and DeleteUntagged are the collector run guarded against.
	Model          gcresult.Model
	DeleteUntagged bool
	// Host limits the in-use set to references on this registry host (the
	// storage holds none); "" matches repositories by path alone.
	Host string
	// Prefix and Owner name the keep-tags (TagName); Prefix defaults to
	// DefaultPrefix, Owner to "default".
	Prefix, Owner string
	// Platforms, when set, limit an index's children kept to these (the
	// nodes' platforms); by default every child is kept.
	Platforms []v1.Platform
}

func (o Options) gc() gc.Options {
	return gc.Options{Model: o.Model, DeleteUntagged: o.DeleteUntagged, Host: o.Host}
}

// Plan computes the keep set of the in-use targets in s, the keep-tags
// that shield it from the collector opts names, and the proof: the same
// collector simulated over s with those tags added. It writes nothing. A
// non-nil error with a report means the in-use set is incomplete
// (Report.Incomplete says why); nothing should then be written.
func Plan(s *storage.Storage, opts Options, targets []types.Target) (*protectresult.Report, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Owner == "" {
		opts.Owner = "default"
	}
	own, err := keepTags(opts.Prefix, opts.Owner)
	if err != nil {
		return nil, err
	}
	// The plan and the proof are made over the storage without keep-tags:
	// what the in-use set needs, not what was already written.
	bare := s.WithoutTags(func(_, tag string) bool { return own(tag) })
	rep := &protectresult.Report{SchemaVersion: protectresult.SchemaVersion, Model: string(opts.Model), DeleteUntagged: opts.DeleteUntagged,
		Storage: s.Root, Owner: opts.Owner, Keep: []protectresult.Kept{}, Unprotected: []protectresult.Unprotected{}}
	before, _, err := gc.Check(bare, opts.gc(), targets)
	if err != nil {
		rep.Incomplete = append(rep.Incomplete, err.Error())
	}
	if before == nil {
		return rep, fmt.Errorf("predicting the collector: %w", err)
	}
	keep, faults := keepSet(bare, opts, targets)
	rep.Incomplete = append(rep.Incomplete, faults...)
	shield, err := chooseShield(bare, s, opts, keep)
	if err != nil {
		return rep, err
	}
	rep.Keep = shield
	after, _, err := gc.Check(bare.WithTags(tagLinks(shield)), opts.gc(), targets)
	if after == nil {
		return rep, fmt.Errorf("predicting the collector over the shield: %w", err)
	}
	prove(rep, before, after)
	count(rep)
	if len(rep.Incomplete) > 0 {
		return rep, errors.New("the in-use set is incomplete: " + strings.Join(rep.Incomplete, "; "))
	}
	return rep, nil
}

// keepTags reports whether a tag is a keep-tag of any owner: the prefix,
// an owner, '-', then 16 hex digits. Each owner's plan is made without
// any of them, so that one owner's release never unshields another's
// images.
func keepTags(prefix, owner string) (func(string) bool, error) {
	if _, err := TagName(prefix, owner, "sha256:"+strings.Repeat("0", shortDigest)); err != nil {
		return nil, err
	}
	return func(tag string) bool {
		rest, ok := strings.CutPrefix(tag, prefix)
		if !ok || len(rest) < shortDigest+2 || rest[len(rest)-shortDigest-1] != '-' {
			return false
		}
		return strings.Trim(rest[len(rest)-shortDigest:], "0123456789abcdef") == ""
	}, nil
}

// keepSet walks each in-use image over the storage as it is and returns
// every manifest it reaches (the image, an index's children), by
// repository, with its parent. Walk faults are returned as text.
func keepSet(s *storage.Storage, opts Options, targets []types.Target) ([]keptNode, []string) {
	inUse, _ := gc.Resolve(s, targets, opts.Host)
	rd := s.Reader(version(opts.Model))
	var wopts []walk.Option
	if len(opts.Platforms) > 0 {
		wopts = append(wopts, walk.WithPlatforms(opts.Platforms...))
	}
	w := walk.New(rd, wopts...)
	seen := map[string]int{}
	var (
		out    []keptNode
		faults []string
	)
	for _, im := range inUse {
		repo := storage.Repo(im.Repository)
		var got walk.Walked
		if im.Digest != "" {
			got = w.Walk(context.Background(), repo.Digest(im.Digest))
		} else {
			got = w.Walk(context.Background(), repo.Tag(im.Tag))
		}
		for _, f := range got.Findings {
			if f.Code.Fault() {
				faults = append(faults, im.Reference+": "+f.Message)
			}
		}
		for _, n := range manifests(got.Tree, "") {
			n.repository, n.uses = im.Repository, im.Uses
			n.why = why(im, n)
			k := n.repository + "@" + n.digest
			if i, ok := seen[k]; ok {
				out[i].uses = append(out[i].uses, im.Uses...)
				continue
			}
			if s.Repositories[im.Repository].Revisions[n.digest] == "" {
				continue // not in the storage: already broken, gc-check's to say
			}
			seen[k] = len(out)
			out = append(out, n)
		}
	}
	return out, faults
}

// keptNode is one manifest of the keep set.
type keptNode struct {
	repository, digest, mediaType, parent, why string
	uses                                       []types.Use
}

// manifests lists the manifests of a walk's tree, each with its parent.
func manifests(n *types.Node, parent string) []keptNode {
	if n == nil || n.Digest == "" {
		return nil
	}
	out := []keptNode{{digest: n.Digest, mediaType: n.MediaType, parent: parent}}
	for _, c := range n.Children {
		if c.Kind == "manifest" || c.Kind == "index" || c.Kind == "attestation" {
			out = append(out, manifests(c, n.Digest)...)
		}
	}
	return out
}

// why says what needs a manifest of the keep set.
func why(im gc.InUse, n keptNode) string {
	switch {
	case n.parent != "":
		return "child of " + n.parent + " (" + im.Reference + ")"
	case im.Digest != "":
		return "digest pin " + im.Reference
	}
	return "in use as " + im.Reference
}

// version is the release line whose registry serves the storage model collects.
func version(m gcresult.Model) storage.Version {
	if m == gcresult.Distribution28 {
		return storage.V2
	}
	return storage.V3
}

// tagLinks are the shield's tags as storage links.
func tagLinks(ks []protectresult.Kept) []storage.TagLink {
	var out []storage.TagLink
	for _, k := range ks {
		if k.Tag != "" {
			out = append(out, storage.TagLink{Repository: k.Repository, Tag: k.Tag, Digest: k.Digest})
		}
	}
	return out
}
