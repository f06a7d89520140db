package gc

import (
	"fmt"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/regcheck/regcheck/scan"
)

// SchemaVersion versions the JSON form of a Report.
const SchemaVersion = "regcheck.gc/v1"

// Report is what gc-check found: what a collector run would delete, which
// in-use images that breaks, and what is broken already.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	// Model is the collector predicted. ModelAssumed is true when the
	// caller did not say which one the registry runs and Model is a
	// default: the prediction holds only if the registry runs it, and the
	// advice says what to do under either model.
	Model        Model `json:"model"`
	ModelAssumed bool  `json:"modelAssumed"`
	// Mode is how the prediction was made: ModeStorage read the registry's
	// files, ModeAPI asked the registries in Registries through their API.
	Mode           Mode     `json:"mode"`
	Storage        string   `json:"storage,omitempty"`
	Registries     []string `json:"registries,omitempty"`
	DeleteUntagged bool     `json:"deleteUntagged"`
	// Abort is set when the collector would stop and delete nothing.
	Abort *Abort `json:"abort,omitempty"`
	// WouldBreak are in-use images the run would break (or strip of
	// attestations); AlreadyBroken those broken before it.
	WouldBreak    []Entry `json:"wouldBreak"`
	AlreadyBroken []Entry `json:"alreadyBroken"`
	// WouldDelete is the run's deletions by repository, then every blob.
	WouldDelete Deletions `json:"wouldDelete"`
	// Damage is everything already broken in the storage, in use or not.
	Damage []Damage `json:"damage"`
	// Skipped are in-use references that are not in this storage.
	Skipped []Skipped `json:"skipped"`
	Counts  Counts    `json:"counts"`
	// Advice says what to do, most urgent first.
	Advice []string `json:"advice"`
	// Notes say what the prediction could not see.
	Notes []string `json:"notes,omitempty"`

	plan *Plan
}

// Plan returns the simulated run behind the report.
func (r *Report) Plan() *Plan { return r.plan }

// Deletions is a plan grouped by repository.
type Deletions struct {
	Repositories []RepositoryDeletions `json:"repositories"`
	// Blobs is every blob whose data would be deleted.
	Blobs []string `json:"blobs"`
}

// RepositoryDeletions is what a run deletes in, or from under, one repository.
type RepositoryDeletions struct {
	Repository string             `json:"repository"`
	Manifests  []ManifestDeletion `json:"manifests"`
	// Blobs are deleted blobs this repository links (its _layers links or
	// its manifests' own data).
	Blobs      []string `json:"blobs"`
	LayerLinks []string `json:"layerLinks"`
}

// Counts sums a report.
type Counts struct {
	WouldBreak      int `json:"wouldBreak"`
	AlreadyBroken   int `json:"alreadyBroken"`
	Manifests       int `json:"manifests"`
	Blobs           int `json:"blobs"`
	LayerLinks      int `json:"layerLinks"`
	TagIndexEntries int `json:"tagIndexEntries"`
	Damage          int `json:"damage"`
	Skipped         int `json:"skipped"`
}

// Skipped is an in-use reference gc-check did not look at, and why.
type Skipped struct {
	Reference string `json:"reference"`
	Reason    string `json:"reason"`
}

// Options says which collector run to predict.
type Options struct {
	Model Model
	// ModelAssumed says Model is a default, not what the registry is known
	// to run: the report says so, and its advice covers either model.
	ModelAssumed   bool
	DeleteUntagged bool
	// Host, when set, limits the in-use set to references on this registry
	// host; otherwise references match storage repositories by path alone.
	Host string
	// AllRepositories makes API mode examine every repository the
	// registry's _catalog lists, not only those of in-use images: a
	// complete wouldDelete list, at the cost of reading the whole registry.
	AllRepositories bool
}

