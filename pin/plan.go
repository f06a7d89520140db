package pin

import (
	"cmp"
	stdctx "context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
	"github.com/regcheck/regcheck/yamlfile"
)

// plan is what Run does with one distinct reference and running digest.
type plan struct {
	ref     string // as first written
	norm    string // normalized
	tag     string // normalized repo:tag to resolve, "" for a digest-only reference
	pinned  string // the digest the reference carries, if any
	running string // the digest Config.Running gave
	change  bool   // the reference is to be (re)pinned

	index    string // the index listing running, pinned in its stead
	platform string // the index of the tag's that does not list running, a platform manifest

	digest    string                    // the digest to pin to, once resolved
	mediaType string                    // the digest's
	mismatch  map[yamlfile.Image]string // at each site some node of whose cannot run digest (a single-platform manifest), why
	instead   string                    // the index listing digest, to pin instead
	verdict   types.Verdict
	problems  []string // the walk's findings, for the messages
	fault     string   // why the digest could not be had
	refused   []string // what admission refuses a whole tree for (signature-missing), when nothing else breaks it

	gcCheck  string // repo:tag@digest to ask Tagged about
	untagged bool
	gcErr    string
}

// site is one image site: the plan it follows, or why it has none.
type site struct {
	pl  *plan
	err error // Config.Running's error; pl is nil
}

type planner struct {
	c     Config
	s     *scan.Scanner
	plans map[string]*plan // by normalized reference and running digest
	order []*plan
	sites map[yamlfile.Image]*site
}

// newPlanner plans every wanted image of the parsed files.
func newPlanner(c Config, parsed []parsedFile) *planner {
	p := &planner{c: c, s: c.Scanner, plans: map[string]*plan{}, sites: map[yamlfile.Image]*site{}}
	for _, pf := range parsed {
		for _, img := range pf.imgs {
			if c.wanted(img) {
				p.add(img)
			}
		}
	}
	return p
}

// add plans img, asking Config.Running for its digest when it is to be
// (re)pinned.
func (p *planner) add(img yamlfile.Image) {
	if p.sites[img] != nil {
		return
	}
	norm, _, err := p.s.Parse(img.Ref)
	ref, rerr := parse(img.Ref)
	if err != nil || rerr != nil {
		return // left for Check to report
	}
	pinned, tag := ref.Digest, ""
	if t := ref.EffectiveTag(); t != "" {
		tag = ref.Repo + ":" + t
	}
	change := pinned == "" || p.c.Update && (tag != "" || p.c.Running != nil)
	running := ""
	if change && p.c.Running != nil {
		if running, err = p.running(img); err != nil {
			p.sites[img] = &site{err: err}
			return
		}
	}
	k := norm + " " + running
	pl := p.plans[k]
	if pl == nil {
		pl = &plan{ref: img.Ref, norm: norm, tag: tag, pinned: pinned, running: running, change: change}
		p.plans[k] = pl
		p.order = append(p.order, pl)
	}
	p.sites[img] = &site{pl: pl}
}

// running asks Config.Running for img's digest and checks that it is one.
func (p *planner) running(img yamlfile.Image) (string, error) {
	d, err := p.c.Running(img)
	if err != nil {
		return "", err
	}
	if _, err := digest.Parse(d); err != nil {
		return "", fmt.Errorf("running digest %q: %w", d, err)
	}
	return d, nil
}

// resolve finds every plan's digest, in phases: a running digest that is a
// platform manifest gives way to its index, or is refused; existing pins
// that stay are kept; every other digest is found by a walk of its tree
// (with AllowBroken, a HEAD of its tag); a single-platform manifest is
// checked against the platforms of the nodes its sites may run on
// (Config.Nodes); last, the pins a registry GC could take are checked to
// be tagged.
func (p *planner) resolve(ctx stdctx.Context) error {
	p.checkPlatforms(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	p.keepPins()
	todo := p.targets()
	if p.c.AllowBroken {
		p.resolveTags(ctx, todo)
	} else if err := p.walkTargets(ctx, todo); err != nil {
		return err
	}
	if err := p.checkNodePlatforms(ctx); err != nil {
		return err
	}
	return p.checkTagged(ctx)
}

// checkPlatforms runs checkPlatform on every plan that pins a running
// digest: a runtime may report the platform manifest it pulled rather than
// the index.
func (p *planner) checkPlatforms(ctx stdctx.Context) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, pl := range p.order {
		if pl.change && pl.running != "" {
			g.Go(func() error {
				p.checkPlatform(gctx, pl)
				return nil
			})
		}
	}
	g.Wait()
}

