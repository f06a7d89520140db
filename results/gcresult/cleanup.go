package gcresult

import "time"

// ModeCleanup predicted a registry cleanup (a GHCR cleanup action, an ECR
// lifecycle policy, a GitLab cleanup policy, Harbor tag retention) through
// the registry API and the service's own export (CheckCleanup).
const ModeCleanup Mode = "cleanup"

// Cleanup is what a cleanup prediction adds to a Report: which cleanups,
// evaluated when, how many runs, and every tag and manifest the runs
// remove. Its WouldBreak entries carry the rule and the fix in the
// cleanup's own terms (Loss.Rule, Loss.Keep).
type Cleanup struct {
	// At is the time the policies were evaluated at; Runs how many runs
	// were applied one after the other.
	At   time.Time `json:"at"`
	Runs int       `json:"runs"`
	// Policies are the cleanups read, with the repositories each applied
	// to among those examined.
	Policies []CleanupPolicy `json:"policies"`
	// States are the service exports merged, by file.
	States []CleanupState `json:"states"`
	// Deletions is everything the runs remove, by policy, repository,
	// run, then kind and name.
	Deletions []CleanupDeletion `json:"deletions"`
}

// CleanupPolicy is one cleanup as read.
type CleanupPolicy struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Repositories are the examined repositories it cleans.
	Repositories []string `json:"repositories"`
}

// CleanupState is one service export merged into a repository.
type CleanupState struct {
	File       string `json:"file"`
	Service    string `json:"service"`
	Repository string `json:"repository"`
}

// DeletionKind says what a cleanup does to a tag or a manifest.
type DeletionKind string

// The kinds of removal.
const (
	// TagRemoved: the tag goes; its manifest stays unless deleted too.
	TagRemoved DeletionKind = "tag"
	// ManifestDeleted: the manifest goes, with every tag naming it.
	ManifestDeleted DeletionKind = "manifest"
	// ManifestArchived: the manifest moves to an archive tier (ECR's
	// ARCHIVE storage class): listed, a pull answers 404 until restored.
	ManifestArchived DeletionKind = "archive"
)

// CleanupDeletion is one tag or manifest a cleanup run removes.
type CleanupDeletion struct {
	Policy     string       `json:"policy"`
	Repository string       `json:"repository"`
	Run        int          `json:"run"`
	Kind       DeletionKind `json:"kind"`
	Tag        string       `json:"tag,omitempty"`
	Digest     string       `json:"digest"`
	// Rule names the rule in the policy's words; Eligible is when the
	// manifest or tag became eligible for it (absent when the rule is not
	// about time); Keep says how the policy would have kept it.
	Rule     string     `json:"rule"`
	Eligible *time.Time `json:"eligible,omitempty"`
	Keep     string     `json:"keep,omitempty"`
	// WithManifest says a removed tag goes because the manifest it names
	// (Digest) is deleted: deleting the manifest removes it.
	WithManifest bool `json:"withManifest,omitempty"`
}
