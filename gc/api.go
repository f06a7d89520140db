package gc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Notes every API-mode report carries.
const (
	noteBlobs    = "API mode lists the manifests a run would delete; it cannot see which blobs manifests share, so which blobs the run deletes is known only in storage mode"
	noteUnseen   = "the registry API shows no manifest that no tag reaches and no in-use image pins: the real run also deletes those (old builds nobody references), which only storage mode lists"
	noteNoDelete = "without --delete-untagged neither distribution 2.x nor 3.x deletes a manifest: every tag, every index child and every pinned digest stays, so no in-use image loses a manifest; the run deletes only blobs no manifest references, which storage mode lists"
)

// CheckAPI predicts the collector run opts describes from what registries
// serve, with no access to their storage, and crosses it with the in-use
// targets. For each registry host the in-use images name (or opts.Host
// alone) it examines the in-use images' repositories (with
// opts.AllRepositories, every repository of the host's _catalog where the
// registry allows it): their tags, the manifests the tags reach through
// indexes, and the in-use pins. Under distribution-2.8 with
// --delete-untagged every manifest no tag names directly is deleted, index
// children included; under distribution-3 only those no tag reaches at
// all. Without --delete-untagged no manifest is deleted. What is already
// broken in use is what sc's scan reports; what the run breaks is what an
// in-use image lacks walked over the registry with the run's deletions
// gone, and not before.
//
// The report lists manifests only: blob sharing cannot be seen through the
// API (Report.Notes says so). A non-nil error with a non-nil report means
// the prediction is incomplete: some repositories or images could not be
// asked, and are listed under Skipped.
func CheckAPI(ctx context.Context, sc *scan.Scanner, opts Options, targets []types.Target) (*gcresult.Report, error) {
	if _, err := gcresult.ParseModel(string(opts.Model)); err != nil {
		return nil, err
	}
	plan := &Plan{Model: opts.Model, DeleteUntagged: opts.DeleteUntagged, Manifests: []gcresult.ManifestDeletion{}, Blobs: []string{}, LayerLinks: []LayerLink{}}
	c := &apiCheck{sc: sc, rd: sc.Reader(), opts: opts, plan: plan, rep: newReport(gcresult.ModeAPI, opts, plan)}
	c.rep.Registries = []string{}
	c.inUseSet(targets)
	if err := c.alreadyBroken(ctx); err != nil {
		return nil, err
	}
	if err := c.repositories(ctx); err != nil {
		return nil, err
	}
	if err := c.survey(ctx); err != nil {
		return nil, err
	}
	c.run()
	c.cross(ctx)
	c.report()
	return c.rep, errors.Join(c.problems...)
}

// apiCheck is one CheckAPI, phase by phase.
type apiCheck struct {
	sc       *scan.Scanner
	rd       walk.Reader // the Scanner's registry client: its cache is the scan's
	opts     Options
	plan     *Plan
	rep      *gcresult.Report
	problems []error

	inUse   []InUse                      // Repository is the full name, host included
	pinned  map[string][]string          // repository → in-use digests
	hosts   map[string]map[string]bool   // host → repository path → examined
	unasked map[string]bool              // in-use references the scan could not fully ask
	repos   []*remoteRepo                // sorted by host, then path
	byName  map[string]*remoteRepo       // by repository name
	deleted map[string]map[string]string // repository → digest → why the run deletes it
}

// inUseSet reads the in-use targets, merging references that normalize
// alike, and notes each one's host and repository, and its pins.
func (c *apiCheck) inUseSet(targets []types.Target) {
	ims, skipped := collect(targets, c.opts.Host, c.sc.Parse)
	c.rep.Skipped = append(c.rep.Skipped, skipped...)
	c.pinned, c.hosts = map[string][]string{}, map[string]map[string]bool{}
	if c.opts.Host != "" {
		c.hosts[c.opts.Host] = map[string]bool{}
	}
	for i, im := range ims {
		repo := im.ref.Context()
		ims[i].Repository = repo.Name()
		if c.hosts[repo.RegistryStr()] == nil {
			c.hosts[repo.RegistryStr()] = map[string]bool{}
		}
		c.hosts[repo.RegistryStr()][repo.RepositoryStr()] = true
		if im.Digest != "" {
			c.pinned[repo.Name()] = append(c.pinned[repo.Name()], im.Digest)
		}
	}
	c.inUse = ims
}

