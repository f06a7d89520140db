package pin

import (
	"bytes"
	"cmp"
	stdctx "context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/internal/atomicfile"
	"github.com/regcheck/regcheck/manifest"
	"github.com/regcheck/regcheck/scan"
)

// Config says what Run does. The zero value previews pins to the tags'
// current digests and needs Scanner.
type Config struct {
	// Scanner asks the registries. Not needed with Check.
	Scanner *scan.Scanner
	// Check changes nothing and asks no registry: it reports every unpinned
	// reference (KindUnpinned, KindInvalid).
	Check bool
	// Write replaces the files Run changes (atomically, see atomicfile.Replace), each
	// only if it still holds what Run read (KindChanged otherwise).
	// Otherwise Report.Files holds the would-be contents.
	Write bool
	// Update also moves existing pins to their tag's current digest.
	Update bool
	// PullPolicy, when set, rewrites "imagePullPolicy: Always" on the
	// containers Run pins (see WithPullPolicy).
	PullPolicy string
	// AllowBroken pins to a digest even when its tree is broken; the tree is
	// then not walked (only each tag is resolved).
	AllowBroken bool
	// Exclude are globs matched against each file's path relative to its
	// root (slash-separated): a pattern matches the path, any of its
	// parent folders, or, without a slash, any single path element.
	Exclude []string
	// Images, when set, limits Run to references (as written) it matches.
	Images *regexp.Regexp
	// Running, when set, gives the digest to pin img to (the digest running
	// in a cluster, say) instead of its tag's current digest. It is asked
	// once per image site, so two workloads on one tag can be pinned to
	// different digests. An error leaves img as it is: ErrNoRecord
	// (KindNoRecord), an *AmbiguousError (KindAmbiguous), anything else
	// KindUnresolved. A platform manifest's digest (CRI-O reports the one it
	// pulled) is pinned as the index the tag points at when that index lists
	// it, and refused otherwise (KindPlatform).
	Running func(img manifest.Image) (digest string, err error)
	// FollowSymlinks lets Write replace the target of a symlink that
	// resolves outside the root it was found under (for a root that is a
	// file, outside its folder); otherwise such a file is left as is
	// (KindUnwritable).
	FollowSymlinks bool
}

// ErrNoRecord is what a Config.Running func returns when it knows no
// running digest for an image.
var ErrNoRecord = errors.New("no running digest recorded")

// AmbiguousError is what a Config.Running func returns when its sources
// disagree on the running digest: the newest records of several clusters
// name different digests.
type AmbiguousError struct {
	// Digests maps each source (a cluster name, or a cluster's pod) to the
	// digest it reports.
	Digests map[string]string
}

func (e *AmbiguousError) Error() string {
	var parts []string
	for _, src := range slices.Sorted(maps.Keys(e.Digests)) {
		parts = append(parts, fmt.Sprintf("%s runs %s", src, e.Digests[src]))
	}
	return "the records disagree: " + strings.Join(parts, ", ")
}

// Kind names a kind of finding. The set is fixed: outputs and CI match on it.
type Kind string

// Finding kinds.
const (
	KindUnpinned    Kind = "unpinned"          // --check: the reference has no digest
	KindInvalid     Kind = "invalid-reference" // the reference cannot be parsed, so cannot be pinned
	KindBroken      Kind = "broken"            // not pinned: the digest's tree is broken (or the tag is gone)
	KindUnresolved  Kind = "unresolved"        // not pinned: the registry could not be asked
	KindUnverified  Kind = "unverified"        // pinned, but the walk could not check the whole tree
	KindAtRisk      Kind = "at-risk"           // pinned; the tree pulls but lost something (attestations)
	KindUntagged    Kind = "untagged-digest"   // no tag points at the pinned digest: a GC deleting untagged manifests deletes it
	KindNotEdited   Kind = "not-edited"        // a YAML alias or a scalar form pin does not edit
	KindNoRecord    Kind = "no-record"         // no running digest known for the container
	KindUnparseable Kind = "unparseable"       // the file is not YAML: skipped, left as is
	KindTemplate    Kind = "template"          // a Helm template: skipped on purpose
	KindUnwritable  Kind = "unwritable"        // the file could not be read or written
	KindChanged     Kind = "changed-on-disk"   // --write: the file changed after Run read it: left as is
	KindAmbiguous   Kind = "ambiguous-record"  // the running digest recorded differs between clusters: left as is
	KindPlatform    Kind = "platform-digest"   // the running digest is a platform manifest of an index the tag no longer points at
	KindSkipped     Kind = "skipped"           // not a regular file (a named pipe, a device, a symlink to nothing): not read
)