// checkPlatform looks at what pl's running digest is. An index, or an image
// manifest when the tag points at an image manifest too, is pinned as it
// is. An image manifest that the tag's index lists is a platform child
// (CRI-O reports those): the index is pinned instead. One that the tag's
// index does not list came from an index the tag no longer points at, and
// is refused: a pin must never be a platform child. A running digest the
// registry does not serve is left to the walk to report.
func (p *planner) checkPlatform(ctx stdctx.Context, pl *plan) {
	m, err := p.s.Manifest(ctx, trimTag(pl.norm)+"@"+pl.running)
	if err != nil || walk.IsIndex(m.MediaType) {
		return
	}
	// Compare with the tag's index; for a digest-only reference, with the
	// index it is pinned to.
	bm, err := p.s.Manifest(ctx, cmp.Or(pl.tag, pl.norm))
	if errors.Is(err, types.ErrNotFound) {
		return // the tag is gone: nothing to compare with
	}
	var children []ocispec.Descriptor
	if err == nil {
		if !walk.IsIndex(bm.MediaType) {
			return
		}
		children, err = bm.Children()
	}
	if err != nil {
		pl.fault = fmt.Sprintf("could not check whether the running digest %s is a platform manifest: %v", pl.running, err)
		return
	}
	for _, c := range children {
		if c.Digest.String() == pl.running {
			pl.index = bm.Digest
			return
		}
	}
	pl.platform = bm.Digest
}

// keepPins gives the plans that leave their pin as it is that pin's digest,
// to be checked for a tag.
func (p *planner) keepPins() {
	for _, pl := range p.order {
		if !pl.change && pl.pinned != "" {
			pl.digest = pl.pinned
			pl.gcCheck = pl.norm
		}
	}
}

// target is a plan whose digest is still to be found, and the reference
// to find it by.
type target struct {
	pl  *plan
	ref string
}

// targets lists the plans still to resolve, each with its tag, or its
// running digest (the index listing it, when it is a platform manifest).
func (p *planner) targets() []target {
	var out []target
	for _, pl := range p.order {
		if !pl.change || pl.platform != "" || pl.fault != "" {
			continue
		}
		ref := pl.tag
		if pl.running != "" {
			ref = trimTag(pl.norm) + "@" + cmp.Or(pl.index, pl.running)
		}
		out = append(out, target{pl: pl, ref: ref})
	}
	return out
}

// resolveTags finds each target's digest with one HEAD, walking nothing
// (AllowBroken).
func (p *planner) resolveTags(ctx stdctx.Context, todo []target) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, t := range todo {
		g.Go(func() error {
			d, mt, err := p.s.Resolve(gctx, t.ref)
			if err != nil {
				t.pl.fault = err.Error()
				return nil
			}
			t.pl.digest, t.pl.mediaType = d, mt
			return nil
		})
	}
	g.Wait()
}

// walkTargets walks each target's tree as scan does, for its digest and
// verdict: a broken tree refuses the pin.
func (p *planner) walkTargets(ctx stdctx.Context, todo []target) error {
	if len(todo) == 0 {
		return nil
	}
	ts := make([]types.Target, len(todo))
	uses := p.usesByPlan()
	for i, t := range todo {
		ts[i] = types.Target{Ref: t.ref, Uses: uses[t.pl]}
		if len(ts[i].Uses) == 0 {
			ts[i].Uses = []types.Use{{Source: "file"}}
		}
	}
	res, err := p.s.Run(ctx, ts)
	if err != nil {
		return err
	}
	if p.c.Admission != nil {
		if err := p.c.Admission(ctx, res); err != nil {
			return err
		}
	}
	byRef := map[string]*types.Image{}
	for _, im := range res.Images {
		byRef[im.Reference] = im
	}
	for _, t := range todo {
		norm, _, _ := p.s.Parse(t.ref)
		t.pl.walked(byRef[norm])
	}
	return nil
}

