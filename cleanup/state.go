package cleanup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"sigs.k8s.io/yaml"
)

// ErrUnknownState is returned for a file that is none of the exports
// ReadState knows.
var ErrUnknownState = errors.New("not a registry export regcheck knows (GitHub's package versions, aws ecr describe-images, GitLab's registry tags, Harbor's artifacts)")

// State is what a service's own export says of one repository that the
// OCI API does not: when each manifest and tag was pushed and pulled, the
// service's ids, the archive tier, and the manifests no tag reaches.
type State struct {
	// Service names the export's shape: "ghcr", "ecr", "gitlab", "harbor".
	Service string
	File    string
	// Repository is the repository the export names, when it does (ECR's
	// repositoryName); empty when only the command that made it did.
	Repository string
	Manifests  []ManifestState
	Tags       []TagState
	// Notes say what the export lacks (a nextToken: one page of several).
	Notes []string
}

// ManifestState is one manifest (a GHCR package version, an ECR image, a
// Harbor artifact) as the export lists it.
type ManifestState struct {
	Digest    string
	MediaType string
	// Tags are the tags the export says name it.
	Tags     []string
	Children []string
	Pushed   time.Time
	Updated  time.Time
	Pulled   time.Time
	ID       string
	Archived bool
}

// TagState is one tag as the export lists it, where it has times of its
// own (GitLab's created_at, Harbor's per-tag push and pull times).
type TagState struct {
	Name   string
	Digest string
	Pushed time.Time
	Pulled time.Time
}

// stateFormat is one kind of export.
type stateFormat struct {
	service string
	detect  func(doc any) bool
	read    func(file string, data []byte) (*State, error)
}

var stateFormats = []stateFormat{
	{"ghcr", isGHCRVersions, readGHCRVersions},
	{"ecr", isECRImages, readECRImages},
	{"gitlab", isGitLabTags, readGitLabTags},
	{"harbor", isHarborArtifacts, readHarborArtifacts},
}

// ReadState reads one service export, telling its shape apart by content.
func ReadState(file string, data []byte) (*State, error) {
	doc, err := stateDoc(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, f := range stateFormats {
		if f.detect(doc) {
			s, err := f.read(file, data)
			if err != nil {
				return nil, fmt.Errorf("%s (%s export): %w", file, f.service, err)
			}
			s.Service, s.File = f.service, file
			return s, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", file, ErrUnknownState)
}

// stateDoc is the export's document for detection: YAML or JSON, or the
// first of several JSON values one after another (`gh api --paginate`
// writes one array per page).
func stateDoc(data []byte) (any, error) {
	var doc any
	yerr := yaml.Unmarshal(data, &doc)
	if yerr == nil {
		return doc, nil
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, yerr
	}
	return doc, nil
}

// Merge adds what s says to r: times, ids and the archive tier of the
// manifests and tags r holds, and the manifests r lacks (a service lists
// untagged manifests the OCI API cannot), with the tags s gives them where
// r has no such tag.
func (s *State) Merge(r *Repository) {
	for _, ms := range s.Manifests {
		m, ok := r.Manifests[ms.Digest]
		if !ok {
			m = &Manifest{Digest: ms.Digest, MediaType: ms.MediaType, Children: append([]string(nil), ms.Children...)}
			r.Manifests[ms.Digest] = m
		}
		m.Pushed, m.Updated, m.Pulled = orTime(ms.Pushed, m.Pushed), orTime(ms.Updated, m.Updated), orTime(ms.Pulled, m.Pulled)
		if ms.ID != "" {
			m.ID = ms.ID
		}
		m.Archived = m.Archived || ms.Archived
		for _, t := range ms.Tags {
			if _, ok := r.Tags[t]; !ok {
				r.Tags[t] = &Tag{Name: t, Digest: ms.Digest}
			}
		}
	}
	for _, ts := range s.Tags {
		t, ok := r.Tags[ts.Name]
		if !ok {
			t = &Tag{Name: ts.Name, Digest: ts.Digest}
			r.Tags[ts.Name] = t
		}
		t.Pushed, t.Pulled = orTime(ts.Pushed, t.Pushed), orTime(ts.Pulled, t.Pulled)
	}
}

func orTime(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	return a
}

// isGHCRVersions: GitHub's package versions are a list whose entries have
// metadata.package_type or metadata.container.
func isGHCRVersions(doc any) bool {
	m := firstMap(doc)
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		return false
	}
	_, pt := md["package_type"]
	_, c := md["container"]
	return pt || c
}

// isECRImages: aws ecr describe-images has imageDetails.
func isECRImages(doc any) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m["imageDetails"]
	return ok
}

// isGitLabTags: GitLab's registry tags are a list whose entries have a
// location and a path.
func isGitLabTags(doc any) bool {
	m := firstMap(doc)
	_, loc := m["location"]
	_, p := m["path"]
	return loc && p
}

// isHarborArtifacts: Harbor's artifacts are a list whose entries have a
// digest and a push_time.
func isHarborArtifacts(doc any) bool {
	m := firstMap(doc)
	_, d := m["digest"]
	_, pt := m["push_time"]
	return d && pt
}

// firstMap is doc's first entry when doc is a non-empty list of maps.
func firstMap(doc any) map[string]any {
	l, ok := doc.([]any)
	if !ok || len(l) == 0 {
		return nil
	}
	m, _ := l[0].(map[string]any)
	return m
}

// digestRE is the OCI image spec's digest grammar (algorithm ":"
// encoded).
var digestRE = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)

// checkDigest refuses what an export gives as a digest and is not one (an
// npm package's versions are named "1.2.3"): field is the export's word
// for it.
func checkDigest(field, d string) error {
	if !digestRE.MatchString(d) {
		return fmt.Errorf("%s %q is not a digest", field, d)
	}
	return nil
}
