package pin

import (
	stdctx "context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/render"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
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
	Running func(img yamlfile.Image) (digest string, err error)
	// FollowSymlinks lets Write replace the target of a symlink that
	// resolves outside the root it was found under (for a root that is a
	// file, outside its folder); otherwise such a file is left as is
	// (KindUnwritable).
	FollowSymlinks bool
	// HelmValues are the values files the charts under the roots are
	// rendered with, after their values.yaml (see render.WithValues).
	HelmValues []render.ValuesFile
	// Fetch, when set, fetches the dependencies of those charts that are
	// not in their charts/ folder (see render.WithFetch); nil fetches
	// none.
	Fetch *render.Fetch
	// FetchRemote lets kustomize fetch the remote bases the trees'
	// kustomizations name (see render.WithRemote); false fetches none.
	FetchRemote bool
	// Admission, when set, is applied to each tree walked, with the uses
	// of its sites, before its pin is chosen (admission.Checker.Apply): a
	// digest an enforcing image policy would refuse for a signature or
	// attestation that is gone is then broken, and refused as a broken
	// tree is. Not applied with AllowBroken, which walks no tree.
	Admission func(ctx stdctx.Context, res *types.Result) error
	// Nodes, when set, gives the platforms of the nodes img's pods may
	// run on, each with those nodes (NodesFrom a cluster's inventory;
	// NodesOf platforms, with no node named); nil when unknown. A pin to a
	// single-platform manifest (its config's os/architecture/variant) that
	// some node of an image's sites cannot run is refused
	// (KindPlatformMismatch), naming the index to pin instead when a tag
	// of the repository reaches one that lists it. An index is never
	// refused: each node pulls its own child.
	Nodes func(img yamlfile.Image) []types.NodePlatform
	// Problems are findings met before Run, such as an image policy that
	// could not be read (KindPolicyUnread): Run reports them first, and
	// pins the rest as it would without them.
	Problems []pinresult.Finding
}

// Run pins the image references in the files and folders under roots
// (folders recursively, skipping dot folders; *.yaml, *.yml and *.json; a
// file named explicitly is read whatever its name). A file that does not
// parse is reported and left as is; the run goes on. Run fails only on a
// bad Config or when ctx ends.
//
// Kustomizations and charts are rendered (see render.Find) and each image
// they render is pinned where it is set: the images: entry that names it
// last (its digest:), the manifest's image: when no kustomization renames
// it in a way that would carry the digest along, or the values key (the
// tag gains @digest, or the digest key the template uses is set). Every
// app is rendered again with the edits, before anything is written: an
// edit that changes more than the images it pins is not made.
func Run(ctx stdctx.Context, roots []string, c Config) (*pinresult.Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	trees := c.render(roots)
	r, parsed := c.read(trees)
	r.Findings = append(slices.Clone(c.Problems), r.Findings...)
	uses := c.uses(trees)
	if c.Check {
		r.Findings = append(r.Findings, c.check(parsed)...)
		r.Findings = append(r.Findings, c.checkRendered(uses)...)
		return r, nil
	}
	p := newPlanner(c, parsed)
	p.addUses(uses)
	if err := p.resolve(ctx); err != nil {
		return r, err
	}
	r.Written = c.Write
	for i, pf := range parsed {
		r.Findings = append(r.Findings, p.findings(pf.imgs)...)
		c.edit(r, &r.Files[i], pf, p.lookup)
	}
	c.pinRendered(r, trees, uses, p)
	r.Requests = c.Scanner.Requests()
	return r, ctx.Err()
}

// read reads and parses the manifest files of trees no kustomization or
// chart owns, and the Flux HelmReleases and Argo CD Applications of the
// files kustomizations list, keeping the images each holds as
// render.Tree.Own says. A file that cannot be read or parsed is a finding, and is
// left out; so is each problem the tree's walk and render met.
func (c Config) read(trees []*render.Tree) (*pinresult.Report, []parsedFile) {
	r := &pinresult.Report{}
	var parsed []parsedFile
	for _, t := range trees {
		root := t.Root
		r.Findings = append(r.Findings, treeFindings(t)...)
		for _, p := range slices.Concat(t.Plain, t.GitOpsFiles) {
			data, err := yamlfile.ReadFile(p)
			if err != nil {
				r.Findings = append(r.Findings, readFinding(p, err))
				continue
			}
			imgs, err := yamlfile.Parse(p, data)
			if err != nil {
				r.Findings = append(r.Findings, parseFinding(p, err))
				continue
			}
			imgs = t.Own(p, imgs) // a file a kustomization renders: its GitOps objects' images only
			r.Files = append(r.Files, pinresult.File{Path: p, Old: data})
			parsed = append(parsed, parsedFile{root: root, path: p, data: data, imgs: imgs})
		}
	}
	return r, parsed
}

