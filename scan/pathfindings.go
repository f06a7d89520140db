package scan

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// piece is one thing of an image a node pulls: its tag or a node of its
// tree, as the pull path's log names it.
type piece struct {
	key    string // repository:tag or repository@digest
	what   string // "tag v1", "manifest linux/amd64 sha256:…"
	digest string
	isBlob bool
}

// pieces lists ref's tag and every manifest and blob of its tree.
func pieces(ref name.Reference, tree *types.Node) []piece {
	var out []piece
	if t, ok := ref.(name.Tag); ok {
		out = append(out, piece{key: t.Name(), what: "tag " + t.TagStr(), digest: ""})
	}
	var visit func(n *types.Node)
	visit = func(n *types.Node) {
		if n == nil {
			return
		}
		if n.Digest != "" {
			what := strings.Join(strings.Fields(n.Kind+" "+n.Label+" "+types.ShortDigest(n.Digest)), " ")
			out = append(out, piece{key: ref.Context().Digest(n.Digest).Name(), what: what, digest: n.Digest, isBlob: n.Kind == "config" || n.Kind == "layer"})
		}
		for _, c := range n.Children {
			visit(c)
		}
	}
	visit(tree)
	return out
}

// notes gathers, per endpoint, the pieces it lacked or could not be asked
// for while a later endpoint served them.
type notes struct {
	lacks, faults map[string][]string // by endpoint description
	faultText     map[string]string
}

// pathFindings says where the node got each piece when it was not simply
// the registry: the mirrors that lacked pieces or could not be asked
// (info), and the pieces only a mirror still serves (at-risk: the
// registry is asked whether it still has the tag and the manifests a
// mirror served; blobs a mirror served are not asked again).
func (s *Scanner) pathFindings(ctx context.Context, ref name.Reference, im *types.Image, log *answerLog) []types.Finding {
	n := notes{lacks: map[string][]string{}, faults: map[string][]string{}, faultText: map[string]string{}}
	var out []types.Finding
	for _, pc := range pieces(ref, im.Tree) {
		as := log.answers(pc.key)
		if len(as) == 0 {
			continue
		}
		if as[len(as)-1].err != nil {
			saidBy(im, pc, as) // lost: the walk's finding gets what each endpoint said
			continue
		}
		for _, a := range as[:len(as)-1] {
			n.add(a, pc.what)
		}
		if last := as[len(as)-1]; last.ep.Mirror && !pc.isBlob {
			if f, ok := s.mirrorOnly(ctx, ref, im, pc, describe(last.ep)); ok {
				out = append(out, f)
			}
		}
	}
	return append(out, n.findings()...)
}

// saidBy adds to the walk's finding of a lost piece what every endpoint of
// the pull path answered: containerd reports the first endpoint's error
// alone, which may be a mirror's while the registry's 404 is what decides.
func saidBy(im *types.Image, pc piece, as []epAnswer) {
	var said []string
	for _, a := range as {
		said = append(said, describe(a.ep)+": "+a.err.Error())
	}
	for i, f := range im.Findings {
		lostTag := pc.digest == "" && f.Digest == "" && (f.Code == types.TagMissing || f.Code.Fault())
		if f.Severity >= types.SeverityWarning && (lostTag || pc.digest != "" && f.Digest == pc.digest) {
			im.Findings[i].Message += "; the node's pull path answered: " + strings.Join(said, "; ")
			return
		}
	}
}

// add notes one endpoint's answer to a piece a later endpoint served.
func (n notes) add(a epAnswer, what string) {
	ep := describe(a.ep)
	switch {
	case errors.Is(a.err, types.ErrNotFound) || errors.Is(a.err, errBlocked):
		n.lacks[ep] = append(n.lacks[ep], what)
	default:
		n.faults[ep] = append(n.faults[ep], what)
		if _, ok := n.faultText[ep]; !ok {
			n.faultText[ep] = a.err.Error()
		}
	}
}

// findings is one info finding per endpoint: what it lacked, what it could
// not be asked for.
func (n notes) findings() []types.Finding {
	var out []types.Finding
	for _, ep := range sortedKeys(n.lacks) {
		out = append(out, types.NewFinding(types.MirrorLacks, "", "",
			"%s does not hold %s; the node falls back to the next endpoint, which serves it", ep, list(n.lacks[ep])))
	}
	for _, ep := range sortedKeys(n.faults) {
		out = append(out, types.NewFinding(types.MirrorUnavailable, "", "",
			"%s could not be asked for %s (%s); the node moves on to the next endpoint, which serves it", ep, list(n.faults[ep]), n.faultText[ep]))
	}
	return out
}

// mirrorOnly asks the registry itself for a tag or manifest a mirror
// served: gone there is MirrorOnly; a tag the registry resolves to another
// digest than the mirror's is MirrorStale. A fault says nothing.
func (s *Scanner) mirrorOnly(ctx context.Context, ref name.Reference, im *types.Image, pc piece, mirror string) (types.Finding, bool) {
	var err error
	if pc.digest == "" {
		var d walk.Descriptor
		d, err = s.c.resolve(ctx, ref.(name.Tag))
		if err == nil && d.Digest != im.Digest {
			return types.NewFinding(types.MirrorStale, im.Digest, "",
				"%s resolves %s to %s, the registry to %s: the node runs the mirror's digest", mirror, pc.what, types.ShortDigest(im.Digest), types.ShortDigest(d.Digest)), true
		}
	} else {
		err = remote{s.c}.HasManifest(ctx, ref.Context(), pc.digest)
	}
	if err == nil || !errors.Is(err, types.ErrNotFound) {
		return types.Finding{}, false
	}
	return types.NewFinding(types.MirrorOnly, pc.digest, "",
		"only %s still serves %s: the registry answered %v; the node pulls it from the mirror, one eviction from broken", mirror, pc.what, err), true
}

func list(ws []string) string {
	const most = 3
	if len(ws) > most {
		return strings.Join(ws[:most], ", ") + fmt.Sprintf(" and %d more", len(ws)-most)
	}
	return strings.Join(ws, ", ")
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
