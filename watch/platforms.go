package watch

import (
	"sync"

	"github.com/regcheck/regcheck/types"
)

// platforms are the indexes the walks found, by child manifest digest:
// what tells two architectures running one index (their imageIDs differ
// on CRI-O, which reports the platform manifest's digest) from a tag
// that moved. Safe for concurrent use; it holds one entry per platform
// manifest of the images in use.
type platforms struct {
	mu    sync.Mutex
	index map[string]string // child manifest digest → its index's digest
}

// siblings reports whether a and b are known children of one index, or
// one is the index and the other its child.
func (p *platforms) siblings(a, b string) bool {
	if a == "" || b == "" || a == b {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ia, oka := p.index[a]
	ib, okb := p.index[b]
	return oka && okb && ia == ib || oka && ia == b || okb && ib == a
}

// learn records the indexes of res's images; a walk of everything (all)
// replaces what was known, so images no longer in use are forgotten.
func (p *platforms) learn(res *types.Result, all bool) {
	found := map[string]string{}
	for _, im := range res.Images {
		if t := im.Tree; t != nil && t.Kind == "index" {
			for _, c := range t.Children {
				if c.Kind == "manifest" && c.Digest != "" {
					found[c.Digest] = t.Digest
				}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if all || p.index == nil {
		p.index = found
		return
	}
	for c, i := range found {
		p.index[c] = i
	}
}