// usesByPlan are the uses of each plan's sites (file, line, workload),
// for the admission policies that select them.
func (p *planner) usesByPlan() map[*plan][]types.Use {
	out := map[*plan][]types.Use{}
	for img, s := range p.sites {
		if s.pl != nil {
			out[s.pl] = append(out[s.pl], types.Use{Source: "file", File: img.File, Line: img.Line, Kind: img.Kind, Namespace: img.Namespace, Name: img.Name})
		}
	}
	for _, us := range out {
		slices.SortFunc(us, func(a, b types.Use) int { return cmp.Or(strings.Compare(a.File, b.File), a.Line-b.Line) })
	}
	return out
}

// walked takes in what the walk found for pl: nil when it did not walk it.
func (pl *plan) walked(im *types.Image) {
	if im == nil {
		pl.fault = "not walked"
		return
	}
	pl.verdict = im.Verdict
	treeBroken := false
	for _, f := range im.Findings {
		pl.problems = append(pl.problems, string(f.Code)+": "+f.Message)
		switch {
		case f.Severity < types.SeverityCritical:
		case f.Code == types.SignatureMissing || f.Code == types.SignedAttestationMissing || f.Code == types.SignatureRefused || f.Code == types.AttestationRefused:
			pl.refused = append(pl.refused, string(f.Code)+": "+f.Message)
		default:
			treeBroken = true
		}
	}
	if treeBroken {
		pl.refused = nil
	}
	if im.Digest == "" && im.Verdict != types.Broken {
		pl.fault = strings.Join(pl.problems, "; ")
		return
	}
	pl.digest, pl.mediaType = im.Digest, im.MediaType
}

