package cleanup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// ghcrVersion is one GHCR package version as GitHub's REST API lists it
// (GET /orgs/ORG/packages/container/NAME/versions, or /users/USER/... or
// /user/...): a version is one manifest, named by its digest.
type ghcrVersion struct {
	ID        json.Number `json:"id"`
	Name      string      `json:"name"`
	CreatedAt string      `json:"created_at"`
	UpdatedAt string      `json:"updated_at"`
	Metadata  struct {
		PackageType string `json:"package_type"`
		Container   struct {
			Tags []string `json:"tags"`
		} `json:"container"`
	} `json:"metadata"`
}

// readGHCRVersions reads `gh api .../packages/container/NAME/versions`: one
// JSON array of versions, or the several arrays `gh api --paginate`
// writes one after another.
func readGHCRVersions(file string, data []byte) (*State, error) {
	s := &State{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for page := 1; ; page++ {
		var versions []ghcrVersion
		err := dec.Decode(&versions)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("package versions page %d: %w", page, err)
		}
		for i, v := range versions {
			ms, err := v.manifestState()
			if err != nil {
				return nil, fmt.Errorf("package versions page %d, entry %d: %w", page, i, err)
			}
			s.Manifests = append(s.Manifests, ms)
		}
	}
	if len(s.Manifests) == 0 {
		return nil, errors.New("no package versions")
	}
	return s, nil
}

// manifestState is what a version says of its manifest.
func (v ghcrVersion) manifestState() (ManifestState, error) {
	if v.Name == "" {
		return ManifestState{}, fmt.Errorf("version %s has no name (its digest)", v.ID)
	}
	if err := checkDigest("name", v.Name); err != nil {
		return ManifestState{}, fmt.Errorf("version %s: %w (a container package's versions are named by their digest)", v.ID, err)
	}
	ms := ManifestState{Digest: v.Name, ID: v.ID.String(), Tags: append([]string(nil), v.Metadata.Container.Tags...)}
	var err error
	if ms.Pushed, err = ghcrTime(v.CreatedAt); err != nil {
		return ms, fmt.Errorf("version %s created_at: %w", v.Name, err)
	}
	if ms.Updated, err = ghcrTime(v.UpdatedAt); err != nil {
		return ms, fmt.Errorf("version %s updated_at: %w", v.Name, err)
	}
	return ms, nil
}

// ghcrTime parses GitHub's timestamps (RFC 3339, "2024-05-01T10:00:00Z");
// empty is the zero time.
func ghcrTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, s)
}

// versionID orders GHCR version ids numerically where they are numbers.
func versionID(id string) int64 {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return -1
	}
	return n
}