// Check predicts the run opts describes on s and crosses it with the in-use
// targets. It reads s only.
func Check(s *Storage, opts Options, targets []scan.Target) (*Report, error) {
	plan, err := Simulate(s, opts.Model, opts.DeleteUntagged)
	if err != nil {
		return nil, err
	}
	rep := &Report{SchemaVersion: SchemaVersion, Mode: ModeStorage, Storage: s.Root, Model: opts.Model, ModelAssumed: opts.ModelAssumed, DeleteUntagged: opts.DeleteUntagged,
		Abort: plan.Abort, WouldBreak: []Entry{}, AlreadyBroken: []Entry{}, Skipped: []Skipped{}, plan: plan}
	inUse, skipped := Resolve(s, targets, opts.Host)
	rep.Skipped = append(rep.Skipped, skipped...)
	after := s.Apply(plan)
	for _, im := range inUse {
		d, before := examine(s, im, opts.Model)
		if e := entry(im, d, before, alreadyAdvice); e != nil {
			rep.AlreadyBroken = append(rep.AlreadyBroken, *e)
		}
		_, lost := examine(after, im, opts.Model)
		if e := entry(im, d, minus(lost, before), breakAdvice(opts, im)); e != nil {
			if d != "" {
				need := needs(s, s.Repositories[im.Repository], d, opts.Model)
				for _, b := range plan.Blobs {
					if need[b] {
						e.DeletedBlobs = append(e.DeletedBlobs, b)
					}
				}
				if n := len(e.DeletedBlobs); n > 0 {
					e.Reason += fmt.Sprintf("; the run deletes %d blob(s) it needs", n)
				}
			}
			rep.WouldBreak = append(rep.WouldBreak, *e)
		}
	}
	rep.Damage = Survey(s, opts.Model)
	if rep.Damage == nil {
		rep.Damage = []Damage{}
	}
	rep.WouldDelete = group(s, plan)
	rep.Counts = Counts{WouldBreak: len(rep.WouldBreak), AlreadyBroken: len(rep.AlreadyBroken), Manifests: len(plan.Manifests),
		Blobs: len(plan.Blobs), LayerLinks: len(plan.LayerLinks), Damage: len(rep.Damage), Skipped: len(rep.Skipped)}
	for _, m := range plan.Manifests {
		rep.Counts.TagIndexEntries += len(m.TagIndex)
	}
	rep.Advice = advise(rep)
	return rep, nil
}

const alreadyAdvice = "already broken: rebuild the image from its commit and push it again (to a registry whose GC keeps index children), then point the workload at the new digest"

// breakAdvice is what to do about one in-use image the run breaks. An
// assumed model's advice is conditional on it: the registry may already run
// the other one.
func breakAdvice(o Options, im InUse) string {
	switch {
	case o.Model == Distribution28 && o.DeleteUntagged && o.ModelAssumed:
		return "if the registry runs distribution 2.x, do not run its GC with --delete-untagged: run without it, tag the children it lists, or move to distribution 3.x, whose GC keeps the children of tagged indexes; if it runs 3.x, predict again with the distribution-3 model"
	case o.Model == Distribution28 && o.DeleteUntagged:
		return "do not run 2.x's GC with --delete-untagged: upgrade to distribution 3.x, run without --delete-untagged, or tag the children it lists"
	case o.DeleteUntagged:
		return ifModel(o.Model, o.ModelAssumed) + "run without --delete-untagged, or tag the digests it lists so the collector keeps them"
	}
	return ifModel(o.Model, o.ModelAssumed) + "tag the digests it lists, or relink them, before collecting"
}

// ifModel opens advice that holds only under an assumed model.
func ifModel(m Model, assumed bool) string {
	if !assumed {
		return ""
	}
	return "if the registry runs " + m.Release() + ": "
}

