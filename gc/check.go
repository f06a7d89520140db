package gc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Check predicts the run opts describes on s and crosses it with the in-use
// targets: each is walked over the storage as it is (what it lacks is
// already broken) and as the run leaves it (Storage.Apply: what it lacks
// only then, the run breaks), with the walker scan uses on a live registry.
// It reads s only. A non-nil error with a non-nil report means the
// prediction is incomplete: some images could not be read, and are listed
// under Skipped. The plan is the simulated run behind the report.
func Check(s *storage.Storage, opts Options, targets []types.Target) (*gcresult.Report, *Plan, error) {
	plan, err := Simulate(s, opts.Model, opts.DeleteUntagged)
	if err != nil {
		return nil, nil, err
	}
	rep := newReport(gcresult.ModeStorage, opts, plan)
	rep.Storage = s.Root
	inUse, skipped := Resolve(s, targets, opts.Host)
	rep.Skipped = append(rep.Skipped, skipped...)
	v := storageVersion(opts.Model)
	now, after := newStorageSource(s, v), newStorageSource(Apply(s, plan), v)
	var problems []error
	for _, im := range inUse {
		if err := crossStorage(rep, plan, im, now, after, opts); err != nil {
			problems = append(problems, err)
		}
	}
	rep.WouldOrphanArtifacts = orphans(s, plan)
	if rep.Damage = Survey(s, opts.Model); rep.Damage == nil {
		rep.Damage = []gcresult.Damage{}
	}
	rep.WouldDelete = group(s, plan)
	finish(rep, plan)
	return rep, plan, errors.Join(problems...)
}

// crossStorage walks one in-use image over the storage now and after the
// run, adding it to AlreadyBroken and WouldBreak as it lacks something,
// with the blobs it needs that the run deletes, and its artifacts the run
// loses to WouldLoseArtifacts. A fault leaves it unknown: skipped, and
// returned.
func crossStorage(rep *gcresult.Report, plan *Plan, im InUse, now, after storageSource, opts Options) error {
	ctx := context.Background()
	var mu sync.Mutex
	need := map[string]bool{}
	was := walkImage(ctx, now, im.ref, walk.WithVisit(func(d string) {
		mu.Lock()
		need[d] = true
		mu.Unlock()
	}))
	if len(was.faults) > 0 {
		var why []string
		for _, f := range was.faults {
			why = append(why, f.Message)
		}
		return skip(rep, im.Reference, "the storage could not be read: "+strings.Join(why, "; "))
	}
	if e := entry(im, was.digest, was.losses, alreadyAdvice); e != nil {
		rep.AlreadyBroken = append(rep.AlreadyBroken, *e)
	}
	refused, policyErr := crossArtifacts(ctx, rep, im, was.digest, now, after, opts)
	e := entry(im, was.digest, minus(walkImage(ctx, after, im.ref).losses, was.losses), breakAdvice(opts))
	if e == nil {
		if refused != nil {
			rep.WouldBreak = append(rep.WouldBreak, *refused)
		}
		return policyErr
	}
	for _, b := range plan.Blobs {
		if need[b] {
			e.DeletedBlobs = append(e.DeletedBlobs, b)
		}
	}
	if n := len(e.DeletedBlobs); n > 0 {
		e.Reason += fmt.Sprintf("; the run deletes %d blob(s) it needs", n)
	}
	mergeEntry(e, refused)
	rep.WouldBreak = append(rep.WouldBreak, *e)
	return policyErr
}

// crossArtifacts adds to WouldLoseArtifacts the artifacts of the image
// (resolved to digest) the run loses, and returns the refusal they cause
// under opts.Policies, if any. When the artifacts could not be read, a
// note says so; under image policies the prediction is then incomplete:
// the error says why.
func crossArtifacts(ctx context.Context, rep *gcresult.Report, im InUse, digest string, now, after storageSource, opts Options) (*gcresult.Entry, error) {
	if digest == "" {
		return nil, nil
	}
	sets, err := findArtifacts(ctx, now, after, im, digest)
	if err != nil {
		note(rep, "", "the signatures and attestations of "+im.Reference+" could not be read, so their loss is not predicted: "+err.Error())
		if opts.Policies != nil && len(opts.Policies.Rules) > 0 {
			return nil, fmt.Errorf("%s: whether the run deletes what its image policies require is not known: %w", im.Reference, err)
		}
		return nil, nil
	}
	lost := sets.losses(im)
	rep.WouldLoseArtifacts = append(rep.WouldLoseArtifacts, lost...)
	return refusal(ctx, im, digest, sets, lost, opts.Policies), nil
}

