package scan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
)

// Annotations buildx puts on an attestation manifest's index descriptor.
const (
	annotationRefType    = "vnd.docker.reference.type"
	annotationRefDigest  = "vnd.docker.reference.digest"
	refTypeAttestation   = "attestation-manifest"
	maxIndexDepth        = 4
	platformUnknownShort = "unknown/unknown"
	// maxIndexChildren bounds the children one index may list; real
	// multi-platform indexes list tens.
	maxIndexChildren = 1000
	// maxImageManifests bounds the manifests one image's walk fetches.
	maxImageManifests = 2000
)

// walker walks one image and collects its findings.
type walker struct {
	c    *client
	o    *options
	repo name.Repository

	mu        sync.Mutex
	findings  []Finding
	manifests int
	blobs     int
	capped    bool // a maxImageManifests finding was added
}

func (w *walker) add(f Finding) {
	w.mu.Lock()
	w.findings = append(w.findings, f)
	w.mu.Unlock()
}

func (w *walker) count(manifests, blobs int) {
	w.mu.Lock()
	w.manifests += manifests
	w.blobs += blobs
	w.mu.Unlock()
}

// budget reports whether the walk may fetch one more manifest, adding a
// finding the first time it may not.
func (w *walker) budget(digest, platform string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.manifests < maxImageManifests {
		return true
	}
	if !w.capped {
		w.capped = true
		w.findings = append(w.findings, newFinding(LimitExceeded, digest, platform,
			"the image has more than %d manifests: the rest were not checked", maxImageManifests))
	}
	return false
}

// fault records a fault finding for err and reports whether err was one.
func (w *walker) fault(err error, digest, platform string) bool {
	c := faultCode(err)
	if c == "" {
		return false
	}
	w.add(newFinding(c, digest, platform, "%v", err))
	return true
}

// walkImage scans one parsed reference into im.
func (c *client) walkImage(ctx context.Context, ref name.Reference, im *Image) {
	w := &walker{c: c, o: c.o, repo: ref.Context()}
	defer func() {
		// The walk runs in parallel: order its findings so that every
		// scan of the same registry state reports them alike.
		slices.SortStableFunc(w.findings, func(a, b Finding) int {
			return cmp.Or(cmp.Compare(b.Severity, a.Severity), cmp.Compare(a.Platform, b.Platform),
				cmp.Compare(a.Digest, b.Digest), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
		})
		im.Findings = append(im.Findings, w.findings...)
		im.Manifests, im.Blobs = w.manifests, w.blobs
		im.Verdict = verdict(im.Findings)
	}()

	var digest string
	switch r := ref.(type) {
	case name.Tag:
		d, err := c.resolve(ctx, r)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				w.add(newFinding(TagMissing, "", "", "tag %q does not exist in %s", r.TagStr(), r.Context().Name()))
			} else if !w.fault(err, "", "") {
				w.add(newFinding(RegistryFault, "", "", "resolving tag: %v", err))
			}
			return
		}
		digest, im.MediaType = d.Digest, d.MediaType
	case name.Digest:
		digest = r.DigestStr()
	}
	im.Digest = digest

	m, err := c.manifest(ctx, w.repo, digest)
	w.count(1, 0)
	switch {
	case errors.Is(err, ErrNotFound):
		if _, isTag := ref.(name.Tag); isTag {
			w.add(newFinding(ManifestMissing, digest, "", "the tag points at manifest %s, which the registry no longer serves", digest))
		} else {
			w.add(newFinding(ManifestMissing, digest, "", "manifest %s does not exist in %s", digest, w.repo.Name()))
		}
		return
	case errors.Is(err, ErrDigestMismatch):
		w.add(newFinding(DigestMismatch, digest, "", "%v", err))
		return
	case err != nil:
		w.fault(err, digest, "")
		return
	}
	if im.MediaType == "" || !(isIndex(im.MediaType) || isImage(im.MediaType)) {
		im.MediaType = m.MediaType
	}
	w.walkManifest(ctx, m, digest, "", false, 0)
}

// walkManifest walks a fetched manifest: an index's children or an image's
// blobs. platform names the index child being walked ("" at the top);
// attestation is true under an attestation child, whose losses are warnings.
func (w *walker) walkManifest(ctx context.Context, p parsed, digest, platform string, attestation bool, depth int) {
	switch {
	case isIndex(p.MediaType):
		if depth >= maxIndexDepth {
			w.add(newFinding(UnsupportedMedia, digest, platform, "indexes nested deeper than %d are not walked", maxIndexDepth))
			return
		}
		w.walkIndex(ctx, p, digest, platform, depth)
	case isImage(p.MediaType):
		w.walkBlobs(ctx, p, digest, platform, attestation)
	default:
		w.add(newFinding(UnsupportedMedia, digest, platform, "manifest %s has media type %q, which regcheck does not walk", digest, p.MediaType))
	}
}

