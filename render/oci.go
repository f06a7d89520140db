package render

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/registry"
)

// ociSource is a Flux OCIRepository that holds a chart, as
// source-controller reads it.
type ociSource struct {
	url                 string // oci://host/repository
	tag, semver, digest string // spec.ref
	mediaType           string // spec.layerSelector.mediaType, "" for the first layer
}

// ociSourceOf reads the OCIRepository ob.
func ociSourceOf(ob *object) (ociSource, error) {
	spec := child(ob.node, "spec")
	r := child(spec, "ref")
	s := ociSource{url: scalar(spec, "url"), tag: scalar(r, "tag"), semver: scalar(r, "semver"), digest: scalar(r, "digest"),
		mediaType: scalar(child(spec, "layerSelector"), "mediaType")}
	if !strings.HasPrefix(s.url, "oci://") {
		return s, fmt.Errorf("OCIRepository %s: spec.url %q is not oci://", ob.name, s.url)
	}
	switch s.mediaType {
	case "", registry.ChartLayerMediaType, registry.LegacyChartLayerMediaType:
	default:
		return s, fmt.Errorf("OCIRepository %s: layerSelector.mediaType %s is not a Helm chart's layer", ob.name, s.mediaType)
	}
	return s, nil
}

// ref is the reference Flux pulls when neither a digest nor a semver
// range is given: the tag, else latest.
func (s ociSource) ref() string {
	return strings.TrimPrefix(s.url, "oci://") + ":" + cmpOr(s.tag, "latest")
}

// oci fetches the chart s names as source-controller resolves spec.ref:
// the digest, else the newest tag the semver range allows, else the
// tag, else latest. Packages are kept in f.Dir by digest: one pinned by
// digest and kept is not asked of the registry again.
func (f *fetcher) oci(s ociSource) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.digest != "" {
		if data, err := os.ReadFile(f.ociCache(s.digest)); err == nil {
			return data, nil
		}
	}
	rc, err := f.registryClient()
	if err != nil {
		return nil, err
	}
	repo := strings.TrimPrefix(s.url, "oci://")
	ref := s.ref()
	switch {
	case s.digest != "":
		ref = repo + "@" + s.digest
	case s.semver != "":
		tag, err := newestTag(rc, repo, s.semver)
		if err != nil {
			return nil, err
		}
		ref = repo + ":" + tag
	}
	desc, err := rc.Resolve(ref)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", ref, err)
	}
	digest := desc.Digest.String()
	if data, err := os.ReadFile(f.ociCache(digest)); err == nil {
		return data, nil
	}
	res, err := rc.Pull(repo + "@" + digest)
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	if res.Chart == nil || len(res.Chart.Data) == 0 {
		return nil, fmt.Errorf("%s holds no Helm chart layer", ref)
	}
	if err := os.MkdirAll(filepath.Dir(f.ociCache(digest)), 0o755); err == nil {
		_ = os.WriteFile(f.ociCache(digest), res.Chart.Data, 0o644)
	}
	return res.Chart.Data, nil
}

// ociCache is where the chart of the manifest digest is kept.
func (f *fetcher) ociCache(digest string) string {
	return filepath.Join(f.Dir, "oci", strings.ReplaceAll(digest, ":", "-")+".tgz")
}

// registryClient is Helm's registry client with Helm's registry config
// (then Docker's) for credentials, over f's transport.
func (f *fetcher) registryClient() (*registry.Client, error) {
	settings := f.Helm
	if settings == nil {
		settings = cli.New()
	}
	rc, err := registry.NewClient(registry.ClientOptCredentialsFile(settings.RegistryConfig),
		registry.ClientOptWriter(io.Discard), registry.ClientOptHTTPClient(&http.Client{Transport: cappedBodies(plainHTTP(f.Transport, f.Insecure), f.maxSize()), Timeout: f.Timeout}))
	if err != nil {
		return nil, fmt.Errorf("helm registry client: %w", err)
	}
	return rc, nil
}

// newestTag is the newest tag of repo the semver range allows.
func newestTag(rc *registry.Client, repo, constraint string) (string, error) {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return "", fmt.Errorf("ref.semver %q: %w", constraint, err)
	}
	tags, err := rc.Tags(repo)
	if err != nil {
		return "", fmt.Errorf("listing the tags of %s: %w", repo, err)
	}
	for _, t := range tags { // newest first
		if v, err := semver.NewVersion(t); err == nil && c.Check(v) {
			return strings.ReplaceAll(t, "+", "_"), nil
		}
	}
	return "", errNoTag
}

// errNoTag is a semver range no tag of the repository satisfies.
var errNoTag = errors.New("no tag satisfies ref.semver")