// alreadyBroken scans the in-use images: what is broken already, as the
// scan engine sees it. The scan also fills the Scanner's cache for the
// phases after it. An image it could not fully ask is skipped.
func (c *apiCheck) alreadyBroken(ctx context.Context) error {
	var scanned []types.Target
	for _, im := range c.inUse {
		scanned = append(scanned, types.Target{Ref: im.Reference, Uses: im.Uses})
	}
	res, err := c.sc.Run(ctx, scanned)
	if err != nil {
		return err
	}
	c.unasked = map[string]bool{}
	for i, si := range res.Images {
		im := c.inUse[i]
		switch si.Verdict {
		case types.OK:
		case types.Unknown:
			var cs []string
			for _, f := range si.Findings {
				if f.Code.Fault() {
					cs = append(cs, string(f.Code))
				}
			}
			c.problems = append(c.problems, skip(c.rep, im.Reference, "the registry could not be asked ("+strings.Join(dedupe(cs), ", ")+")"))
			c.unasked[im.Reference] = true
		default:
			if e := scanEntry(im, si); e != nil {
				c.rep.AlreadyBroken = append(c.rep.AlreadyBroken, *e)
			}
		}
	}
	return nil
}

// scanEntry is an already-broken (or at-risk) in-use image as the scan saw it.
func scanEntry(im InUse, si *types.Image) *gcresult.Entry {
	var losses []gcresult.Loss
	for _, f := range si.Findings {
		if isLoss(f) {
			losses = append(losses, gcresult.Loss{Code: f.Code, Digest: f.Digest, Platform: f.Platform, Message: f.Message})
		}
	}
	e := entry(im, si.Digest, losses, alreadyAdvice)
	if e != nil {
		e.Verdict = si.Verdict
	}
	return e
}

// repositories decides the repositories to survey: the in-use ones, and
// with AllRepositories every one each host's catalog lists.
func (c *apiCheck) repositories(ctx context.Context) error {
	var names []string
	for h := range c.hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	for _, h := range names {
		c.rep.Registries = append(c.rep.Registries, h)
		if err := c.catalog(ctx, h); err != nil {
			return err
		}
	}
	used := map[string]bool{}
	for _, im := range c.inUse {
		used[im.Repository] = true
	}
	c.byName = map[string]*remoteRepo{}
	for _, h := range names {
		var paths []string
		for p := range c.hosts[h] {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			r := newRemoteRepo(c.sc, h, p, used[h+"/"+p])
			c.repos = append(c.repos, r)
			c.byName[r.name] = r
		}
	}
	return nil
}

// catalog adds the repositories host's _catalog lists, with
// AllRepositories; without, or when the registry does not list them, a
// note says that only the in-use ones were examined. Only the end of ctx
// is an error.
func (c *apiCheck) catalog(ctx context.Context, host string) error {
	if !c.opts.AllRepositories {
		note(c.rep, gcresult.NoteInUseOnly, fmt.Sprintf("only the repositories of in-use images on %s were examined", host))
		return nil
	}
	cat, err := c.sc.Catalog(ctx, host)
	switch {
	case err == nil:
		for _, p := range cat {
			c.hosts[host][p] = true
		}
	case refused(err):
		note(c.rep, "", fmt.Sprintf("%s does not list its repositories (_catalog: %v): only the repositories of in-use images were examined", host, sentinel(err)))
		c.problems = append(c.problems, &CatalogError{Host: host, Err: err})
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		note(c.rep, "", fmt.Sprintf("listing the repositories of %s failed (%v): only the repositories of in-use images were examined", host, err))
		c.problems = append(c.problems, &CatalogError{Host: host, Err: err})
	}
	return nil
}

// survey surveys every repository at once (eight at a time); one that
// could not be is noted. Only the end of ctx is an error.
func (c *apiCheck) survey(ctx context.Context) error {
	return surveyAll(ctx, c.rep, &c.problems, 8, len(c.repos),
		func(ctx context.Context, i int) { c.repos[i].survey(ctx, c.sc, c.rd, c.pinned[c.repos[i].name]) },
		func(i int) (string, error) { return c.repos[i].name, c.repos[i].err })
}

// surveyAll runs survey on each of n repositories, limit at a time, then
// notes, in order, each that could not be examined (failed gives its name
// and error) and adds its error to problems. Only the end of ctx is an
// error. API mode and cleanup mode survey this way.
func surveyAll(ctx context.Context, rep *gcresult.Report, problems *[]error, limit, n int,
	survey func(ctx context.Context, i int), failed func(i int) (string, error)) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() error {
			survey(gctx, i)
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range n {
		if name, err := failed(i); err != nil {
			*problems = append(*problems, err)
			note(rep, "", fmt.Sprintf("repository %s was not examined: %v", name, err))
		}
	}
	return nil
}

