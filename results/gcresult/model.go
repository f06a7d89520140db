package gcresult

import "fmt"

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