// checkTagged asks, for every pin a registry GC that deletes untagged
// manifests could take, whether a tag still keeps its digest: an existing
// pin that stays, and a running digest, which may not be its tag's.
func (p *planner) checkTagged(ctx stdctx.Context) error {
	for _, pl := range p.order {
		if pl.change && pl.running != "" && pl.digest != "" && pl.verdict != types.Broken && len(pl.mismatch) == 0 {
			pl.gcCheck = trimDigest(pl.norm) + "@" + pl.digest
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, pl := range p.order {
		if pl.gcCheck == "" {
			continue
		}
		g.Go(func() error {
			// The common case costs one HEAD, shared: the tag still
			// points at the digest, and no tags are listed.
			if pl.tag != "" {
				if d, _, err := p.s.Resolve(gctx, pl.tag); err == nil && d == pl.digest {
					return nil
				}
			}
			ok, err := p.s.Tagged(gctx, pl.gcCheck)
			switch {
			case err != nil:
				pl.gcErr = err.Error()
			case !ok:
				pl.untagged = true
			}
			return nil
		})
	}
	g.Wait()
	return ctx.Err()
}

// lookup is the Lookup Rewrite calls: the planned digest, unless the pin
// is refused.
func (p *planner) lookup(img yamlfile.Image) (string, bool, error) {
	s := p.sites[img]
	if s == nil || s.pl == nil || !p.c.wanted(img) {
		return "", false, nil
	}
	pl := s.pl
	if !pl.change || pl.digest == "" || pl.fault != "" || pl.platform != "" || pl.mismatch[img] != "" ||
		pl.verdict == types.Broken && !p.c.AllowBroken {
		return "", false, nil
	}
	return pl.digest, true, nil
}

// findings are the findings at each of imgs that has a site.
func (p *planner) findings(imgs []yamlfile.Image) []pinresult.Finding {
	var out []pinresult.Finding
	for _, img := range imgs {
		if s := p.sites[img]; s != nil {
			out = append(out, s.findings(img)...)
		}
	}
	return out
}

// findings are the site's findings at img.
func (s *site) findings(img yamlfile.Image) []pinresult.Finding {
	if s.pl != nil {
		return s.pl.findings(img)
	}
	f := pinresult.Finding{Kind: pinresult.KindUnresolved, File: img.File, Line: img.Line, Ref: img.Ref}
	what := fmt.Sprintf("%s %s %s", img.Kind, path.Join(img.Namespace, img.Name), slot(img))
	var amb *AmbiguousError
	switch {
	case errors.Is(s.err, ErrNoRecord):
		f.Kind, f.Message = pinresult.KindNoRecord, fmt.Sprintf("no running digest recorded for %s; %s left as is", what, img.Ref)
	case errors.As(s.err, &amb):
		f.Kind, f.Message = pinresult.KindAmbiguous, fmt.Sprintf("which digest runs %s is ambiguous: %v; %s left as is", what, s.err, img.Ref)
	default:
		f.Message = fmt.Sprintf("running digest of %s: %v; %s left as is", what, s.err, img.Ref)
	}
	return []pinresult.Finding{f}
}

// findings are the plan's findings at one use. A refusal names no flag:
// Config.AllowBroken pins a broken tree anyway (KindBroken), a Config with
// no Running pins by tag (KindPlatform); a command names its own flags.
func (pl *plan) findings(img yamlfile.Image) []pinresult.Finding {
	f := func(k pinresult.Kind, msg string) pinresult.Finding {
		return pinresult.Finding{Kind: k, File: img.File, Line: img.Line, Ref: img.Ref, Digest: pl.digest, Message: msg}
	}
	var out []pinresult.Finding
	switch {
	case !pl.change:
	case pl.platform != "":
		out = append(out, f(pinresult.KindPlatform, fmt.Sprintf("the runtime reports %s, a platform manifest; %s points at index %s, which does not list it: "+
			"the index it came from is no longer what the tag points at. %s left as is (pin by tag)",
			pl.running, cmp.Or(pl.tag, pl.norm), pl.platform, img.Ref)))
	case pl.mismatch[img] != "":
		out = append(out, f(pinresult.KindPlatformMismatch, pl.mismatchFinding(img.Ref, pl.mismatch[img])))
	case pl.fault != "":
		out = append(out, f(pinresult.KindUnresolved, fmt.Sprintf("%s left as is: %s", img.Ref, pl.fault)))
	case pl.verdict == types.Broken && len(pl.refused) > 0:
		out = append(out, f(pinresult.KindBroken, fmt.Sprintf("refusing to pin %s to %s: the image is whole, but an enforcing image policy would refuse it (%s); "+
			"sign the digest again (cosign sign, or cosign attest for an attestation) and push what the policy requires, then pin; left as is",
			img.Ref, pl.digest, strings.Join(pl.refused, "; "))))
	case pl.verdict == types.Broken:
		out = append(out, f(pinresult.KindBroken, fmt.Sprintf("refusing to pin %s to %s, whose tree is broken (%s); left as is",
			img.Ref, pl.digest, strings.Join(pl.problems, "; "))))
	case pl.verdict == types.Unknown:
		out = append(out, f(pinresult.KindUnverified, fmt.Sprintf("pinned %s to %s, but the walk was incomplete: %s", img.Ref, pl.digest, strings.Join(pl.problems, "; "))))
	case pl.verdict == types.AtRisk:
		out = append(out, f(pinresult.KindAtRisk, fmt.Sprintf("pinned %s to %s: %s", img.Ref, pl.digest, strings.Join(pl.problems, "; "))))
	}
	if pl.untagged {
		out = append(out, f(pinresult.KindUntagged, fmt.Sprintf("no tag points at %s any more: a registry GC that deletes untagged manifests will delete it; tag it, or re-pin", pl.digest)))
	}
	if pl.gcErr != "" {
		out = append(out, f(pinresult.KindUnresolved, "could not check that a tag keeps "+pl.digest+": "+pl.gcErr))
	}
	return out
}

func trimDigest(norm string) string {
	s, _, _ := strings.Cut(norm, "@")
	return s
}

// trimTag returns the repository of a normalized reference.
func trimTag(norm string) string {
	if r, err := imageref.Parse(norm); err == nil {
		return r.Repo
	}
	return trimDigest(norm)
}