// unexamined says whether an in-use image is left out of the crossing
// because its repository is not examined (err, skipped with its cause
// unless the scan could not ask for it either) or the scan could not
// fully ask for it (unasked).
func unexamined(rep *gcresult.Report, im InUse, err error, unasked bool) bool {
	if err != nil && !unasked {
		rep.Skipped = append(rep.Skipped, gcresult.Skipped{Reference: im.Reference, Reason: err.Error()})
	}
	return err != nil || unasked
}

// run predicts what the collector deletes in each repository surveyed,
// into c.deleted and the plan, or that it aborts.
func (c *apiCheck) run() {
	c.deleted = map[string]map[string]string{}
	if !c.opts.DeleteUntagged {
		note(c.rep, "", noteNoDelete)
		return
	}
	marked := map[string]map[string]bool{} // host → digests a tag reaches, in any repository (3.x marks across them)
	for _, r := range c.repos {
		if marked[r.host] == nil {
			marked[r.host] = map[string]bool{}
		}
		for d := range r.reach {
			marked[r.host][d] = true
		}
	}
	for _, r := range c.repos {
		if r.err == nil {
			c.deletions(r, marked[r.host])
		}
	}
	if c.plan.Abort != nil {
		c.deleted = map[string]map[string]string{}
		c.rep.Abort = c.plan.Abort
		return
	}
	for _, r := range c.repos {
		for d := range c.deleted[r.name] {
			c.plan.Manifests = append(c.plan.Manifests, gcresult.ManifestDeletion{Repository: r.name, Digest: d})
		}
	}
	sort.Slice(c.plan.Manifests, func(i, j int) bool {
		a, b := c.plan.Manifests[i], c.plan.Manifests[j]
		return a.Repository < b.Repository || a.Repository == b.Repository && a.Digest < b.Digest
	})
}

// deletions decides which served manifests of r the run deletes: under 2.8
// those no tag names directly, under 3 those no tag of the host reaches
// (marked). A repository without tags holding a manifest stops 2.8 (the
// plan's Abort) and is skipped, its data deleted, by 3.
func (c *apiCheck) deletions(r *remoteRepo, marked map[string]bool) {
	var served []string
	for d := range r.known {
		if r.served[d] {
			served = append(served, d)
		}
	}
	sort.Strings(served)
	if !r.hasTags {
		if len(served) == 0 {
			if r.listed() {
				note(c.rep, "", fmt.Sprintf("repository %s has no tags: if it holds a manifest, %s", r.name, noTagsEffect(c.opts.Model)))
			}
			return
		}
		if c.opts.Model == gcresult.Distribution28 {
			if c.plan.Abort == nil || r.path < c.plan.Abort.Repository {
				c.plan.Abort = &gcresult.Abort{Repository: r.path, Digest: served[0], Message: fmt.Sprintf("failed to retrieve tags unknown repository name=%s", r.path)}
			}
			return
		}
	}
	for _, d := range served {
		switch {
		case c.opts.Model == gcresult.Distribution28 && len(r.tagged[d]) > 0:
		case c.opts.Model == gcresult.Distribution3 && marked[d]:
		case c.opts.Model == gcresult.Distribution3 && !c.opts.AllRepositories && r.hasTags:
			// 3.x keeps what a tag of any repository reaches; the
			// repositories not examined may hold such a tag.
			note(c.rep, gcresult.NoteUndecided, fmt.Sprintf("%s@%s: no tag of the examined repositories reaches it; distribution 3 keeps it if a tag in another repository does", r.name, d))
			c.problems = append(c.problems, &UndecidedError{Repository: r.name, Digest: d})
		case !r.hasTags:
			c.delete(r.name, d, "repository "+r.name+" has no tags: distribution 3 skips it and deletes the data of manifest "+d)
		default:
			c.delete(r.name, d, r.why(d, c.opts.Model))
		}
	}
}

func (c *apiCheck) delete(repo, d, why string) {
	if c.deleted[repo] == nil {
		c.deleted[repo] = map[string]string{}
	}
	c.deleted[repo][d] = why
}

