package render

import (
	"fmt"
	"regexp"
	"strings"
)

// markers hands out unique strings to put in place of a value, so that a
// render says which value reached which image. A marker is lowercase
// letters and digits, valid in a repository name and in a tag, of one
// length (no marker is part of another), and nothing a chart or manifest
// would hold by chance.
type markers struct {
	seen   map[string]int // marker to its index in what the caller keeps
	byItem map[int]string
}

var markerPattern = regexp.MustCompile(`zq[0-9]{6}qz`)

// next returns a new marker for the caller's item i.
func (m *markers) next(i int) string {
	if m.seen == nil {
		m.seen, m.byItem = map[string]int{}, map[int]string{}
	}
	s := fmt.Sprintf("zq%06dqz", len(m.seen)+1)
	m.seen[s], m.byItem[i] = i, s
	return s
}

// text is the marker of the caller's item i.
func (m *markers) text(i int) string { return m.byItem[i] }

// find returns the caller's items whose markers s holds, in order.
func (m *markers) find(s string) []int {
	var out []int
	for _, mk := range markerPattern.FindAllString(s, -1) {
		if i, ok := m.seen[mk]; ok {
			out = append(out, i)
		}
	}
	return out
}

// only returns the caller's item when s is exactly one marker.
func (m *markers) only(s string) (int, bool) {
	i, ok := m.seen[s]
	return i, ok
}

// splitRef splits an image reference as kustomize does (its
// image.Split): the name, the tag after the last ":" past the first "/",
// the digest after "@". Markers hold none of these characters, so a marked
// reference splits where the real one does.
func splitRef(ref string) (name, tag, digest string) {
	search, off := ref, 0
	if i := strings.Index(ref, "/"); i > 0 {
		search, off = ref[i:], i
	}
	id, ic := strings.Index(search, "@"), strings.Index(search, ":")
	switch {
	case ic < 0 && id < 0:
		return ref, "", ""
	case id >= 0 && (id < ic || ic < 0):
		return ref[:off+id], "", ref[off+id+1:]
	case id >= 0:
		return ref[:off+ic], ref[off+ic+1 : off+id], ref[off+id+1:]
	}
	return ref[:off+ic], ref[off+ic+1:], ""
}
