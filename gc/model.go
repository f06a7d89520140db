package gc

import (
	"fmt"
	"sort"

	"github.com/regcheck/regcheck/storage"
)

// Model is a garbage collector whose mark-and-sweep Simulate reproduces.
type Model string

// The collectors modelled.
const (
	// Distribution28 is docker/distribution 2.8.x (registry/storage/garbagecollect.go
	// at v2.8.3): it marks each manifest and only its direct references. With
	// --delete-untagged it deletes every manifest no tag's current link
	// names, the children of tagged indexes included, and then every blob
	// only they referenced. It stops with "unknown repository" when an
	// untagged manifest sits in a repository without _manifests/tags.
	// So its --delete-untagged deletes every OCI 1.1 referrer (a sigstore
	// bundle, an SBOM, an attestation pushed by digest), the entries of
	// cosign's referrers tag index included.
	Distribution28 Model = "distribution-2.8"
	// Distribution3 is distribution/distribution 3.x (v3.1.2): it marks
	// recursively through indexes, keeps what a kept manifest references,
	// and removes _layers links to unmarked blobs. With --delete-untagged a
	// repository without _manifests/tags is skipped, not marked. A
	// manifest's references are its config and layers (an index's
	// children), never its subject: an OCI 1.1 referrer no tag names is
	// kept only when a tagged index lists it (cosign's referrers tag
	// sha256-<hex> does), and deleted otherwise; the .sig, .att and
	// referrers tags of a deleted subject are kept and dangle.
	Distribution3 Model = "distribution-3"
)

// Release names the registry releases the model stands for, as a person
// says it ("distribution 2.x").
func (m Model) Release() string {
	switch m {
	case Distribution28:
		return "distribution 2.x"
	case Distribution3:
		return "distribution 3.x"
	}
	return string(m)
}

// StorageVersion is the release line whose registry serves the storage
// the model collects.
func (m Model) StorageVersion() storage.Version {
	if m == Distribution28 {
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

// Models lists the models by name.
func Models() []Model { return []Model{Distribution28, Distribution3} }

// ParseModel reads a model's name.
func ParseModel(s string) (Model, error) {
	for _, m := range Models() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown GC model %q (want %s or %s)", s, Distribution28, Distribution3)
}

// Plan is what one garbage-collect run would delete.
type Plan struct {
	Model          Model `json:"model"`
	DeleteUntagged bool  `json:"deleteUntagged"`
	// Abort is set when the collector would stop during its mark phase; it
	// then deletes nothing and the lists below are empty.
	Abort *Abort `json:"abort,omitempty"`
	// Manifests whose revision link would be deleted, with the tag index
	// entries removed along with each.
	Manifests []ManifestDeletion `json:"manifests"`
	// Blobs whose data would be deleted (blob storage is shared by every
	// repository), sorted.
	Blobs []string `json:"blobs"`
	// LayerLinks are _layers links distribution 3 would delete.
	LayerLinks []LayerLink `json:"layerLinks"`
	// Marked counts the digests the mark phase marked.
	Marked int `json:"marked"`
}

// ManifestDeletion is one revision link deleted: _manifests/revisions/<alg>/<hex>.
type ManifestDeletion struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
	// TagIndex names the tags whose index/<alg>/<hex> entry goes with it.
	TagIndex []string `json:"tagIndex,omitempty"`
}

// LayerLink is one _layers/<alg>/<hex> link.
type LayerLink struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
}

// Abort is a predicted failure of the collector's mark phase.
type Abort struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest,omitempty"`
	// Message is the collector's own error text.
	Message string `json:"message"`
}

// Simulate runs the mark-and-sweep of model over s without touching it,
// meeting repositories, manifests and blobs in the order the registry's
// storage walk does (the v3 mark is order-dependent). An error means the
// storage could not be read; a collector that would fail is Plan.Abort.
func Simulate(s *storage.Storage, model Model, deleteUntagged bool) (*Plan, error) {
	if _, err := ParseModel(string(model)); err != nil {
		return nil, err
	}
	sim := &simulation{s: s, model: model, deleteUntagged: deleteUntagged, marked: map[string]bool{}}
	plan := &Plan{Model: model, DeleteUntagged: deleteUntagged, Manifests: []ManifestDeletion{}, Blobs: []string{}, LayerLinks: []LayerLink{}}
	if abort, err := sim.mark(); err != nil {
		return nil, err
	} else if abort != nil {
		plan.Abort = abort
		return plan, nil
	}
	plan.Marked = len(sim.marked)
	for _, m := range sim.untagged {
		if model == Distribution3 && sim.marked[m.Digest] {
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
	model          Model
	deleteUntagged bool
	marked         map[string]bool
	untagged       []ManifestDeletion
	layerLinks     []LayerLink
}

// mark is MarkAndSweep's repository enumeration and mark phase.
func (sim *simulation) mark() (*Abort, error) {
	for _, rd := range sim.s.Dirs() {
		// 2.x enumerates directories holding _layers; 3.x those holding _manifests.
		if sim.model == Distribution28 && !rd.Layers || sim.model == Distribution3 && !rd.ManifestDir {
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

func (sim *simulation) markRepository(r *storage.Repository) (*Abort, error) {
	// A missing _manifests/revisions is a PathNotFound the collector skips.
	for _, l := range r.RevisionOrder {
		if l.Target == "" {
			return &Abort{Repository: r.Name, Digest: l.Dir, Message: fmt.Sprintf("failed to mark: invalid link for %s in %s", l.Dir, r.Name)}, nil
		}
		d := l.Target
		// The manifest enumerator skips links whose blob is unknown.
		if _, ok := sim.s.LinkedManifest(r, d, sim.model.StorageVersion()); !ok {
			continue
		}
		if sim.deleteUntagged && len(lookupTags(r, d)) == 0 {
			if !r.HasTags {
				if sim.model == Distribution28 {
					return &Abort{Repository: r.Name, Digest: d, Message: fmt.Sprintf("failed to retrieve tags unknown repository name=%s", r.Name)}, nil
				}
				continue // 3.x: "manifest tags path of repository does not exist"; neither marked nor deleted
			}
			del := ManifestDeletion{Repository: r.Name, Digest: d}
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
			return &Abort{Repository: r.Name, Digest: d, Message: "failed to mark: " + err.Error()}, nil
		}
	}
	if sim.model == Distribution3 {
		if !r.HasLayers {
			return &Abort{Repository: r.Name, Message: fmt.Sprintf("failed to mark: Path not found: /docker/registry/v2/repositories/%s/_layers", r.Name)}, nil
		}
		for _, l := range r.LayerOrder {
			if l.Target == "" {
				return &Abort{Repository: r.Name, Digest: l.Dir, Message: fmt.Sprintf("failed to mark: invalid layer link for %s in %s", l.Dir, r.Name)}, nil
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
	target, _ := sim.s.LinkedManifest(r, d, sim.model.StorageVersion())
	m, err := sim.s.ManifestData(target)
	if err != nil {
		return fmt.Errorf("failed to retrieve manifest for digest %s: %v", d, err)
	}
	for _, ref := range m.References() {
		if sim.model == Distribution28 {
			sim.marked[ref] = true
			continue
		}
		if sim.marked[ref] {
			continue
		}
		sim.marked[ref] = true
		if _, ok := sim.s.LinkedManifest(r, ref, sim.model.StorageVersion()); ok {
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