// Kinds is every finding kind, for outputs that list rules.
var Kinds = []Kind{KindUnpinned, KindInvalid, KindBroken, KindUnresolved, KindUnverified, KindAtRisk,
	KindUntagged, KindNotEdited, KindNoRecord, KindUnparseable, KindTemplate, KindUnwritable, KindChanged,
	KindAmbiguous, KindPlatform, KindSkipped}

// Level is "error", "warning" or "note", as SARIF and GitHub name them.
func (k Kind) Level() string {
	switch k {
	case KindInvalid, KindBroken, KindUnparseable, KindUnwritable, KindUnresolved, KindChanged, KindPlatform:
		return "error"
	case KindTemplate, KindNoRecord, KindSkipped:
		return "note"
	}
	return "warning"
}

// Fails reports whether a finding of kind k means the run found what it
// is there to catch (exit 1): an unpinned reference, or a pin refused.
func (k Kind) Fails() bool { return k == KindUnpinned || k == KindInvalid || k == KindBroken }

// Incomplete reports whether a finding of kind k means something could not
// be done (exit 3 when nothing fails).
func (k Kind) Incomplete() bool {
	switch k {
	case KindUnparseable, KindUnwritable, KindUnresolved, KindUnverified, KindChanged, KindAmbiguous, KindPlatform:
		return true
	}
	return false
}

// Describe says in a sentence what a finding of kind k means.
func (k Kind) Describe() string {
	switch k {
	case KindUnpinned:
		return "image reference not pinned to a digest"
	case KindInvalid:
		return "image reference cannot be parsed, so cannot be pinned"
	case KindBroken:
		return "not pinned: the registry's tree for the digest is broken"
	case KindUnresolved:
		return "not pinned: the registry could not be asked"
	case KindUnverified:
		return "pinned without checking the whole tree"
	case KindAtRisk:
		return "pinned; the image pulls but lost attestations"
	case KindUntagged:
		return "no tag points at the pinned digest: registry GC of untagged manifests deletes it"
	case KindNotEdited:
		return "reference not edited (YAML alias or unsupported scalar form)"
	case KindNoRecord:
		return "no recorded running digest for the container"
	case KindUnparseable:
		return "file is not valid YAML: skipped"
	case KindTemplate:
		return "Helm template: skipped"
	case KindUnwritable:
		return "file could not be read or written"
	case KindChanged:
		return "file changed on disk while pin ran: left as is"
	case KindAmbiguous:
		return "not pinned: the clusters recorded run different digests"
	case KindPlatform:
		return "not pinned: the running digest is a platform manifest of an index the tag no longer points at"
	case KindSkipped:
		return "not a regular file: skipped"
	}
	return string(k)
}