// check reports every wanted reference that is not pinned (KindUnpinned)
// or cannot be (KindInvalid), asking no registry.
func (c Config) check(parsed []parsedFile) []pinresult.Finding {
	var out []pinresult.Finding
	for _, pf := range parsed {
		for _, img := range pf.imgs {
			if !c.wanted(img) {
				continue
			}
			ref, err := parse(img.Ref)
			f := pinresult.Finding{Kind: pinresult.KindUnpinned, File: img.File, Line: img.Line, Ref: img.Ref,
				Message: fmt.Sprintf("%s is not pinned to a digest", img.Ref)}
			switch {
			case err != nil:
				f.Kind, f.Message = pinresult.KindInvalid, fmt.Sprintf("%q is not a valid image reference: %v", img.Ref, errors.Unwrap(err))
			case ref.Pinned():
				continue
			}
			out = append(out, f)
		}
	}
	return out
}

// edit rewrites the file pf with the digests lookup gives and, with Write,
// replaces it (see replace). Its findings and changes go into r, its new
// contents into f (nil when it was to be written and was not).
func (c Config) edit(r *pinresult.Report, f *pinresult.File, pf parsedFile, lookup Lookup) {
	own := map[yamlfile.Image]bool{}
	for _, img := range pf.imgs {
		own[img] = true
	}
	only := func(img yamlfile.Image) (string, bool, error) {
		if !own[img] {
			return "", false, nil // pinned where it is rendered, if at all
		}
		return lookup(img)
	}
	out, changes, err := Rewrite(pf.path, pf.data, only, c.options()...)
	if err != nil {
		r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindUnwritable, File: pf.path, Message: err.Error()})
		return
	}
	for _, ch := range changes {
		if ch.Skipped != "" {
			r.Findings = append(r.Findings, pinresult.Finding{Kind: pinresult.KindNotEdited, File: ch.File, Line: ch.Line, Ref: ch.Old,
				Message: fmt.Sprintf("%s %s not edited: %s; pin it by hand to %s", ch.Field, ch.Old, ch.Skipped, ch.New)})
		}
	}
	f.New = out
	if c.Write && f.Changed() {
		if fd := c.replace(pf, out); fd != nil {
			r.Findings = append(r.Findings, *fd)
			f.New = nil
			for j := range changes {
				if changes[j].Skipped == "" {
					changes[j].Skipped = "file not written: " + string(fd.Kind)
				}
			}
		}
	}
	r.Changes = append(r.Changes, changes...)
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
	imgs []yamlfile.Image
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

func (c Config) wanted(img yamlfile.Image) bool {
	return c.Images == nil || c.Images.MatchString(img.Ref)
}

// readFinding reports a file yamlfile.ReadFile did not read: skipped when
// it is not a regular file, else unwritable.
func readFinding(file string, err error) pinresult.Finding {
	var skip *yamlfile.SkipError
	if errors.As(err, &skip) {
		return pinresult.Finding{Kind: pinresult.KindSkipped, File: file, Message: skip.Reason}
	}
	return pinresult.Finding{Kind: pinresult.KindUnwritable, File: file, Message: err.Error()}
}

func parseFinding(file string, err error) pinresult.Finding {
	var skip *yamlfile.SkipError
	if errors.As(err, &skip) {
		return pinresult.Finding{Kind: pinresult.KindTemplate, File: file, Message: "skipped: " + skip.Reason}
	}
	f := pinresult.Finding{Kind: pinresult.KindUnparseable, File: file, Message: err.Error()}
	var pe *yamlfile.ParseError
	if errors.As(err, &pe) {
		f.Line, f.Message = pe.Line, "skipped, left as is: "+pe.Msg
	}
	return f
}

// treeFindings are the problems the walk of t (KindUnwritable) and its
// render (KindUnrendered; KindLeftOut for what was left out on purpose)
// met.
func treeFindings(t *render.Tree) []pinresult.Finding {
	var out []pinresult.Finding
	for _, err := range t.Errs {
		f := pinresult.Finding{Kind: pinresult.KindUnwritable, File: t.Root, Message: err.Error()}
		var (
			pe *fs.PathError
			re *render.Error
		)
		switch {
		case errors.As(err, &re):
			f.Kind, f.File, f.Line, f.Message = pinresult.KindUnrendered, re.File, re.Line, re.Msg
			if re.Notice {
				f.Kind = pinresult.KindLeftOut
			}
		case errors.As(err, &pe):
			f.File = pe.Path
		}
		out = append(out, f)
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
