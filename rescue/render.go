package rescue

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/regcheck/regcheck/types"
)

// WriteJSON writes the plan (or, once written, the outcome) as indented JSON.
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		SchemaVersion string `json:"schemaVersion"`
		*Plan
		Summary Summary `json:"summary"`
	}{"regcheck.rescue/v1", p, p.Summary()})
}

// Summary counts a plan's images by state and its pieces by outcome.
type Summary struct {
	Images map[State]int `json:"images"`
	// Pieces and Bytes count what is (or was to be) pushed: not blocked.
	Pieces int   `json:"pieces"`
	Bytes  int64 `json:"bytes"`
	// Pushed and Failed count outcomes, once written.
	Pushed int `json:"pushed"`
	Failed int `json:"failed"`
	// Missing counts what stays missing; Untagged the manifests pushed by
	// digest that no tag holds.
	Missing  int `json:"missing"`
	Untagged int `json:"untagged"`
}

// Summary sums the plan up.
func (p *Plan) Summary() Summary {
	s := Summary{Images: map[State]int{}}
	for _, im := range p.Images {
		s.Images[im.State]++
		s.Missing += len(im.Missing)
		for _, pc := range im.Pieces {
			if pc.Blocked == "" {
				s.Pieces++
				s.Bytes += pc.Size
			}
			switch pc.Outcome {
			case Pushed:
				s.Pushed++
			case Failed:
				s.Failed++
			}
			if pc.Untagged && pc.Blocked == "" && pc.Outcome != Failed && pc.Outcome != Skipped {
				s.Untagged++
			}
		}
	}
	return s
}

// WriteText writes the plan for people: per image, each piece with where
// its copy is (and, once written, what became of it), what stays missing
// and what that means, and the manifests no tag will hold.
func (p *Plan) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if p.Written {
		fmt.Fprintf(tw, "RESCUE: pushed to the images' own repositories\n")
	} else {
		fmt.Fprintf(tw, "RESCUE PLAN: nothing was pushed\n")
	}
	fmt.Fprintf(tw, "sources, asked in order: %s\n", orNone(strings.Join(p.Sources, "; ")))
	for _, im := range p.Images {
		fmt.Fprintf(tw, "\n%s  %s  %s\n", im.Reference, types.ShortDigest(im.Digest), im.State)
		for _, pc := range im.Pieces {
			label, where := "restore", "from "+pc.Source
			if pc.Outcome != "" {
				where = string(pc.Outcome) + " from " + pc.Source
			}
			if pc.Blocked != "" {
				label, where = "refused", "in "+pc.Source+", but the registry would refuse it (below)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", label, pieceName(pc), types.ShortDigest(pc.Digest), size(pc.Size), where)
			if pc.Error != "" && pc.Blocked == "" {
				fmt.Fprintf(tw, "  \t\t\t\t%s\n", pc.Error)
			}
			if pc.Tag != "" {
				fmt.Fprintf(tw, "  \t\t\t\ttagged %s, so that a garbage collector keeps it\n", pc.Tag)
			}
		}
		for _, f := range im.Missing {
			fmt.Fprintf(tw, "  missing\t%s\t%s\t\t%s\n", f.Code, types.ShortDigest(f.Digest), f.Message)
			if m := Meaning(f); m != "" {
				fmt.Fprintf(tw, "  \t\t\t\t→ %s\n", m)
			}
		}
		for _, f := range im.Faults {
			fmt.Fprintf(tw, "  unknown\t%s\t%s\t\t%s\n", f.Code, types.ShortDigest(f.Digest), f.Message)
		}
		if n := untagged(im); n > 0 {
			fmt.Fprintf(tw, "  untagged\t%d manifest(s) pushed by digest that no tag holds: a garbage collector that deletes untagged manifests (docker/distribution 2.x with --delete-untagged) deletes them again\n", n)
		}
		if len(im.WholePlatforms) > 0 && len(im.Missing) > 0 {
			fmt.Fprintf(tw, "  whole for\t%s: nodes of these platforms can pull it\n", strings.Join(im.WholePlatforms, ", "))
		}
		if p.Written && im.After != nil {
			fmt.Fprintf(tw, "  after\t%s\n", afterText(im.After))
		}
	}
	s := p.Summary()
	verb := "to push"
	if p.Written {
		verb = fmt.Sprintf("pushed %d, failed %d", s.Pushed, s.Failed)
	}
	fmt.Fprintf(tw, "\n%d images: %d whole, %d restorable, %d partial, %d lost, %d unknown; %d pieces (%s) %s; %d stay missing\n",
		len(p.Images), s.Images[Whole], s.Images[Restorable], s.Images[Partial], s.Images[Lost], s.Images[Unknown]+s.Images[Unresolved],
		s.Pieces, size(s.Bytes), verb, s.Missing)
	return tw.Flush()
}

func untagged(im *Image) int {
	n := 0
	for _, pc := range im.Pieces {
		if pc.Untagged && pc.Blocked == "" && pc.Outcome != Failed && pc.Outcome != Skipped {
			n++
		}
	}
	return n
}

// Meaning says what a piece that stays missing means for the nodes.
func Meaning(f types.Finding) string {
	switch f.Code {
	case types.AttestationMissing:
		return "the image runs; its attestation stays missing, so provenance and SBOM checks fail (at-risk)"
	case types.ChildMissing, types.BlobMissing:
		if f.Platform != "" {
			return fmt.Sprintf("a %s node still cannot pull it; nodes of the platforms restored can", f.Platform)
		}
		return "a node still cannot pull it"
	case types.ManifestMissing:
		return "no node can pull the image by this digest: restore the pieces it lacks from another source, or rebuild"
	case types.TagMissing:
		return "there is no digest to restore: name the image by the digest the nodes run (repo@sha256:…)"
	}
	return ""
}

func afterText(fs []types.Finding) string {
	switch v := types.VerdictOf(fs); v {
	case types.OK:
		return "ok: a fresh walk of the registry finds every manifest and blob"
	default:
		var codes []string
		for _, f := range fs {
			codes = append(codes, string(f.Code))
		}
		return fmt.Sprintf("%s: a fresh walk of the registry finds %s", v, strings.Join(codes, ", "))
	}
}

func pieceName(p *Piece) string {
	if p.Platform == "" {
		return string(p.Kind)
	}
	return p.Platform + " " + string(p.Kind)
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