func advise(r *Report) []string {
	var out []string
	if r.Abort != nil {
		a := fmt.Sprintf("the collector would stop in repository %s (%s) and delete nothing: push a tag to %s, or delete that repository, then check again", r.Abort.Repository, r.Abort.Message, r.Abort.Repository)
		if r.ModelAssumed {
			a = fmt.Sprintf("if the registry runs %s, its collector would stop in repository %s (%s) and delete nothing: push a tag to %s, or delete that repository, then check again; if it runs another release, predict again with that model", r.Model.Release(), r.Abort.Repository, r.Abort.Message, r.Abort.Repository)
		}
		out = append(out, a)
	}
	if len(r.WouldBreak) > 0 {
		switch {
		case r.Model == Distribution28 && r.DeleteUntagged && r.ModelAssumed:
			out = append(out, "if the registry runs distribution 2.x, do not run garbage-collect --delete-untagged on it: run without --delete-untagged, tag every child listed under wouldBreak, or move to distribution 3.x, whose GC keeps the children of tagged indexes; if it runs 3.x, predict again with the distribution-3 model")
		case r.Model == Distribution28 && r.DeleteUntagged:
			out = append(out, "do not run garbage-collect --delete-untagged on distribution 2.x: upgrade to distribution 3.x (its GC keeps the children of tagged indexes), run without --delete-untagged, or tag every child listed under wouldBreak")
		default:
			out = append(out, ifModel(r.Model, r.ModelAssumed)+"run without --delete-untagged, or tag the in-use digests listed under wouldBreak")
		}
	}
	if len(r.AlreadyBroken) > 0 {
		out = append(out, "rebuild the already-broken images from their commits, push them again, and point the workloads at the new digests; nodes that still run them do so from their cache")
	}
	return out
}

// group arranges a plan by repository; a deleted blob is listed under
// every repository that links it.
func group(s *Storage, p *Plan) Deletions {
	out := Deletions{Repositories: []RepositoryDeletions{}, Blobs: append([]string{}, p.Blobs...)}
	by := map[string]*RepositoryDeletions{}
	get := func(repo string) *RepositoryDeletions {
		if rd, ok := by[repo]; ok {
			return rd
		}
		rd := &RepositoryDeletions{Repository: repo, Manifests: []ManifestDeletion{}, Blobs: []string{}, LayerLinks: []string{}}
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

// Hosts returns the registry hosts the parseable targets name, sorted.
func Hosts(targets []scan.Target) []string {
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
func Resolve(s *Storage, targets []scan.Target, host string) ([]InUse, []Skipped) {
	ims, _, skipped := collect(targets, host, scan.ParseReference)
	var out []InUse
	for _, im := range ims {
		if s.Repositories[im.Repository] == nil {
			skipped = append(skipped, Skipped{Reference: im.Reference, Reason: "repository " + im.Repository + " is not in the storage"})
			continue
		}
		out = append(out, im)
	}
	return out, skipped
}

// collect parses in-use targets with parse, merges the uses of references
// that normalize alike, and skips those that do not parse or are on
// another host than host (when set). Each InUse has the repository path
// (without host) and its parsed reference at the same index.
func collect(targets []scan.Target, host string, parse func(string) (string, name.Reference, error)) ([]InUse, []name.Reference, []Skipped) {
	var (
		out     []InUse
		refs    []name.Reference
		skipped []Skipped
	)
	idx := map[string]int{}
	for _, t := range targets {
		norm, ref, err := parse(t.Ref)
		if err != nil {
			skipped = append(skipped, Skipped{Reference: t.Ref, Reason: err.Error()})
			continue
		}
		if i, ok := idx[norm]; ok {
			out[i].Uses = append(out[i].Uses, t.Uses...)
			continue
		}
		if host != "" && ref.Context().RegistryStr() != host {
			skipped = append(skipped, Skipped{Reference: norm, Reason: "on another registry host than " + host})
			continue
		}
		im := InUse{Reference: norm, Repository: ref.Context().RepositoryStr(), Uses: append([]scan.Use(nil), t.Uses...)}
		switch r := ref.(type) {
		case name.Digest:
			im.Digest = r.DigestStr()
		case name.Tag:
			im.Tag = r.TagStr()
		}
		idx[norm] = len(out)
		out = append(out, im)
		refs = append(refs, ref)
	}
	return out, refs, skipped
}
