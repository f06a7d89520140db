package cleanup

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// gitlabTag is one tag as GitLab's registry API lists it
// (/projects/:id/registry/repositories/:repository_id/tags, or the tag
// details endpoint, which adds revision, digest, created_at and
// total_size).
type gitlabTag struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Location  string `json:"location"`
	Revision  string `json:"revision"`
	Digest    string `json:"digest"`
	CreatedAt string `json:"created_at"`
	// UpdatedAt is read when an export has it: the cleanup service on
	// GitLab's own registry orders tags by updated_at, else created_at.
	UpdatedAt string `json:"updated_at"`
}

// readGitLabTags reads GitLab's registry tags JSON for one repository:
// each tag's digest and push time (updated_at when the export has it, as
// the cleanup service orders by it, else created_at). The repository is
// the tag's path without ":<tag>".
func readGitLabTags(file string, data []byte) (*State, error) {
	var tags []gitlabTag
	if err := yaml.Unmarshal(data, &tags); err != nil {
		return nil, fmt.Errorf("reading the tags: %w", err)
	}
	s := &State{}
	for i, t := range tags {
		if t.Name == "" {
			return nil, fmt.Errorf("tags[%d] has no name", i)
		}
		repo, ok := strings.CutSuffix(t.Path, ":"+t.Name)
		if !ok {
			return nil, fmt.Errorf("tags[%d]: path %q does not end in :%s", i, t.Path, t.Name)
		}
		if s.Repository == "" {
			s.Repository = repo
		} else if repo != s.Repository {
			return nil, fmt.Errorf("tags[%d] is of repository %q, not %q: one export per repository", i, repo, s.Repository)
		}
		if err := checkDigest("digest", t.Digest); err != nil {
			return nil, fmt.Errorf("tags[%d] (%s): %w", i, t.Name, err)
		}
		pushed, err := gitlabTime(t.UpdatedAt, t.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("tags[%d] (%s): %w", i, t.Name, err)
		}
		s.Tags = append(s.Tags, TagState{Name: t.Name, Digest: t.Digest, Pushed: pushed})
	}
	return s, nil
}

// gitlabTime is the first of the times that is set, parsed (GitLab prints
// ISO 8601 with an offset, "2019-01-10T13:39:08.229+00:00").
func gitlabTime(times ...string) (time.Time, error) {
	for _, s := range times {
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q is not ISO 8601: %w", s, err)
		}
		return t.UTC(), nil
	}
	return time.Time{}, nil
}
