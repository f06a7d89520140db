package cleanup

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ecrImages is what `aws ecr describe-images` prints.
type ecrImages struct {
	ImageDetails []ecrImageDetail `json:"imageDetails"`
	// NextToken is set when the output is one page of several.
	NextToken string `json:"nextToken"`
}

// ecrImageDetail is one image (AWS's API reference, ImageDetail).
type ecrImageDetail struct {
	RegistryID             string   `json:"registryId"`
	RepositoryName         string   `json:"repositoryName"`
	ImageDigest            string   `json:"imageDigest"`
	ImageTags              []string `json:"imageTags"`
	ImageManifestMediaType string   `json:"imageManifestMediaType"`
	ArtifactMediaType      string   `json:"artifactMediaType"`
	ImagePushedAt          ecrTime  `json:"imagePushedAt"`
	LastRecordedPullTime   ecrTime  `json:"lastRecordedPullTime"`
	// ImageStatus is ACTIVE, ARCHIVED or ACTIVATING (being restored);
	// absent before the archive tier existed.
	ImageStatus    string  `json:"imageStatus"`
	LastArchivedAt ecrTime `json:"lastArchivedAt"`
}

// ecrTime is a time the AWS CLI prints either as an ISO 8601 string or as
// epoch seconds (a number, possibly fractional), depending on its
// cli_timestamp_format and version.
type ecrTime struct{ time.Time }

// UnmarshalJSON reads either form.
func (t *ecrTime) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" || s == `""` {
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		return t.parse(str)
	}
	return t.parse(s)
}

// The epoch seconds of 0001-01-01 and 9999-12-31T23:59:59Z.
const (
	minEpoch = -62135596800
	maxEpoch = 253402300799
)

func (t *ecrTime) parse(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// ParseFloat reads "Infinity", "NaN" and 1e300 too; a time is
		// between years 1 and 9999, as RFC 3339 writes them.
		if math.IsNaN(f) || f < minEpoch || f > maxEpoch {
			return fmt.Errorf("time %s is out of range (epoch seconds between years 1 and 9999)", s)
		}
		sec, frac := math.Modf(f)
		t.Time = time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC()
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700", "2006-01-02T15:04:05.999999999"} {
		if v, err := time.Parse(layout, s); err == nil {
			t.Time = v.UTC()
			return nil
		}
	}
	return fmt.Errorf("time %q is neither ISO 8601 nor epoch seconds", s)
}

// readECRImages reads `aws ecr describe-images` output: one repository's
// images with their push, pull and archive times. An image whose
// imageStatus is ARCHIVED or ACTIVATING (being restored) is not pullable,
// and is marked Archived. lastArchivedAt is kept as the manifest's Updated
// time (what sinceImageTransitioned counts from).
func readECRImages(file string, data []byte) (*State, error) {
	var doc ecrImages
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("reading imageDetails: %w", err)
	}
	s := &State{}
	if doc.NextToken != "" {
		s.Notes = append(s.Notes, "the export ends with a nextToken: it is one page of several, and the images of the others are not aged (run aws ecr describe-images without --max-items or --page-size, which follows every page)")
	}
	seen := map[string]int{}
	for i, img := range doc.ImageDetails {
		if img.ImageDigest == "" {
			return nil, fmt.Errorf("imageDetails[%d] has no imageDigest", i)
		}
		if err := checkDigest("imageDigest", img.ImageDigest); err != nil {
			return nil, fmt.Errorf("imageDetails[%d]: %w", i, err)
		}
		if j, ok := seen[img.ImageDigest]; ok {
			return nil, fmt.Errorf("imageDetails[%d] lists %s, as imageDetails[%d] does: ECR lists an image once (two exports concatenated?)", i, img.ImageDigest, j)
		}
		seen[img.ImageDigest] = i
		if s.Repository == "" {
			s.Repository = img.RepositoryName
		} else if img.RepositoryName != "" && img.RepositoryName != s.Repository {
			return nil, fmt.Errorf("imageDetails[%d] is of repository %q, not %q: one export per repository", i, img.RepositoryName, s.Repository)
		}
		mt := img.ImageManifestMediaType
		if mt == "" {
			mt = img.ArtifactMediaType
		}
		status := strings.ToUpper(img.ImageStatus)
		s.Manifests = append(s.Manifests, ManifestState{
			Digest:    img.ImageDigest,
			MediaType: mt,
			Tags:      append([]string(nil), img.ImageTags...),
			Pushed:    img.ImagePushedAt.Time,
			Pulled:    img.LastRecordedPullTime.Time,
			Updated:   img.LastArchivedAt.Time,
			Archived:  status == "ARCHIVED" || status == "ACTIVATING",
		})
	}
	return s, nil
}
