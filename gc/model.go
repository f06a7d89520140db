package gc

import (
	"fmt"
	"sort"

	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/storage"
)

// StorageVersion is the release line whose registry serves the storage
// the model collects.
func storageVersion(m gcresult.Model) storage.Version {
	if m == gcresult.Distribution28 {
		return storage.V2
	}
	return storage.V3
}

// Apply returns a copy of s with what the plan deletes removed (nothing
// when the collector would abort). s is not changed, nor is anything on
// disk.
func Apply(s *storage.Storage, p *Plan) *storage.Storage {
	if p == nil || p.Abort != nil {
		return s.Without(nil)
	}
	r := &storage.Removal{Blobs: p.Blobs}
	for _, m := range p.Manifests {
		r.Revisions = append(r.Revisions, storage.Revision{RepoDigest: storage.RepoDigest{Repository: m.Repository, Digest: m.Digest}, TagIndex: m.TagIndex})
	}
	for _, l := range p.LayerLinks {
		r.LayerLinks = append(r.LayerLinks, storage.RepoDigest{Repository: l.Repository, Digest: l.Digest})
	}
	return s.Without(r)
}

// Plan is what one garbage-collect run would delete.
type Plan struct {
	Model          gcresult.Model `json:"model"`
	DeleteUntagged bool           `json:"deleteUntagged"`
	// Abort is set when the collector would stop during its mark phase; it
	// then deletes nothing and the lists below are empty.
	Abort *gcresult.Abort `json:"abort,omitempty"`
	// Manifests whose revision link would be deleted, with the tag index
	// entries removed along with each.
	Manifests []gcresult.ManifestDeletion `json:"manifests"`
	// Blobs whose data would be deleted (blob storage is shared by every
	// repository), sorted.
	Blobs []string `json:"blobs"`
	// LayerLinks are _layers links distribution 3 would delete.
	LayerLinks []LayerLink `json:"layerLinks"`
	// Marked counts the digests the mark phase marked.
	Marked int `json:"marked"`
}

// LayerLink is one _layers/<alg>/<hex> link.
type LayerLink struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
}

// Simulate runs the mark-and-sweep of model over s without touching it,
// meeting repositories, manifests and blobs in the order the registry's
// storage walk does (the v3 mark is order-dependent). An error means the
// storage could not be read; a collector that would fail is Plan.Abort.
func Simulate(s *storage.Storage, model gcresult.Model, deleteUntagged bool) (*Plan, error) {
	if _, err := gcresult.ParseModel(string(model)); err != nil {
		return nil, err
	}
	sim := &simulation{s: s, model: model, deleteUntagged: deleteUntagged, marked: map[string]bool{}}
	plan := &Plan{Model: model, DeleteUntagged: deleteUntagged, Manifests: []gcresult.ManifestDeletion{}, Blobs: []string{}, LayerLinks: []LayerLink{}}
	if abort, err := sim.mark(); err != nil {
		return nil, err
	} else if abort != nil {
		plan.Abort = abort
		return plan, nil
	}
	plan.Marked = len(sim.marked)
	for _, m := range sim.untagged {
		if model == gcresult.Distribution3 && sim.marked[m.Digest] {
			continue // unmarkReferencedManifest: a kept index references it
		}
		plan.Manifests = append(plan.Manifests, m)
	}
	for _, d := range s.BlobOrder {
		if !sim.marked[d] {
			plan.Blobs = append(plan.Blobs, d)
		}
	}
	plan.LayerLinks = append(plan.LayerLinks, sim.layerLinks...)
	sort.Strings(plan.Blobs)
	sort.Slice(plan.Manifests, func(i, j int) bool {
		a, b := plan.Manifests[i], plan.Manifests[j]
		return a.Repository < b.Repository || a.Repository == b.Repository && a.Digest < b.Digest
	})
	return plan, nil
}

type simulation struct {
	s              *storage.Storage
	model          gcresult.Model
	deleteUntagged bool
	marked         map[string]bool
	untagged       []gcresult.ManifestDeletion
	layerLinks     []LayerLink
}

