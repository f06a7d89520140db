package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/types"
)

// ErrReferrersUnsupported is what Referrers returns when the registry does
// not serve the OCI 1.1 referrers API: it answered the endpoint 404 (as
// distribution 2.8.3 and 3.1.2 do), 400 or 406. It says nothing about
// whether the subject has referrers: look for the referrers tag-schema
// fallback instead. A 200 that is not an image index (a proxy's page) is
// not this but a fault: the registry answered, and what it answered
// cannot be read.
var ErrReferrersUnsupported = errors.New("the registry does not serve the referrers API")

// Referrers lists the referrers of the manifest with the digest subject in
// repo, with GET /v2/<name>/referrers/<subject>: the descriptors of the
// image index the registry answers with. A non-empty artifactType is sent
// as the filter, and applied here too when the registry says
// (OCI-Filters-Applied) it did not. It returns ErrReferrersUnsupported
// when the endpoint is not served, and any other failure (auth, 429, 5xx,
// timeouts, a garbled body) as a fault: never absence. Each call asks the
// registry; it is not remembered.
func (s *Scanner) Referrers(ctx context.Context, repo name.Repository, subject, artifactType string) ([]ocispec.Descriptor, error) {
	if err := digest.Digest(subject).Validate(); err != nil {
		return nil, fmt.Errorf("referrers of %s: invalid subject digest %q: %w", repo.Name(), subject, err)
	}
	ref := subject
	if artifactType != "" {
		ref += "?artifactType=" + url.QueryEscape(artifactType)
	}
	resp, body, err := s.c.do(ctx, repo, http.MethodGet, "referrers", ref, maxManifest)
	if err != nil {
		return nil, referrersError(repo, subject, err)
	}
	if ct := resp.Header.Get("Content-Type"); mediaType(ct) != ocispec.MediaTypeImageIndex {
		return nil, &RegistryError{Method: http.MethodGet, URL: finalURL(resp, repo.Name()), Status: resp.StatusCode,
			Detail: fmt.Sprintf("the referrers answer has content type %q, not an image index", ct), Err: types.ErrBadResponse}
	}
	var idx ocispec.Index
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, &RegistryError{Method: http.MethodGet, URL: finalURL(resp, repo.Name()), Status: resp.StatusCode,
			Detail: "the referrers answer is not an image index: " + err.Error(), Err: types.ErrBadResponse}
	}
	for i, d := range idx.Manifests {
		if err := d.Digest.Validate(); err != nil {
			return nil, &RegistryError{Method: http.MethodGet, URL: finalURL(resp, repo.Name()), Status: resp.StatusCode,
				Detail: fmt.Sprintf("referrer %d has an invalid digest %q: %v", i, d.Digest, err), Err: types.ErrBadResponse}
		}
	}
	if artifactType == "" || resp.Header.Get("OCI-Filters-Applied") == "artifactType" {
		return idx.Manifests, nil
	}
	var out []ocispec.Descriptor
	for _, d := range idx.Manifests {
		if d.ArtifactType == artifactType {
			out = append(out, d)
		}
	}
	return out, nil
}

// referrersError turns a failed referrers request into
// ErrReferrersUnsupported where the status says the endpoint is not
// served, else leaves the fault as it is.
func referrersError(repo name.Repository, subject string, err error) error {
	var re *RegistryError
	if errors.As(err, &re) && re.storage == "" {
		switch re.Status {
		case http.StatusNotFound, http.StatusBadRequest, http.StatusNotAcceptable:
			return fmt.Errorf("referrers of %s@%s: %v: %w", repo.Name(), subject, re, ErrReferrersUnsupported)
		}
	}
	return fmt.Errorf("referrers of %s@%s: %w", repo.Name(), subject, err)
}

// RepositoryTags is Tags for a repository already parsed (by Parse, so
// with the scheme it chose): every tag, listed once per Scanner.
func (s *Scanner) RepositoryTags(ctx context.Context, repo name.Repository) ([]string, error) {
	return s.tags(ctx, repo)
}

// ReferrersTag is the tag the OCI 1.1 referrers tag schema keeps a
// subject's referrers under when the registry does not serve the API:
// "sha256-<hex>" for "sha256:<hex>".
func ReferrersTag(subject string) string {
	d := digest.Digest(subject)
	return d.Algorithm().String() + "-" + d.Encoded()
}