// cross walks each in-use image over the registry as it is and as the run
// would leave it (without: its deletions not found). What it lacks only
// after is what the run breaks.
func (c *apiCheck) cross(ctx context.Context) {
	after := without{Reader: c.rd, deleted: c.deleted}
	for _, im := range c.inUse {
		r := c.byName[im.Repository]
		if r == nil || unexamined(c.rep, im, r.err, c.unasked[im.Reference]) {
			continue
		}
		was, now := walkImage(ctx, c.rd, im.ref), walkImage(ctx, after, im.ref)
		if faults := append(was.faults, now.faults...); len(faults) > 0 {
			c.problems = append(c.problems, skip(c.rep, im.Reference, "the registry could not be asked: "+faults[0].Message))
			continue
		}
		losses := minus(now.losses, was.losses)
		for i, l := range losses {
			if why, ok := c.deleted[im.Repository][l.Digest]; ok {
				losses[i].Message = deletedMessage(l, why)
			}
		}
		if e := entry(im, now.digest, losses, breakAdvice(c.opts)); e != nil {
			c.rep.WouldBreak = append(c.rep.WouldBreak, *e)
		}
	}
}

// deletedMessage says that the run deletes what l lost, and why.
func deletedMessage(l gcresult.Loss, why string) string {
	switch l.Code {
	case types.ChildMissing:
		return "the index keeps listing its " + cmp.Or(l.Platform, "unknown platform") + " manifest " + l.Digest + ", which would be deleted"
	case types.AttestationMissing:
		return "attestation manifest " + l.Digest + " would be deleted"
	}
	return "manifest " + l.Digest + " would be deleted: " + why
}

// report groups the plan's manifests by repository, sums and advises.
func (c *apiCheck) report() {
	wd := gcresult.Deletions{Repositories: []gcresult.RepositoryDeletions{}, Blobs: []string{}}
	for _, m := range c.plan.Manifests {
		n := len(wd.Repositories)
		if n == 0 || wd.Repositories[n-1].Repository != m.Repository {
			wd.Repositories = append(wd.Repositories, gcresult.RepositoryDeletions{Repository: m.Repository, Blobs: []string{}, LayerLinks: []string{}})
			n++
		}
		wd.Repositories[n-1].Manifests = append(wd.Repositories[n-1].Manifests, m)
	}
	c.rep.WouldDelete = wd
	finish(c.rep, c.plan)
	if c.opts.DeleteUntagged {
		note(c.rep, "", noteUnseen)
	}
	note(c.rep, gcresult.NoteBlobs, noteBlobs)
}

// without is a registry as a predicted run leaves it: the manifests the
// run deletes are not found; the rest is read through.
type without struct {
	walk.Reader
	deleted map[string]map[string]string // repository name → digest → why
}

// Manifest answers types.ErrNotFound for a deleted manifest.
func (w without) Manifest(ctx context.Context, repo name.Repository, digest string) (walk.Manifest, error) {
	if why, ok := w.deleted[repo.Name()][digest]; ok {
		return walk.Manifest{}, fmt.Errorf("manifest %s would be deleted (%s): %w", digest, why, types.ErrNotFound)
	}
	return w.Reader.Manifest(ctx, repo, digest)
}

func noTagsEffect(model gcresult.Model) string {
	if model == gcresult.Distribution28 {
		return "2.x's --delete-untagged stops there (unknown repository) and deletes nothing"
	}
	return "distribution 3 skips it and deletes the data of its manifests no other repository's tags reach"
}

// CatalogError is a registry that did not list its repositories when
// Options.AllRepositories asked it to: only the repositories of in-use
// images were examined there.
type CatalogError struct {
	Host string
	Err  error
}

func (e *CatalogError) Error() string {
	if refused(e.Err) {
		return fmt.Sprintf("%s does not list its repositories: %v", e.Host, e.Err)
	}
	return fmt.Sprintf("listing the repositories of %s: %v", e.Host, e.Err)
}

// Unwrap is the error listing the repositories failed with.
func (e *CatalogError) Unwrap() error { return e.Err }

// UndecidedError is a manifest a prediction of distribution 3 leaves
// undecided: no tag of the repositories examined reaches it, and a tag in
// one not examined would keep it (Options.AllRepositories examines them
// all).
type UndecidedError struct {
	Repository, Digest string
}

func (e *UndecidedError) Error() string { return e.Repository + "@" + e.Digest + ": undecided" }

// refused reports whether a registry refused to answer: err unwraps to
// one of the scan errors sentinel names.
func refused(err error) bool {
	return errors.Is(err, types.ErrUnauthorized) || errors.Is(err, types.ErrForbidden) || errors.Is(err, types.ErrNotFound)
}

// sentinel names the scan error err unwraps to.
func sentinel(err error) error {
	for _, s := range []error{types.ErrUnauthorized, types.ErrForbidden, types.ErrNotFound} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

func dedupe(ss []string) []string {
	sort.Strings(ss)
	var out []string
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	return out
}