// Finding is one thing Run reports about a reference or a file.
type Finding struct {
	Kind    Kind   `json:"kind"`
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Ref     string `json:"ref,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	loc := f.File
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, f.Kind, f.Message)
}

// File is one file Run read. New differs from Old when Run changed (or
// would change) it.
type File struct {
	Path     string
	Old, New []byte
}

// Changed reports whether the file was, or would be, edited.
func (f File) Changed() bool { return f.New != nil && !bytes.Equal(f.Old, f.New) }

// Report is what Run did.
type Report struct {
	Files    []File
	Changes  []Change // in file order; a Change with Skipped set was not made
	Findings []Finding
	// Requests counts the registry requests sent, by host, kind and status.
	Requests []scan.RequestCount
}

// Changed returns the files that were, or would be, edited.
func (r *Report) Changed() []File {
	var out []File
	for _, f := range r.Files {
		if f.Changed() {
			out = append(out, f)
		}
	}
	return out
}

// Run pins the image references in the files and folders under roots
// (folders recursively, skipping dot folders; *.yaml, *.yml and *.json; a
// file named explicitly is read whatever its name). A file that does not
// parse is reported and left as is; the run goes on. Run fails only on a
// bad Config or when ctx ends.
func Run(ctx stdctx.Context, roots []string, c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := &Report{}
	var parsed []parsedFile
	for _, root := range roots {
		for _, p := range c.files(root, r) {
			data, err := manifest.ReadFile(p)
			if err != nil {
				r.Findings = append(r.Findings, readFinding(p, err))
				continue
			}
			imgs, err := manifest.Parse(p, data)
			if err != nil {
				r.Findings = append(r.Findings, parseFinding(p, err))
				continue
			}
			r.Files = append(r.Files, File{Path: p, Old: data})
			parsed = append(parsed, parsedFile{root: root, path: p, data: data, imgs: imgs})
		}
	}
	if c.Check {
		for _, pf := range parsed {
			for _, img := range Check(pf.imgs) {
				if !c.wanted(img) {
					continue
				}
				f := Finding{Kind: KindUnpinned, File: img.File, Line: img.Line, Ref: img.Ref,
					Message: fmt.Sprintf("%s is not pinned to a digest", img.Ref)}
				if _, err := reference.ParseNormalizedNamed(img.Ref); err != nil {
					f.Kind, f.Message = KindInvalid, fmt.Sprintf("%q is not a valid image reference: %v", img.Ref, err)
				}
				r.Findings = append(r.Findings, f)
			}
		}
		return r, nil
	}

	p := &planner{c: c, s: c.Scanner, plans: map[string]*plan{}, sites: map[manifest.Image]*site{}}
	for _, pf := range parsed {
		for _, img := range pf.imgs {
			if c.wanted(img) {
				p.add(img)
			}
		}
	}
	if err := p.resolve(ctx); err != nil {
		return r, err
	}
	for i, pf := range parsed {
		for _, img := range pf.imgs {
			if s := p.sites[img]; s != nil {
				r.Findings = append(r.Findings, s.findings(img)...)
			}
		}
		out, changes, err := Rewrite(pf.path, pf.data, p.lookup, c.options()...)
		if err != nil {
			r.Findings = append(r.Findings, Finding{Kind: KindUnwritable, File: pf.path, Message: err.Error()})
			continue
		}
		for _, ch := range changes {
			if ch.Skipped != "" {
				r.Findings = append(r.Findings, Finding{Kind: KindNotEdited, File: ch.File, Line: ch.Line, Ref: ch.Old,
					Message: fmt.Sprintf("%s %s not edited: %s; pin it by hand to %s", ch.Field, ch.Old, ch.Skipped, ch.New)})
			}
		}
		r.Files[i].New = out
		if c.Write && r.Files[i].Changed() {
			// The walk may have taken minutes: write only over what was read.
			err := c.writable(pf.root, pf.path)
			if err == nil {
				err = atomicfile.Replace(pf.path, pf.data, out)
			}
			if err != nil {
				f := Finding{Kind: KindUnwritable, File: pf.path, Message: err.Error()}
				if errors.Is(err, atomicfile.ErrChanged) {
					f.Kind, f.Message = KindChanged, "changed since pin read it; left as is: run pin again"
				}
				r.Findings = append(r.Findings, f)
				r.Files[i].New = nil
				for j := range changes {
					if changes[j].Skipped == "" {
						changes[j].Skipped = "file not written: " + string(f.Kind)
					}
				}
			}
		}
		r.Changes = append(r.Changes, changes...)
	}
	r.Requests = c.Scanner.Requests()
	return r, ctx.Err()
}

// Validate reports a bad value or a missing Scanner.
func (c Config) Validate() error {
	if _, err := makeOptions(c.options()); err != nil {
		return err
	}
	for _, p := range c.Exclude {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("exclude %q: %w", p, err)
		}
	}
	if !c.Check && c.Scanner == nil {
		return errors.New("pin: a Scanner is needed unless Check is set")
	}
	return nil
}

type parsedFile struct {
	root string // the root it was found under
	path string
	data []byte
	imgs []manifest.Image
}

func (c Config) options() []Option {
	var o []Option
	if c.Update {
		o = append(o, WithUpdate())
	}
	if c.PullPolicy != "" {
		o = append(o, WithPullPolicy(c.PullPolicy))
	}
	return o
}

func (c Config) wanted(img manifest.Image) bool {
	return c.Images == nil || c.Images.MatchString(img.Ref)
}

// readFinding reports a file manifest.ReadFile did not read: skipped when
// it is not a regular file, else unwritable.
func readFinding(file string, err error) Finding {
	var skip *manifest.SkipError
	if errors.As(err, &skip) {
		return Finding{Kind: KindSkipped, File: file, Message: skip.Reason}
	}
	return Finding{Kind: KindUnwritable, File: file, Message: err.Error()}
}

func parseFinding(file string, err error) Finding {
	var skip *manifest.SkipError
	if errors.As(err, &skip) {
		return Finding{Kind: KindTemplate, File: file, Message: "skipped: " + skip.Reason}
	}
	f := Finding{Kind: KindUnparseable, File: file, Message: err.Error()}
	var pe *manifest.ParseError
	if errors.As(err, &pe) {
		f.Line, f.Message = pe.Line, "skipped, left as is: "+pe.Msg
	}
	return f
}

// files lists the manifest files under root, leaving out excluded ones.
// Problems reading the tree are added to r.
func (c Config) files(root string, r *Report) []string {
	out, errs := manifest.Files([]string{root}, c.excluded)
	for _, err := range errs {
		f := Finding{Kind: KindUnwritable, File: root, Message: err.Error()}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			f.File = pe.Path
		}
		r.Findings = append(r.Findings, f)
	}
	return out
}

// excluded matches rel against the Exclude globs.
func (c Config) excluded(rel string) bool {
	rel = filepath.ToSlash(rel)
	for _, pat := range c.Exclude {
		pat = strings.TrimSuffix(strings.TrimPrefix(pat, "./"), "/")
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
		if !strings.Contains(pat, "/") {
			for _, el := range strings.Split(rel, "/") {
				if ok, _ := path.Match(pat, el); ok {
					return true
				}
			}
		}
	}
	return false
}

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

	digest   string // the digest to pin to, once resolved
	verdict  scan.Verdict
	problems []string // the walk's findings, for the messages
	fault    string   // why the digest could not be had

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
	sites map[manifest.Image]*site
}

// add plans img, asking Config.Running for its digest when it is to be
// (re)pinned.
func (p *planner) add(img manifest.Image) {
	if p.sites[img] != nil {
		return
	}
	norm, _, err := p.s.Parse(img.Ref)
	if err != nil {
		return // left for Check to report
	}
	named, _ := reference.ParseNormalizedNamed(strings.TrimSpace(img.Ref))
	var pinned, tag string
	if d, ok := named.(reference.Digested); ok {
		pinned = d.Digest().String()
	}
	if t, ok := named.(reference.Tagged); ok {
		tag = reference.TrimNamed(named).String() + ":" + t.Tag()
	} else if pinned == "" {
		tag = reference.TrimNamed(named).String() + ":latest"
	}
	change := pinned == "" || p.c.Update && (tag != "" || p.c.Running != nil)
	running := ""
	if change && p.c.Running != nil {
		d, err := p.c.Running(img)
		if err == nil {
			if _, perr := digest.Parse(d); perr != nil {
				err = fmt.Errorf("running digest %q: %w", d, perr)
			}
		}
		if err != nil {
			p.sites[img] = &site{err: err}
			return
		}
		running = d
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

// resolve finds every plan's digest: a walk of each tag (or running
// digest), or with AllowBroken a HEAD of each tag; then whether the digests
// that differ from their tag's are tagged at all.
func (p *planner) resolve(ctx stdctx.Context) error {
	// A runtime may report the platform manifest it pulled rather than
	// the index: pin the index instead, or refuse.
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
	if err := ctx.Err(); err != nil {
		return err
	}

	var walk []scan.Target
	walked := map[*plan]string{}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, pl := range p.order {
		if !pl.change {
			if pl.pinned != "" {
				pl.digest = pl.pinned
				pl.gcCheck = pl.norm
			}
			continue
		}
		if pl.platform != "" || pl.fault != "" {
			continue
		}
		target := pl.tag
		if pl.running != "" {
			target = trimTag(pl.norm) + "@" + cmp.Or(pl.index, pl.running)
		}
		if !p.c.AllowBroken {
			walk = append(walk, scan.Target{Ref: target, Uses: []scan.Use{{Source: "file"}}})
			walked[pl] = target
			continue
		}
		g.Go(func() error {
			d, _, err := p.s.Resolve(gctx, target)
			if err != nil {
				pl.fault = err.Error()
				return nil
			}
			pl.digest = d
			return nil
		})
	}
	g.Wait()
	if len(walk) > 0 {
		res, err := p.s.Run(ctx, walk)
		if err != nil {
			return err
		}
		byRef := map[string]*scan.Image{}
		for _, im := range res.Images {
			byRef[im.Reference] = im
		}
		for pl, target := range walked {
			norm, _, _ := p.s.Parse(target)
			im := byRef[norm]
			if im == nil {
				pl.fault = "not walked"
				continue
			}
			pl.verdict = im.Verdict
			for _, f := range im.Findings {
				pl.problems = append(pl.problems, string(f.Code)+": "+f.Message)
			}
			if im.Verdict == scan.Broken {
				pl.digest = im.Digest
				continue
			}
			if im.Digest == "" {
				pl.fault = strings.Join(pl.problems, "; ")
				continue
			}
			pl.digest = im.Digest
		}
	}
	// A running digest may not be the tag's: ask whether any tag keeps it.
	for _, pl := range p.order {
		if pl.change && pl.running != "" && pl.digest != "" && pl.verdict != scan.Broken {
			pl.gcCheck = trimDigest(pl.norm) + "@" + pl.digest
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g, gctx = errgroup.WithContext(ctx)
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

// checkPlatform looks at what pl's running digest is. An index, or an image
// manifest when the tag points at an image manifest too, is pinned as it
// is. An image manifest that the tag's index lists is a platform child
// (CRI-O reports those): the index is pinned instead. One that the tag's
// index does not list came from an index the tag no longer points at, and
// is refused: a pin must never be a platform child. A running digest the
// registry does not serve is left to the walk to report.
func (p *planner) checkPlatform(ctx stdctx.Context, pl *plan) {
	m, err := p.s.Manifest(ctx, trimTag(pl.norm)+"@"+pl.running)
	if err != nil || isIndex(m.MediaType) {
		return
	}
	// Compare with the tag's index; for a digest-only reference, with the
	// index it is pinned to.
	base := pl.tag
	if base == "" {
		base = pl.norm
	}
	bm, err := p.s.Manifest(ctx, base)
	if errors.Is(err, scan.ErrNotFound) {
		return // the tag is gone: nothing to compare with
	}
	if err != nil {
		pl.fault = fmt.Sprintf("could not check whether the running digest %s is a platform manifest: %v", pl.running, err)
		return
	}
	if !isIndex(bm.MediaType) {
		return
	}
	children, err := bm.Children()
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

func isIndex(mediaType string) bool {
	return mediaType == ocispec.MediaTypeImageIndex || mediaType == "application/vnd.docker.distribution.manifest.list.v2+json"
}

// lookup is the Lookup Rewrite calls: the planned digest, unless the pin
// is refused.
func (p *planner) lookup(img manifest.Image) (string, bool, error) {
	s := p.sites[img]
	if s == nil || s.pl == nil || !p.c.wanted(img) {
		return "", false, nil
	}
	pl := s.pl
	if !pl.change || pl.digest == "" || pl.fault != "" || pl.platform != "" ||
		pl.verdict == scan.Broken && !p.c.AllowBroken {
		return "", false, nil
	}
	return pl.digest, true, nil
}

// findings are the site's findings at img.
func (s *site) findings(img manifest.Image) []Finding {
	if s.pl != nil {
		return s.pl.findings(img)
	}
	f := Finding{Kind: KindUnresolved, File: img.File, Line: img.Line, Ref: img.Ref}
	what := fmt.Sprintf("%s %s container %s", img.Kind, path.Join(img.Namespace, img.Name), img.Container)
	var amb *AmbiguousError
	switch {
	case errors.Is(s.err, ErrNoRecord):
		f.Kind, f.Message = KindNoRecord, fmt.Sprintf("no running digest recorded for %s; %s left as is", what, img.Ref)
	case errors.As(s.err, &amb):
		f.Kind, f.Message = KindAmbiguous, fmt.Sprintf("which digest runs %s is ambiguous: %v; %s left as is", what, s.err, img.Ref)
	default:
		f.Message = fmt.Sprintf("running digest of %s: %v; %s left as is", what, s.err, img.Ref)
	}
	return []Finding{f}
}

// findings are the plan's findings at one use.
func (pl *plan) findings(img manifest.Image) []Finding {
	f := func(k Kind, msg string) Finding {
		return Finding{Kind: k, File: img.File, Line: img.Line, Ref: img.Ref, Digest: pl.digest, Message: msg}
	}
	var out []Finding
	switch {
	case !pl.change:
	case pl.platform != "":
		out = append(out, f(KindPlatform, fmt.Sprintf("the runtime reports %s, a platform manifest; %s points at index %s, which does not list it: "+
			"the index it came from is no longer what the tag points at. %s left as is (pin by tag: regcheck pin without --from-cluster or --from-records)",
			pl.running, cmp.Or(pl.tag, pl.norm), pl.platform, img.Ref)))
	case pl.fault != "":
		out = append(out, f(KindUnresolved, fmt.Sprintf("%s left as is: %s", img.Ref, pl.fault)))
	case pl.verdict == scan.Broken:
		out = append(out, f(KindBroken, fmt.Sprintf("refusing to pin %s to %s, whose tree is broken (%s); left as is (--allow-broken pins anyway)",
			img.Ref, pl.digest, strings.Join(pl.problems, "; "))))
	case pl.verdict == scan.Unknown:
		out = append(out, f(KindUnverified, fmt.Sprintf("pinned %s to %s, but the walk was incomplete: %s", img.Ref, pl.digest, strings.Join(pl.problems, "; "))))
	case pl.verdict == scan.AtRisk:
		out = append(out, f(KindAtRisk, fmt.Sprintf("pinned %s to %s: %s", img.Ref, pl.digest, strings.Join(pl.problems, "; "))))
	}
	if pl.untagged {
		out = append(out, f(KindUntagged, fmt.Sprintf("no tag points at %s any more: a registry GC that deletes untagged manifests will delete it; tag it, or re-pin", pl.digest)))
	}
	if pl.gcErr != "" {
		out = append(out, f(KindUnresolved, "could not check that a tag keeps "+pl.digest+": "+pl.gcErr))
	}
	return out
}

func trimDigest(norm string) string {
	s, _, _ := strings.Cut(norm, "@")
	return s
}

// trimTag returns the repository of a normalized reference.
func trimTag(norm string) string {
	named, err := reference.ParseNormalizedNamed(norm)
	if err != nil {
		return trimDigest(norm)
	}
	return reference.TrimNamed(named).String()
}
