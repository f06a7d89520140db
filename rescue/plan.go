package rescue

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// Planner finds, for each image, what its registry lost and where a copy
// of each piece still is. It reads and changes nothing in the registry.
type Planner struct {
	reg     walk.Reader
	sources []Source
	o       *options
}

// NewPlanner plans over the registry as reg reads it (scan.Scanner.Reader)
// and the sources, asked in the order given.
func NewPlanner(reg walk.Reader, sources []Source, opts ...Option) (*Planner, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Planner{reg: reg, sources: sources, o: o}, nil
}

// Kind is what a piece is.
type Kind string

// Kinds of pieces.
const (
	KindIndex       Kind = "index"
	KindManifest    Kind = "manifest"
	KindAttestation Kind = "attestation"
	KindConfig      Kind = "config"
	KindLayer       Kind = "layer"
)

// IsManifest reports whether a piece of this kind is pushed as a manifest.
func (k Kind) IsManifest() bool { return k == KindIndex || k == KindManifest || k == KindAttestation }

// Piece is a manifest or blob the registry lost and a source holds, its
// bytes verified against its digest.
type Piece struct {
	Digest    string `json:"digest"`
	Kind      Kind   `json:"kind"`
	MediaType string `json:"mediaType,omitempty"`
	// Platform is the index child the piece belongs to ("" at the top).
	Platform string `json:"platform,omitempty"`
	Size     int64  `json:"size"`
	// Source names where the copy is.
	Source string `json:"source"`
	// Blocked says why the registry would refuse the piece: a manifest
	// whose blobs or children are neither in the registry nor in a source.
	// A blocked piece is not pushed.
	Blocked string `json:"blocked,omitempty"`
	// Untagged is true for a manifest that would be pushed by digest with
	// no tag holding it: a garbage collector that deletes untagged
	// manifests (docker/distribution 2.x with --delete-untagged) deletes
	// it again.
	Untagged bool `json:"untagged,omitempty"`
	// Tag is the tag a Writer (WithTag) gave it.
	Tag string `json:"tag,omitempty"`
	// Outcome is what a Writer did with it ("" in a plan).
	Outcome Outcome `json:"outcome,omitempty"`
	// Error says why a push failed or was skipped.
	Error string `json:"error,omitempty"`

	source Source
	body   []byte
}

// Outcome is what a Writer did with a piece.
type Outcome string

// Outcomes of a write.
const (
	Pushed  Outcome = "pushed"  // the registry accepted it
	Failed  Outcome = "failed"  // the push failed: a fault
	Skipped Outcome = "skipped" // not pushed: something it references failed, or it was blocked
)

// State sums up an image's plan.
type State string

// States of an image.
const (
	Whole      State = "whole"      // nothing is missing: nothing to do
	Restorable State = "restorable" // every missing piece has a verified copy
	Partial    State = "partial"    // some pieces can come back, some stay missing
	Lost       State = "lost"       // nothing missing can come back
	Unknown    State = "unknown"    // something could not be asked: see Faults
	Unresolved State = "unresolved" // the tag does not exist: there is no digest to restore
)

// Image is the plan for one image reference.
type Image struct {
	// Reference is the image as given; Digest what it resolved to.
	Reference string `json:"reference"`
	Digest    string `json:"digest,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	State     State  `json:"state"`
	// Pieces are in push order: blobs, then manifests, children before
	// the indexes that list them.
	Pieces []*Piece `json:"pieces"`
	// Missing is what stays missing after the rescue: what no source
	// holds, and what the registry would refuse (Piece.Blocked).
	Missing []types.Finding `json:"missing"`
	// Faults are what could not be asked: the image's state is unknown.
	Faults []types.Finding `json:"faults,omitempty"`
	// Whole lists the platforms (os/arch[/variant]) whose manifest and
	// blobs are all there after the rescue, for an index.
	WholePlatforms []string `json:"wholePlatforms,omitempty"`
	// After is what a walk of the registry found once a Writer was done
	// (nil in a plan).
	After []types.Finding `json:"after,omitempty"`

	repo name.Repository
	tag  string // the reference's own tag, which holds its digest
}

// Plan is what a rescue would push.
type Plan struct {
	Images []*Image `json:"images"`
	// Sources are the sources asked, in order.
	Sources []string `json:"sources"`
	// Written is true once a Writer has pushed the plan.
	Written bool `json:"written"`
}

// Plan walks each reference over the registry and the sources and returns
// what is missing, where each piece was found, and what cannot come back.
// References are walked by digest when they carry one. Plan fails only
// when ctx ends.
func (p *Planner) Plan(ctx context.Context, refs []name.Reference) (*Plan, error) {
	ov := newOverlay(p.reg, p.sources, p.o.concurrency)
	plan := &Plan{Images: make([]*Image, len(refs))}
	for _, s := range p.sources {
		plan.Sources = append(plan.Sources, s.String())
	}
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Go(func() { plan.Images[i] = p.image(ctx, ov, ref) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return plan, fmt.Errorf("planning interrupted: %w", err)
	}
	return plan, nil
}

// image walks one reference over the overlay and assembles its plan.
func (p *Planner) image(ctx context.Context, ov *overlay, ref name.Reference) *Image {
	im := &Image{Reference: ref.String(), repo: ref.Context(), Pieces: []*Piece{}, Missing: []types.Finding{}}
	if t, ok := ref.(name.Tag); ok {
		im.tag = t.TagStr()
	}
	w := walk.New(ov, walk.WithConcurrency(p.o.concurrency)).Walk(ctx, ref)
	im.Digest, im.MediaType = w.Digest, w.MediaType
	for _, f := range w.Findings {
		switch {
		case f.Code.Fault():
			im.Faults = append(im.Faults, f)
		case missingCodes[f.Code]:
			im.Missing = append(im.Missing, f)
		}
	}
	if im.Digest != "" {
		a := assembler{ov: ov, im: im, seen: map[string]bool{}}
		a.manifest(im.Digest, KindForTop(im.MediaType), "")
		im.Pieces = append(a.blobs, a.manifests...)
		a.block()
		im.WholePlatforms = a.wholePlatforms()
	}
	im.State = stateOf(im)
	return im
}

// missingCodes are the findings of a walk over registry and sources that
// say a piece stays missing (or, for a mismatch, that the registry serves
// other bytes than the digest, which no push replaces).
var missingCodes = map[types.Code]bool{
	types.TagMissing: true, types.ManifestMissing: true, types.ChildMissing: true,
	types.AttestationMissing: true, types.BlobMissing: true, types.DigestMismatch: true,
}

// KindForTop is the kind of the manifest a reference resolves to.
func KindForTop(mediaType string) Kind {
	if walk.IsIndex(mediaType) {
		return KindIndex
	}
	return KindManifest
}

func stateOf(im *Image) State {
	restorable := slices.ContainsFunc(im.Pieces, func(p *Piece) bool { return p.Blocked == "" })
	switch {
	case im.Digest == "":
		if len(im.Faults) > 0 {
			return Unknown
		}
		return Unresolved
	case len(im.Faults) > 0:
		return Unknown
	case len(im.Missing) == 0 && len(im.Pieces) == 0:
		return Whole
	case len(im.Missing) == 0:
		return Restorable
	case restorable:
		return Partial
	}
	return Lost
}
