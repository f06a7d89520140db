package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// maxIndexTags bounds the tags asked when looking for an index that lists
// a pinned single-platform manifest.
const maxIndexTags = 64

// platformPin checks an image whose reference names a single-platform
// manifest (a child of an index pinned by digest, or a tag on a
// single-platform image) against the platforms of its uses' nodes: a use
// none of whose nodes can run it, or a DaemonSet some of whose nodes
// cannot, is PlatformMismatch (broken); a use only some of whose nodes
// cannot, the same code lowered to a warning (at-risk). The platform is
// the config's os/architecture/variant. Uses whose nodes are unknown, and
// images the walk did not find whole, are not judged.
func platformPin(ctx context.Context, s *scan.Scanner, im *types.Image) error {
	if im.Tree == nil || im.Tree.State != "" || !walk.IsImage(im.MediaType) || im.Digest == "" || !slices.ContainsFunc(im.Uses, func(u types.Use) bool { return len(u.Platforms) > 0 }) {
		return nil
	}
	_, ref, err := s.Parse(im.Reference)
	if err != nil {
		return nil
	}
	platform, err := s.Platform(ctx, ref.Context(), im.Digest)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && types.FaultCode(err) == "":
		return nil // the config is gone, or not its digest: the walk said so
	case err != nil:
		im.Findings = append(im.Findings, types.NewAdvisedFinding(types.FaultCode(err), im.Digest, "",
			fmt.Sprintf("could not read the platform of %s, a single-platform manifest: %v", im.Reference, err),
			"run again when the registry answers; nodes of another platform cannot run a single-platform manifest"))
		im.UpdateVerdict()
		return nil
	case platform == "":
		return nil
	}
	f, ok := mismatch(im, platform)
	if !ok {
		return nil
	}
	if index := IndexListing(ctx, s, im.Reference, im.Digest); index != "" {
		f.Message += fmt.Sprintf("; the index %s lists it: pin %s@%s instead", index, ref.Context().Name(), index)
	}
	im.Findings = append(im.Findings, f)
	im.UpdateVerdict()
	return nil
}

// mismatch is the finding of a single-platform manifest for platform
// whose uses' nodes are not all of it, and false when they all are.
func mismatch(im *types.Image, platform string) (types.Finding, bool) {
	var broken, some []string // uses that cannot start; uses some of whose nodes cannot
	var cannot, can []string
	for _, u := range im.Uses {
		var off, on []string
		for _, p := range u.Platforms {
			for _, n := range p.Nodes {
				if s := fmt.Sprintf("node %s (%s)", n, p.Platform); Serves(platform, p.Platform) {
					on = append(on, s)
				} else {
					off = append(off, s)
				}
			}
		}
		switch {
		case len(off) == 0:
			continue
		case len(on) == 0:
			broken = append(broken, useName(u)+" cannot start on any of its nodes")
		case u.Kind == "DaemonSet":
			broken = append(broken, useName(u)+" runs a pod on each of its nodes, those included")
		default:
			some = append(some, useName(u))
		}
		cannot, can = merge(cannot, off), merge(can, on)
	}
	if len(broken) == 0 && len(some) == 0 {
		return types.Finding{}, false
	}
	f := types.NewFinding(types.PlatformMismatch, im.Digest, "",
		"%s names a single-platform manifest for %s: %s cannot run it (exec format error, or no matching manifest)", im.Reference, platform, strings.Join(cannot, ", "))
	if len(broken) > 0 {
		f.Message += "; " + strings.Join(broken, "; ")
		return f, true
	}
	f.Severity = types.SeverityWarning // some nodes can: the pod starts where the scheduler happens to put it
	f.Message += fmt.Sprintf("; %s may land there, while %s can", strings.Join(some, ", "), strings.Join(can, ", "))
	return f, true
}

// merge adds the strings of add to to, each once, sorted.
func merge(to, add []string) []string {
	for _, s := range add {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	slices.Sort(to)
	return to
}

// IndexListing returns the digest of an index of reference's repository,
// reached by a tag, that lists the manifest digest: what to pin instead of
// a single platform's manifest. "" when none is found among the first tags
// (maxIndexTags) or the registry cannot say.
func IndexListing(ctx context.Context, s *scan.Scanner, reference, digest string) string {
	_, ref, err := s.Parse(reference)
	if err != nil {
		return ""
	}
	repo := ref.Context().Name()
	tags, err := s.Tags(ctx, repo)
	if err != nil {
		return ""
	}
	for _, tag := range tags[:min(len(tags), maxIndexTags)] {
		d, mt, err := s.Resolve(ctx, repo+":"+tag)
		if err != nil || !walk.IsIndex(mt) {
			continue
		}
		if childOf(ctx, s, repo+"@"+d, digest) {
			return d
		}
	}
	return ""
}
