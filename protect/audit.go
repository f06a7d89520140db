package protect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/regcheck/regcheck/internal/atomicfile"
	"github.com/regcheck/regcheck/results/protectresult"
)

// LoadAudit reads the audit file at path; a file not there is an empty
// audit.
func LoadAudit(path string) (*protectresult.Audit, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &protectresult.Audit{SchemaVersion: protectresult.AuditVersion, Entries: []protectresult.AuditEntry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the audit file: %w", err)
	}
	var a protectresult.Audit
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("reading the audit file %s: %w", path, err)
	}
	if a.SchemaVersion != protectresult.AuditVersion {
		return nil, fmt.Errorf("audit file %s: schemaVersion %q, want %q", path, a.SchemaVersion, protectresult.AuditVersion)
	}
	if a.Entries == nil {
		a.Entries = []protectresult.AuditEntry{}
	}
	return &a, nil
}

// SaveAudit replaces the audit file at path atomically; when it already
// holds the same entries nothing is written.
func SaveAudit(path string, a *protectresult.Audit) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the audit: %w", err)
	}
	b = append(b, '\n')
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return fmt.Errorf("writing the audit file: %w", err)
	}
	return nil
}

// audited reports whether a holds the tag on digest in repository for owner.
func audited(a *protectresult.Audit, owner, repository, tag, digest string) bool {
	for _, e := range a.Entries {
		if e.Owner == owner && e.Repository == repository && e.Tag == tag && e.Digest == digest {
			return true
		}
	}
	return false
}
