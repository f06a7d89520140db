package protect

import (
	"fmt"

	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/storage"
)

// chooseShield picks the keep-tags. On distribution 2.x every manifest of
// the keep set gets one in its repository: the 2.x mark follows only a
// tagged manifest's direct references, and a tag the user moves later
// leaves whatever it named untagged. On 3.x only what the 3.x collector
// would delete gets one, decided by its model: tag the outermost deleted
// manifest (its children are marked through it), simulate again, repeat.
//
// s is the storage without this owner's keep-tags; now is as it is, which
// says which tags are already there.
func chooseShield(s, now *storage.Storage, opts Options, keep []keptNode) ([]protectresult.Kept, error) {
	tagged := map[int]bool{}
	if opts.Model == gcresult.Distribution28 {
		for i := range keep {
			tagged[i] = true
		}
		return kept(now, opts, keep, tagged)
	}
	for range len(keep) + 1 {
		ks, err := kept(now, opts, keep, tagged)
		if err != nil {
			return nil, err
		}
		plan, err := gc.Simulate(s.WithTags(tagLinks(ks)), opts.Model, opts.DeleteUntagged)
		if err != nil {
			return nil, fmt.Errorf("simulating the collector: %w", err)
		}
		deleted := map[string]bool{}
		for _, m := range plan.Manifests {
			deleted[m.Repository+"@"+m.Digest] = true
		}
		added := false
		for i, n := range keep {
			if tagged[i] || !deleted[n.repository+"@"+n.digest] || n.parent != "" && deleted[n.repository+"@"+n.parent] {
				continue
			}
			tagged[i], added = true, true
		}
		if !added {
			return ks, nil
		}
	}
	return kept(now, opts, keep, tagged)
}

// kept is the keep set with the tags of the manifests tagged marks, and
// whether each tag is already there.
func kept(s *storage.Storage, opts Options, keep []keptNode, tagged map[int]bool) ([]protectresult.Kept, error) {
	out := make([]protectresult.Kept, 0, len(keep))
	for i, n := range keep {
		k := protectresult.Kept{Repository: n.repository, Digest: n.digest, MediaType: n.mediaType, Why: n.why, Uses: n.uses}
		if tagged[i] {
			tag, err := TagName(opts.Prefix, opts.Owner, n.digest)
			if err != nil {
				return nil, err
			}
			k.Tag, k.Status = tag, protectresult.Planned
			if t := s.Repositories[n.repository].Tags[tag]; t != nil && t.Current == n.digest {
				k.Status = protectresult.Present
			}
		}
		out = append(out, k)
	}
	return out, nil
}