// InUse is one in-use image as found in the storage.
type InUse struct {
	// Reference is the normalized reference; Repository and Tag or Digest
	// locate it in the storage.
	Reference  string      `json:"reference"`
	Repository string      `json:"repository"`
	Tag        string      `json:"tag,omitempty"`
	Digest     string      `json:"digest,omitempty"`
	Uses       []types.Use `json:"uses,omitempty"`

	ref name.Reference // as parsed: what a walk of it is given
}

// Hosts returns the registry hosts the parseable targets name, sorted.
func Hosts(targets []types.Target) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range targets {
		_, ref, err := scan.ParseReference(t.Ref)
		if err != nil || seen[ref.Context().RegistryStr()] {
			continue
		}
		seen[ref.Context().RegistryStr()] = true
		out = append(out, ref.Context().RegistryStr())
	}
	sort.Strings(out)
	return out
}

// Resolve maps in-use targets to storage repositories: by repository path,
// and only on host when host is set. References that do not parse, are on
// another host, or name a repository the storage does not hold are
// returned as skipped. A digest-pinned reference with a tag is looked up
// by its digest, as a runtime pulls it.
func Resolve(s *storage.Storage, targets []types.Target, host string) ([]InUse, []gcresult.Skipped) {
	ims, skipped := collect(targets, host, scan.ParseReference)
	var out []InUse
	for _, im := range ims {
		if s.Repositories[im.Repository] == nil {
			skipped = append(skipped, gcresult.Skipped{Reference: im.Reference, Reason: "repository " + im.Repository + " is not in the storage"})
			continue
		}
		out = append(out, im)
	}
	return out, skipped
}

// collect parses in-use targets with parse, merges the uses of references
// that normalize alike, and skips those that do not parse or are on
// another host than host (when set). Each InUse has the repository path
// (without host) and its parsed reference.
func collect(targets []types.Target, host string, parse func(string) (string, name.Reference, error)) ([]InUse, []gcresult.Skipped) {
	var (
		out     []InUse
		skipped []gcresult.Skipped
	)
	idx := map[string]int{}
	for _, t := range targets {
		norm, ref, err := parse(t.Ref)
		if err != nil {
			skipped = append(skipped, gcresult.Skipped{Reference: t.Ref, Reason: err.Error()})
			continue
		}
		if i, ok := idx[norm]; ok {
			out[i].Uses = append(out[i].Uses, t.Uses...)
			continue
		}
		if host != "" && ref.Context().RegistryStr() != host {
			skipped = append(skipped, gcresult.Skipped{Reference: norm, Reason: "on another registry host than " + host})
			continue
		}
		im := InUse{Reference: norm, Repository: ref.Context().RepositoryStr(), Uses: append([]types.Use(nil), t.Uses...), ref: ref}
		switch r := ref.(type) {
		case name.Digest:
			im.Digest = r.DigestStr()
		case name.Tag:
			im.Tag = r.TagStr()
		}
		idx[norm] = len(out)
		out = append(out, im)
	}
	return out, skipped
}

// group arranges a plan by repository; a deleted blob is listed under
// every repository that links it.
func group(s *storage.Storage, p *Plan) gcresult.Deletions {
	out := gcresult.Deletions{Repositories: []gcresult.RepositoryDeletions{}, Blobs: append([]string{}, p.Blobs...)}
	by := map[string]*gcresult.RepositoryDeletions{}
	get := func(repo string) *gcresult.RepositoryDeletions {
		if rd, ok := by[repo]; ok {
			return rd
		}
		rd := &gcresult.RepositoryDeletions{Repository: repo, Manifests: []gcresult.ManifestDeletion{}, Blobs: []string{}, LayerLinks: []string{}}
		by[repo] = rd
		return rd
	}
	for _, m := range p.Manifests {
		get(m.Repository).Manifests = append(get(m.Repository).Manifests, m)
	}
	for _, l := range p.LayerLinks {
		get(l.Repository).LayerLinks = append(get(l.Repository).LayerLinks, l.Digest)
	}
	gone := map[string]bool{}
	for _, d := range p.Blobs {
		gone[d] = true
	}
	for _, name := range s.Names() {
		r := s.Repositories[name]
		seen := map[string]bool{}
		for _, links := range []map[string]string{r.Layers, r.Revisions} {
			for _, t := range links {
				if gone[t] && !seen[t] {
					seen[t] = true
					get(name).Blobs = append(get(name).Blobs, t)
				}
			}
		}
	}
	for _, rd := range by {
		sort.Strings(rd.Blobs)
		sort.Strings(rd.LayerLinks)
		out.Repositories = append(out.Repositories, *rd)
	}
	sort.Slice(out.Repositories, func(i, j int) bool { return out.Repositories[i].Repository < out.Repositories[j].Repository })
	return out
}
