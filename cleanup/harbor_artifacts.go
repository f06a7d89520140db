package cleanup

import (
	"fmt"
	"strconv"
	"time"

	"sigs.k8s.io/yaml"
)

// harborArtifact is one artifact as
// /api/v2.0/projects/P/repositories/R/artifacts?with_tag=true lists it.
type harborArtifact struct {
	ID                int64         `json:"id"`
	Digest            string        `json:"digest"`
	MediaType         string        `json:"media_type"`
	ManifestMediaType string        `json:"manifest_media_type"`
	PushTime          string        `json:"push_time"`
	PullTime          string        `json:"pull_time"`
	Tags              []harborTag   `json:"tags"`
	References        []harborChild `json:"references"`
}

type harborTag struct {
	Name     string `json:"name"`
	PushTime string `json:"push_time"`
	PullTime string `json:"pull_time"`
}

type harborChild struct {
	ChildDigest string `json:"child_digest"`
}

// readHarborArtifacts reads Harbor's artifacts JSON for one repository:
// each artifact's push and pull times, tags with times of their own, and
// an index's children. Harbor prints a time never set as
// "0001-01-01T00:00:00.000Z", which reads as the zero time. The export
// does not name its repository.
func readHarborArtifacts(file string, data []byte) (*State, error) {
	var arts []harborArtifact
	if err := yaml.Unmarshal(data, &arts); err != nil {
		return nil, fmt.Errorf("reading the artifacts: %w", err)
	}
	s := &State{}
	for i, a := range arts {
		ms, tags, err := a.state()
		if err != nil {
			return nil, fmt.Errorf("artifacts[%d] (%s): %w", i, a.Digest, err)
		}
		s.Manifests = append(s.Manifests, ms)
		s.Tags = append(s.Tags, tags...)
	}
	return s, nil
}

func (a harborArtifact) state() (ManifestState, []TagState, error) {
	if a.Digest == "" {
		return ManifestState{}, nil, fmt.Errorf("no digest")
	}
	if err := checkDigest("digest", a.Digest); err != nil {
		return ManifestState{}, nil, err
	}
	ms := ManifestState{Digest: a.Digest, MediaType: a.ManifestMediaType}
	if ms.MediaType == "" {
		ms.MediaType = a.MediaType
	}
	if a.ID != 0 {
		ms.ID = strconv.FormatInt(a.ID, 10)
	}
	var err error
	if ms.Pushed, err = harborTime(a.PushTime); err != nil {
		return ms, nil, err
	}
	if ms.Pulled, err = harborTime(a.PullTime); err != nil {
		return ms, nil, err
	}
	for _, c := range a.References {
		ms.Children = append(ms.Children, c.ChildDigest)
	}
	var tags []TagState
	for _, t := range a.Tags {
		ms.Tags = append(ms.Tags, t.Name)
		ts := TagState{Name: t.Name, Digest: a.Digest}
		if ts.Pushed, err = harborTime(t.PushTime); err != nil {
			return ms, nil, fmt.Errorf("tag %s: %w", t.Name, err)
		}
		if ts.Pulled, err = harborTime(t.PullTime); err != nil {
			return ms, nil, fmt.Errorf("tag %s: %w", t.Name, err)
		}
		tags = append(tags, ts)
	}
	return ms, tags, nil
}

// harborTime parses Harbor's times; year 1 (never) is the zero time.
func harborTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not ISO 8601: %w", s, err)
	}
	if t.Year() <= 1 {
		return time.Time{}, nil
	}
	return t.UTC(), nil
}
