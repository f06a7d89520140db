package gc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/regcheck/regcheck/scan"
	"golang.org/x/sync/errgroup"
)

// Mode is how a Report was made.
type Mode string

// The modes.
const (
	// ModeStorage read the registry's filesystem storage (Check).
	ModeStorage Mode = "storage"
	// ModeAPI asked the registry through its HTTP API (CheckAPI).
	ModeAPI Mode = "api"
)

// maxAPIDepth bounds how deep CheckAPI follows indexes of indexes.
const maxAPIDepth = 4

// Notes every API-mode report carries.
const (
	noteBlobs    = "API mode lists the manifests a run would delete; it cannot see which blobs manifests share, so which blobs the run deletes is known only in storage mode (--storage)"
	noteUnseen   = "the registry API shows no manifest that no tag reaches and no in-use image pins: the real run also deletes those (old builds nobody references), which only storage mode lists"
	noteNoDelete = "without --delete-untagged neither distribution 2.x nor 3.x deletes a manifest: every tag, every index child and every pinned digest stays, so no in-use image loses a manifest; the run deletes only blobs no manifest references, which storage mode lists"
)

// CheckAPI predicts the collector run opts describes from what registries
// serve, with no access to their storage, and crosses it with the in-use
// targets. For each registry host the in-use images name (or opts.Host
// alone) it examines the in-use images' repositories (with
// opts.AllRepositories, every repository of the host's _catalog where the
// registry allows it): their tags, the
// manifests the tags reach through indexes, and the in-use pins. Under
// distribution-2.8 with --delete-untagged every manifest no tag names
// directly is deleted, index children included; under distribution-3 only
// those no tag reaches at all. Without --delete-untagged no manifest is
// deleted. What is already broken in use is what sc's scan reports.
//
// The report lists manifests only: blob sharing cannot be seen through the
// API (Report.Notes says so). A non-nil error with a non-nil report means
// the prediction is incomplete: some repositories or images could not be
// asked, and are listed under Skipped.
func CheckAPI(ctx context.Context, sc *scan.Scanner, opts Options, targets []scan.Target) (*Report, error) {
	switch opts.Model {
	case Distribution28, Distribution3:
	default:
		return nil, fmt.Errorf("unknown GC model %q", opts.Model)
	}
	rep := &Report{SchemaVersion: SchemaVersion, Mode: ModeAPI, Model: opts.Model, ModelAssumed: opts.ModelAssumed, DeleteUntagged: opts.DeleteUntagged,
		WouldBreak: []Entry{}, AlreadyBroken: []Entry{}, Damage: []Damage{}, Skipped: []Skipped{}, Registries: []string{}}
	plan := &Plan{Model: opts.Model, DeleteUntagged: opts.DeleteUntagged, Manifests: []ManifestDeletion{}, Blobs: []string{}, LayerLinks: []LayerLink{}}
	rep.plan = plan
	var problems []error

	// The in-use set, by registry host and repository.
	inUse, pinned, skipped := parseInUse(sc, targets, opts.Host)
	rep.Skipped = append(rep.Skipped, skipped...)
	hosts := map[string]map[string]bool{} // host → repository path → examined
	if opts.Host != "" {
		hosts[opts.Host] = map[string]bool{}
	}
	for _, im := range inUse {
		if hosts[im.host] == nil {
			hosts[im.host] = map[string]bool{}
		}
		hosts[im.host][im.path] = true
	}

	// What is broken already, as the scan engine sees it. The scan also
	// fills sc's cache for the survey below.
	var scanned []scan.Target
	for _, im := range inUse {
		scanned = append(scanned, scan.Target{Ref: im.Reference, Uses: im.Uses})
	}
	res, err := sc.Run(ctx, scanned)
	if err != nil {
		return nil, err
	}
	unasked := map[string]bool{} // references the scan could not fully ask
	for i, si := range res.Images {
		im := inUse[i]
		switch si.Verdict {
		case scan.OK:
		case scan.Unknown:
			var cs []string
			for _, f := range si.Findings {
				if f.Code.Fault() {
					cs = append(cs, string(f.Code))
				}
			}
			reason := "the registry could not be asked (" + strings.Join(dedupe(cs), ", ") + ")"
			rep.Skipped = append(rep.Skipped, Skipped{Reference: im.Reference, Reason: reason})
			problems = append(problems, fmt.Errorf("%s: %s", im.Reference, reason))
			unasked[im.Reference] = true
		default:
			if e := scanEntry(im.InUse, si); e != nil {
				rep.AlreadyBroken = append(rep.AlreadyBroken, *e)
			}
		}
	}

	// The repositories to survey: the in-use ones, and with
	// AllRepositories every one the catalog lists.
	var names []string
	for h := range hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	for _, h := range names {
		rep.Registries = append(rep.Registries, h)
		if !opts.AllRepositories {
			rep.Notes = append(rep.Notes, fmt.Sprintf("only the repositories of in-use images on %s were examined; --all-repositories examines every repository its _catalog lists", h))
			continue
		}
		cat, err := sc.Catalog(ctx, h)
		switch {
		case err == nil:
			for _, p := range cat {
				hosts[h][p] = true
			}
		case errors.Is(err, scan.ErrUnauthorized), errors.Is(err, scan.ErrForbidden), errors.Is(err, scan.ErrNotFound):
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s does not list its repositories (_catalog: %v): only the repositories of in-use images were examined", h, sentinel(err)))
			problems = append(problems, fmt.Errorf("--all-repositories: %s does not list its repositories: %w", h, err))
		default:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("listing the repositories of %s failed (%v): only the repositories of in-use images were examined", h, err))
			problems = append(problems, fmt.Errorf("--all-repositories: listing the repositories of %s: %w", h, err))
		}
	}
	used := map[string]bool{}
	for _, im := range inUse {
		used[im.Repository] = true
	}
	var repos []*remoteRepo
	byName := map[string]*remoteRepo{}
	for _, h := range names {
		var paths []string
		for p := range hosts[h] {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			r := &remoteRepo{host: h, path: p, name: h + "/" + p, tagged: map[string][]string{}, reach: map[string]bool{},
				served: map[string]bool{}, known: map[string]bool{}, children: map[string][]ocispec.Descriptor{}, inUse: used[h+"/"+p]}
			repos = append(repos, r)
			byName[r.name] = r
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, r := range repos {
		g.Go(func() error {
			r.survey(gctx, sc, pinned[r.name])
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, r := range repos {
		if r.err != nil {
			problems = append(problems, r.err)
			rep.Notes = append(rep.Notes, fmt.Sprintf("repository %s was not examined: %v", r.name, r.err))
		}
	}

	// The run: what each repository loses.
	deleted := map[string]map[string]string{} // repository → digest → why
	if opts.DeleteUntagged {
		marked := map[string]map[string]bool{} // host → digest reached from a tag, in any repository (3.x marks across them)
		for _, r := range repos {
			if marked[r.host] == nil {
				marked[r.host] = map[string]bool{}
			}
			for d := range r.reach {
				marked[r.host][d] = true
			}
		}
		for _, r := range repos {
			if r.err != nil {
				continue
			}
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
						rep.Notes = append(rep.Notes, fmt.Sprintf("repository %s has no tags: if it holds a manifest, %s", r.name, noTagsEffect(opts.Model)))
					}
					continue
				}
				if opts.Model == Distribution28 {
					if plan.Abort == nil || r.path < plan.Abort.Repository {
						plan.Abort = &Abort{Repository: r.path, Digest: served[0], Message: fmt.Sprintf("failed to retrieve tags unknown repository name=%s", r.path)}
					}
					continue
				}
			}
			for _, d := range served {
				switch {
				case opts.Model == Distribution28 && len(r.tagged[d]) > 0:
				case opts.Model == Distribution3 && marked[r.host][d]:
				case opts.Model == Distribution3 && !opts.AllRepositories && r.hasTags:
					// 3.x keeps what a tag of any repository reaches; the
					// repositories not examined may hold such a tag.
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s@%s: no tag of the examined repositories reaches it; distribution 3 keeps it if a tag in another repository does (--all-repositories decides)", r.name, d))
					problems = append(problems, fmt.Errorf("%s@%s: undecided without --all-repositories", r.name, d))
				case !r.hasTags:
					addDeleted(deleted, r.name, d, "repository "+r.name+" has no tags: distribution 3 skips it and deletes the data of manifest "+d)
				default:
					addDeleted(deleted, r.name, d, r.why(d, opts.Model))
				}
			}
		}
	} else {
		rep.Notes = append(rep.Notes, noteNoDelete)
	}
	if plan.Abort != nil {
		deleted = map[string]map[string]string{}
	} else {
		for _, r := range repos {
			for d := range deleted[r.name] {
				plan.Manifests = append(plan.Manifests, ManifestDeletion{Repository: r.name, Digest: d})
			}
		}
		sort.Slice(plan.Manifests, func(i, j int) bool {
			a, b := plan.Manifests[i], plan.Manifests[j]
			return a.Repository < b.Repository || a.Repository == b.Repository && a.Digest < b.Digest
		})
	}
	rep.Abort = plan.Abort

	// Crossed with the in-use set.
	for _, im := range inUse {
		r := byName[im.host+"/"+im.path]
		if r == nil || r.err != nil {
			if r != nil && !unasked[im.Reference] {
				rep.Skipped = append(rep.Skipped, Skipped{Reference: im.Reference, Reason: r.err.Error()})
			}
			continue
		}
		if unasked[im.Reference] {
			continue
		}
		d := im.Digest
		if d == "" {
			d = r.tags[im.Tag]
		}
		if d == "" || !r.served[d] {
			continue // gone already: the scan said so
		}
		losses := r.losses(d, deleted[r.name])
		if e := entry(im.InUse, d, losses, breakAdvice(opts, im.InUse)); e != nil {
			rep.WouldBreak = append(rep.WouldBreak, *e)
		}
	}

	rep.WouldDelete = Deletions{Repositories: []RepositoryDeletions{}, Blobs: []string{}}
	for _, m := range plan.Manifests {
		n := len(rep.WouldDelete.Repositories)
		if n == 0 || rep.WouldDelete.Repositories[n-1].Repository != m.Repository {
			rep.WouldDelete.Repositories = append(rep.WouldDelete.Repositories, RepositoryDeletions{Repository: m.Repository, Blobs: []string{}, LayerLinks: []string{}})
			n++
		}
		rep.WouldDelete.Repositories[n-1].Manifests = append(rep.WouldDelete.Repositories[n-1].Manifests, m)
	}
	rep.Counts = Counts{WouldBreak: len(rep.WouldBreak), AlreadyBroken: len(rep.AlreadyBroken), Manifests: len(plan.Manifests), Skipped: len(rep.Skipped)}
	rep.Advice = advise(rep)
	if opts.DeleteUntagged {
		rep.Notes = append(rep.Notes, noteUnseen)
	}
	rep.Notes = append(rep.Notes, noteBlobs)
	return rep, errors.Join(problems...)
}

// apiInUse is an in-use image located on a registry host.
type apiInUse struct {
	InUse
	host, path string
}

// parseInUse reads the in-use targets, merging references that normalize
// alike, and returns the pinned digests by repository ("host/path").
func parseInUse(sc *scan.Scanner, targets []scan.Target, host string) ([]apiInUse, map[string][]string, []Skipped) {
	ims, refs, skipped := collect(targets, host, sc.Parse)
	out := make([]apiInUse, len(ims))
	pinned := map[string][]string{}
	for i, im := range ims {
		repo := refs[i].Context()
		im.Repository = repo.Name()
		out[i] = apiInUse{InUse: im, host: repo.RegistryStr(), path: repo.RepositoryStr()}
		if im.Digest != "" {
			pinned[im.Repository] = append(pinned[im.Repository], im.Digest)
		}
	}
	return out, pinned, skipped
}

// remoteRepo is one repository as its registry serves it.
type remoteRepo struct {
	host, path, name string
	// hasTags is false when the registry does not know the repository's tags
	// (404 on tags/list: no _manifests/tags in its storage).
	hasTags bool
	inUse   bool // examined because an in-use image names it, not only listed

	mu       sync.Mutex
	tags     map[string]string   // tag → digest it names now
	tagged   map[string][]string // digest → tags naming it directly
	reach    map[string]bool     // manifests tags reach through indexes
	known    map[string]bool     // every manifest digest met
	served   map[string]bool     // … that the repository serves
	children map[string][]ocispec.Descriptor
	via      map[string]string // child digest → "index D (platform)" it was first met under
	err      error
}

func (r *remoteRepo) listed() bool { return !r.inUse }

// survey lists r's tags, resolves each, and fetches every manifest the tags
// and the pins reach through indexes.
func (r *remoteRepo) survey(ctx context.Context, sc *scan.Scanner, pins []string) {
	r.tags = map[string]string{}
	r.via = map[string]string{}
	tags, err := sc.Tags(ctx, r.name)
	switch {
	case errors.Is(err, scan.ErrNotFound):
	case err != nil:
		r.err = err
		return
	default:
		r.hasTags = true
	}
	g, gctx := errgroup.WithContext(ctx)
	var errs []error
	fail := func(err error) {
		r.mu.Lock()
		errs = append(errs, err)
		r.mu.Unlock()
	}
	for _, t := range tags {
		g.Go(func() error {
			d, _, err := sc.Resolve(gctx, r.name+":"+t)
			switch {
			case errors.Is(err, scan.ErrNotFound):
				return nil // the tag names a manifest that is gone: damage, not the run's
			case err != nil:
				fail(err)
				return nil
			}
			r.mu.Lock()
			r.tags[t] = d
			r.tagged[d] = append(r.tagged[d], t)
			r.mu.Unlock()
			if err := r.visit(gctx, sc, d, true, 0); err != nil {
				fail(err)
			}
			return nil
		})
	}
	g.Wait()
	for _, d := range pins {
		if err := r.visit(ctx, sc, d, false, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		r.err = errors.Join(errs...)
	}
}

// visit fetches manifest d and, for an index, its children; fromTag says a
// tag reaches it.
func (r *remoteRepo) visit(ctx context.Context, sc *scan.Scanner, d string, fromTag bool, depth int) error {
	r.mu.Lock()
	again := r.known[d] && (!fromTag || r.reach[d])
	r.known[d] = true
	if fromTag {
		r.reach[d] = true
	}
	r.mu.Unlock()
	if again || depth > maxAPIDepth {
		return nil
	}
	m, err := sc.Manifest(ctx, r.name+"@"+d)
	switch {
	case errors.Is(err, scan.ErrNotFound), errors.Is(err, scan.ErrDigestMismatch):
		return nil // already gone or damaged: the scan reports what is in use
	case err != nil:
		return err
	}
	kids, err := m.Children()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.served[d] = true
	r.children[d] = kids
	for _, c := range kids {
		if _, ok := r.via[c.Digest.String()]; !ok {
			r.via[c.Digest.String()] = "index " + d + " (" + platformOf(c) + ")"
		}
	}
	r.mu.Unlock()
	for _, c := range kids {
		if err := r.visit(ctx, sc, c.Digest.String(), fromTag, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// why says why the run deletes manifest d of r.
func (r *remoteRepo) why(d string, model Model) string {
	if via, ok := r.via[d]; ok {
		if model == Distribution28 {
			return "no tag names it directly; it is a child of " + via + ", and 2.x deletes the children of tagged indexes"
		}
		return "no tag reaches it: it is a child of " + via + ", which no tag reaches either"
	}
	return "no tag points at this pinned digest (its tag moved, or it was pushed by digest)"
}

// losses walks in-use manifest d of r and returns what the run deletes
// from under it.
func (r *remoteRepo) losses(d string, deleted map[string]string) []Loss {
	if why, ok := deleted[d]; ok {
		return []Loss{{Code: scan.ManifestMissing, Digest: d, Message: "manifest " + d + " would be deleted: " + why}}
	}
	var out []Loss
	var walk func(d string, attestation bool, depth int)
	walk = func(d string, attestation bool, depth int) {
		if depth > maxAPIDepth {
			return
		}
		for _, c := range r.children[d] {
			cd, plat := c.Digest.String(), platformOf(c)
			att := attestation || scan.IsAttestation(c)
			if !r.served[cd] {
				continue // gone already
			}
			if _, ok := deleted[cd]; !ok {
				walk(cd, att, depth+1)
				continue
			}
			if att {
				out = append(out, Loss{Code: scan.AttestationMissing, Digest: cd, Parent: d, Platform: plat, Message: "attestation manifest " + cd + " would be deleted"})
			} else {
				out = append(out, Loss{Code: scan.ChildMissing, Digest: cd, Parent: d, Platform: plat, Message: "the index keeps listing its " + plat + " manifest " + cd + ", which would be deleted"})
			}
		}
	}
	walk(d, false, 0)
	return out
}

// scanEntry is an already-broken (or at-risk) in-use image as the scan saw it.
func scanEntry(im InUse, si *scan.Image) *Entry {
	var losses []Loss
	for _, f := range si.Findings {
		if f.Severity < scan.SeverityWarning || f.Code.Fault() {
			continue
		}
		losses = append(losses, Loss{Code: f.Code, Digest: f.Digest, Platform: f.Platform, Message: f.Message})
	}
	e := entry(im, si.Digest, losses, alreadyAdvice)
	if e != nil {
		e.Verdict = si.Verdict
	}
	return e
}

func addDeleted(m map[string]map[string]string, repo, d, why string) {
	if m[repo] == nil {
		m[repo] = map[string]string{}
	}
	m[repo][d] = why
}

func noTagsEffect(model Model) string {
	if model == Distribution28 {
		return "2.x's --delete-untagged stops there (unknown repository) and deletes nothing"
	}
	return "distribution 3 skips it and deletes the data of its manifests no other repository's tags reach"
}

// platformOf names an index child's platform for a report line.
func platformOf(d ocispec.Descriptor) string {
	if d.Platform == nil {
		return "unknown platform"
	}
	return scan.PlatformString(d.Platform)
}

// sentinel names the scan error err unwraps to.
func sentinel(err error) error {
	for _, s := range []error{scan.ErrUnauthorized, scan.ErrForbidden, scan.ErrNotFound} {
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