// mark is MarkAndSweep's repository enumeration and mark phase.
func (sim *simulation) mark() (*gcresult.Abort, error) {
	for _, rd := range sim.s.Dirs() {
		// 2.x enumerates directories holding _layers; 3.x those holding _manifests.
		if sim.model == gcresult.Distribution28 && !rd.Layers || sim.model == gcresult.Distribution3 && !rd.ManifestDir {
			continue
		}
		r := sim.s.Repositories[rd.Name]
		abort, err := sim.markRepository(r)
		if abort != nil || err != nil {
			return abort, err
		}
	}
	return nil, nil
}

func (sim *simulation) markRepository(r *storage.Repository) (*gcresult.Abort, error) {
	// A missing _manifests/revisions is a PathNotFound the collector skips.
	for _, l := range r.RevisionOrder {
		if l.Target == "" {
			return &gcresult.Abort{Repository: r.Name, Digest: l.Dir, Message: fmt.Sprintf("failed to mark: invalid link for %s in %s", l.Dir, r.Name)}, nil
		}
		d := l.Target
		// The manifest enumerator skips links whose blob is unknown.
		if _, ok := sim.s.LinkedManifest(r, d, storageVersion(sim.model)); !ok {
			continue
		}
		if sim.deleteUntagged && len(lookupTags(r, d)) == 0 {
			if !r.HasTags {
				if sim.model == gcresult.Distribution28 {
					return &gcresult.Abort{Repository: r.Name, Digest: d, Message: fmt.Sprintf("failed to retrieve tags unknown repository name=%s", r.Name)}, nil
				}
				continue // 3.x: "manifest tags path of repository does not exist"; neither marked nor deleted
			}
			del := gcresult.ManifestDeletion{Repository: r.Name, Digest: d}
			for _, t := range r.TagOrder {
				if r.Tags[t].Index[d] {
					del.TagIndex = append(del.TagIndex, t)
				}
			}
			sim.untagged = append(sim.untagged, del)
			continue
		}
		sim.marked[d] = true
		if err := sim.markReferences(r, d); err != nil {
			return &gcresult.Abort{Repository: r.Name, Digest: d, Message: "failed to mark: " + err.Error()}, nil
		}
	}
	if sim.model == gcresult.Distribution3 {
		if !r.HasLayers {
			return &gcresult.Abort{Repository: r.Name, Message: fmt.Sprintf("failed to mark: Path not found: /docker/registry/v2/repositories/%s/_layers", r.Name)}, nil
		}
		for _, l := range r.LayerOrder {
			if l.Target == "" {
				return &gcresult.Abort{Repository: r.Name, Digest: l.Dir, Message: fmt.Sprintf("failed to mark: invalid layer link for %s in %s", l.Dir, r.Name)}, nil
			}
			if !sim.s.LinkedBlob(r, l.Target) {
				continue // enumerator skips links to missing blobs
			}
			if !sim.marked[l.Target] {
				sim.layerLinks = append(sim.layerLinks, LayerLink{Repository: r.Name, Digest: l.Target})
			}
		}
	}
	return nil, nil
}

// markReferences marks what manifest d references: directly on 2.x; on 3.x
// recursively into every reference that is itself a manifest in r and was
// not marked before (the ingester's "already marked" short cut included).
func (sim *simulation) markReferences(r *storage.Repository, d string) error {
	target, _ := sim.s.LinkedManifest(r, d, storageVersion(sim.model))
	m, err := sim.s.ManifestData(target)
	if err != nil {
		return fmt.Errorf("failed to retrieve manifest for digest %s: %v", d, err)
	}
	for _, ref := range m.References() {
		if sim.model == gcresult.Distribution28 {
			sim.marked[ref] = true
			continue
		}
		if sim.marked[ref] {
			continue
		}
		sim.marked[ref] = true
		if _, ok := sim.s.LinkedManifest(r, ref, storageVersion(sim.model)); ok {
			if err := sim.markReferences(r, ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookupTags is the tag store's Lookup: the tags whose current link names d.
func lookupTags(r *storage.Repository, d string) []string {
	var out []string
	for _, t := range r.TagOrder {
		if r.Tags[t].Current == d {
			out = append(out, t)
		}
	}
	return out
}
