// Package protectresult is what protect plans, writes and releases: the
// keep set, the shield (keep-tags) per manifest, and the proof (the same
// collector simulated over the shielded storage). Filled by package
// protect and rendered by report; it imports nothing of regcheck's but
// types, and no HTTP.
package protectresult

import (
	"time"

	"github.com/regcheck/regcheck/types"
)

// SchemaVersion versions the JSON form of a Report.
const SchemaVersion = "regcheck.protect/v1"

// Status is what became of one keep-tag.
type Status string

// The statuses of a keep-tag.
const (
	// Planned: the tag is needed and not there; a dry run writes nothing.
	Planned Status = "planned"
	// Present: the tag already names the digest; nothing to write.
	Present Status = "present"
	// Written: --apply wrote it.
	Written Status = "written"
	// Failed: writing it failed (Error says why).
	Failed Status = "failed"
)

// Report is one protect run.
type Report struct {
	SchemaVersion  string `json:"schemaVersion"`
	Model          string `json:"model"`
	DeleteUntagged bool   `json:"deleteUntagged"`
	Storage        string `json:"storage,omitempty"`
	Owner          string `json:"owner"`
	// Applied is true for --apply (tags were written), false for the plan.
	Applied bool `json:"applied"`
	// Keep is every manifest the in-use set needs, with its shield.
	Keep []Kept `json:"keep"`
	// Proof is the collector simulated before and over the shielded state.
	Proof Proof `json:"proof"`
	// Unprotected are in-use images the shield cannot save, and why.
	Unprotected []Unprotected `json:"unprotected"`
	// Released are the audited tags --release handled.
	Released []Release `json:"released,omitempty"`
	// Incomplete says why the in-use set is not whole, when it is not.
	Incomplete []string `json:"incomplete,omitempty"`
	// Notes say what the plan could not see or do.
	Notes  []string `json:"notes,omitempty"`
	Counts Counts   `json:"counts"`
}

// Kept is one manifest of the keep set in one repository.
type Kept struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
	MediaType  string `json:"mediaType,omitempty"`
	// Why says what needs it: the in-use reference, and its role (the
	// image, an index's child, a digest pin).
	Why string `json:"why"`
	// Tag is the keep-tag that shields it; empty when the collector keeps
	// it without one (distribution 3.x marks through a kept index).
	Tag    string      `json:"tag,omitempty"`
	Status Status      `json:"status,omitempty"`
	Error  string      `json:"error,omitempty"`
	Uses   []types.Use `json:"uses,omitempty"`
}

// Proof is the prediction before the shield and over it.
type Proof struct {
	// BreakBefore counts in-use images the run breaks without the shield;
	// BreakAfter with it (0 is the proof).
	BreakBefore int `json:"breakBefore"`
	BreakAfter  int `json:"breakAfter"`
	// AlreadyBroken counts in-use images broken before any run.
	AlreadyBroken int `json:"alreadyBroken"`
}

// Unprotected is an in-use image the shield does not save.
type Unprotected struct {
	Reference string `json:"reference"`
	Reason    string `json:"reason"`
}

// Release is one audited tag --release looked at.
type Release struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
	// Removed is true when the tag was deleted; else Reason says why not.
	Removed bool   `json:"removed"`
	Reason  string `json:"reason,omitempty"`
}

// Counts sums a report.
type Counts struct {
	Keep        int `json:"keep"`
	Tags        int `json:"tags"`
	Planned     int `json:"planned"`
	Present     int `json:"present"`
	Written     int `json:"written"`
	Failed      int `json:"failed"`
	Unprotected int `json:"unprotected"`
	Released    int `json:"released"`
}

// AuditVersion versions the audit file.
const AuditVersion = "regcheck.protect.audit/v1"

// Audit is the --audit file: every keep-tag protect wrote.
type Audit struct {
	SchemaVersion string       `json:"schemaVersion"`
	Entries       []AuditEntry `json:"entries"`
}

// AuditEntry is one keep-tag written.
type AuditEntry struct {
	Repository string    `json:"repository"`
	Tag        string    `json:"tag"`
	Digest     string    `json:"digest"`
	Why        string    `json:"why"`
	Owner      string    `json:"owner"`
	Time       time.Time `json:"time"`
}