func (w *walker) walkIndex(ctx context.Context, p parsed, digest, platform string, depth int) {
	if len(p.Manifests) > maxIndexChildren {
		w.add(newFinding(LimitExceeded, digest, platform, "the index lists %d manifests, more than the %d regcheck walks: its children were not checked", len(p.Manifests), maxIndexChildren))
		return
	}
	required := map[string]bool{} // digests of the image children the platforms need
	for _, d := range p.Manifests {
		if !IsAttestation(d) && w.wanted(d) {
			required[d.Digest.String()] = true
		}
	}
	// A platform the index has no child for cannot be pulled on such a node.
	for _, want := range w.o.platforms {
		found := false
		for _, d := range p.Manifests {
			if !IsAttestation(d) && (d.Platform == nil || matches(d.Platform, want)) {
				found = true
				break
			}
		}
		if !found {
			w.add(newFinding(ChildMissing, "", want.String(), "the index has no manifest for %s: a %s node cannot pull it", want.String(), want.String()))
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(w.o.concurrency)
	for _, d := range p.Manifests {
		att := IsAttestation(d)
		if att && len(w.o.platforms) > 0 && !required[d.Annotations[annotationRefDigest]] {
			continue // attests to a platform nobody asked for
		}
		if !att && !required[d.Digest.String()] {
			continue
		}
		g.Go(func() error {
			w.walkChild(ctx, d, att, depth)
			return nil
		})
	}
	g.Wait()
}

func (w *walker) walkChild(ctx context.Context, d ocispec.Descriptor, attestation bool, depth int) {
	digest, plat := d.Digest.String(), PlatformString(d.Platform)
	if !w.budget(digest, plat) {
		return
	}
	m, err := w.c.manifest(ctx, w.repo, digest)
	w.count(1, 0)
	switch {
	case errors.Is(err, ErrNotFound):
		if attestation {
			w.add(newFinding(AttestationMissing, digest, plat, "attestation manifest %s (for %s) is gone", digest, d.Annotations[annotationRefDigest]))
		} else {
			w.add(newFinding(ChildMissing, digest, plat, "the index lists a %s manifest %s that the registry no longer serves", plat, digest))
		}
		return
	case errors.Is(err, ErrDigestMismatch):
		w.add(newFinding(DigestMismatch, digest, plat, "%v", err))
		return
	case err != nil:
		w.fault(err, digest, plat)
		return
	}
	w.walkManifest(ctx, m, digest, plat, attestation, depth+1)
}

func (w *walker) walkBlobs(ctx context.Context, p parsed, digest, platform string, attestation bool) {
	type blob struct {
		d    ocispec.Descriptor
		what string
	}
	all := []blob{{p.Config, "config"}}
	for i, l := range p.Layers {
		all = append(all, blob{l, fmt.Sprintf("layer %d", i+1)})
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(w.o.concurrency)
	for _, b := range all {
		if IsForeignLayer(b.d.MediaType) {
			w.add(newFinding(ForeignLayer, b.d.Digest.String(), platform, "%s %s is non-distributable (%s): not checked", b.what, b.d.Digest, b.d.MediaType))
			continue
		}
		g.Go(func() error {
			err := w.c.blob(ctx, w.repo, b.d.Digest.String())
			w.count(0, 1)
			switch {
			case errors.Is(err, ErrNotFound):
				where := "the image"
				if platform != "" {
					where = fmt.Sprintf("the %s manifest %s", platform, digest)
				}
				code := BlobMissing
				if attestation {
					code = AttestationMissing
				}
				w.add(newFinding(code, b.d.Digest.String(), platform, "%s blob %s of %s is gone", b.what, b.d.Digest, where))
			case err != nil:
				w.fault(err, b.d.Digest.String(), platform)
			}
			return nil
		})
	}
	g.Wait()
}

// wanted reports whether an index child's platform is one the scan requires.
func (w *walker) wanted(d ocispec.Descriptor) bool {
	if len(w.o.platforms) == 0 {
		return true
	}
	if d.Platform == nil {
		return true // a child with no platform cannot be ruled out
	}
	for _, want := range w.o.platforms {
		if matches(d.Platform, want) {
			return true
		}
	}
	return false
}

// matches reports whether a child's platform serves a wanted one; a wanted
// platform without a variant accepts any.
func matches(p *ocispec.Platform, want v1.Platform) bool {
	return p.OS == want.OS && p.Architecture == want.Architecture && (want.Variant == "" || p.Variant == want.Variant)
}

// IsAttestation reports whether an index child is an attestation manifest
// as docker buildx pushes it (annotation vnd.docker.reference.type, or
// platform unknown/unknown with vnd.docker.reference.digest): metadata about
// an image, not an image a node runs.
func IsAttestation(d ocispec.Descriptor) bool {
	if d.Annotations[annotationRefType] == refTypeAttestation {
		return true
	}
	return d.Platform != nil && PlatformString(d.Platform) == platformUnknownShort && d.Annotations[annotationRefDigest] != ""
}

// IsForeignLayer reports whether a layer media type is non-distributable
// (Windows base layers): registries need not hold such blobs.
func IsForeignLayer(mediaType string) bool {
	switch mediaType {
	case string(types.DockerForeignLayer), ocispec.MediaTypeImageLayerNonDistributable, //nolint:staticcheck // still in use
		ocispec.MediaTypeImageLayerNonDistributableGzip, ocispec.MediaTypeImageLayerNonDistributableZstd: //nolint:staticcheck
		return true
	}
	return false
}

// PlatformString writes a platform as os/arch[/variant], "" for none.
func PlatformString(p *ocispec.Platform) string {
	if p == nil {
		return ""
	}
	return (&v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}).String()
}
