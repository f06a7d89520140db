package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// GCCheckJSON writes gc-check's report as indented JSON
// (schemaVersion regcheck.gc/v1).
func GCCheckJSON(w io.Writer, r *gcresult.Report) error { return WriteJSON(w, r) }

// GCCheck writes gc-check's report for people: the model predicted on the
// first line (and whether it was assumed), then what breaks, what is
// broken, and what would be deleted per repository.
//
// A cleanup prediction (ModeCleanup) leads with the cleanups read and
// what breaks, each loss with the rule that removes it and the fix.
func GCCheck(w io.Writer, r *gcresult.Report) error {
	if r.Mode == gcresult.ModeCleanup && r.Cleanup != nil {
		return gcCleanup(w, r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	du := "without --delete-untagged"
	if r.DeleteUntagged {
		du = "with --delete-untagged"
	}
	model := string(r.Model)
	if r.ModelAssumed {
		model += " (assumed: which collector the registry runs was not given)"
	}
	if r.Mode == gcresult.ModeAPI {
		fmt.Fprintf(tw, "GC model %s %s, predicted through the registry API of %s\n", model, du, strings.Join(r.Registries, ", "))
	} else {
		fmt.Fprintf(tw, "GC model %s %s on %s\n", model, du, printable.Text(r.Storage))
	}
	if r.Abort != nil {
		fmt.Fprintf(tw, "\nThe collector would ABORT and delete nothing:\n  %s\n", printable.Text(r.Abort.Message))
	}
	section := func(title string, es []gcresult.Entry) {
		if len(es) == 0 {
			return
		}
		fmt.Fprintf(tw, "\n%s (%d)\nIMAGE\tVERDICT\tREASON\n", title, len(es))
		for _, e := range es {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", printable.Text(e.Reference), e.Verdict, printable.Text(e.Reason))
		}
	}
	section("WOULD BREAK", r.WouldBreak)
	section("ALREADY BROKEN", r.AlreadyBroken)
	if len(r.WouldLoseArtifacts) > 0 {
		fmt.Fprintf(tw, "\nWOULD LOSE SIGNATURES AND ATTESTATIONS (%d)\nIMAGE\tKIND\tARTIFACT\tREASON\n", len(r.WouldLoseArtifacts))
		for _, l := range r.WouldLoseArtifacts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable.Text(l.Reference), l.Kind, printable.Text(l.Ref), printable.Text(l.Reason))
		}
	}
	if len(r.WouldOrphanArtifacts) > 0 {
		fmt.Fprintf(tw, "\nWOULD ORPHAN (artifact tags whose image the run deletes) (%d)\nREPOSITORY\tTAG\n", len(r.WouldOrphanArtifacts))
		for _, o := range r.WouldOrphanArtifacts {
			fmt.Fprintf(tw, "%s\t%s\n", printable.Text(o.Repository), printable.Text(o.Tag))
		}
	}
	if len(r.WouldDelete.Repositories) > 0 {
		fmt.Fprintf(tw, "\nWOULD DELETE\nREPOSITORY\tKIND\tDIGEST\n")
		for _, rd := range r.WouldDelete.Repositories {
			for _, m := range rd.Manifests {
				fmt.Fprintf(tw, "%s\tmanifest\t%s\n", rd.Repository, m.Digest)
			}
			for _, b := range rd.Blobs {
				fmt.Fprintf(tw, "%s\tblob\t%s\n", rd.Repository, b)
			}
			for _, l := range rd.LayerLinks {
				fmt.Fprintf(tw, "%s\tlayer link\t%s\n", rd.Repository, l)
			}
		}
	}
	if len(r.Damage) > 0 {
		fmt.Fprintf(tw, "\nDAMAGE IN STORAGE (%d)\nREPOSITORY\tKIND\tDIGEST\n", len(r.Damage))
		for _, d := range r.Damage {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Repository, d.Kind, types.ShortDigest(d.Digest))
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(tw, "\nskipped %s: %s", printable.Text(s.Reference), printable.Text(s.Reason))
	}
	c := r.Counts
	if r.Mode == gcresult.ModeAPI {
		fmt.Fprintf(tw, "\n%d would break, %d already broken; would delete %d manifests (blobs: storage mode only)\n", c.WouldBreak, c.AlreadyBroken, c.Manifests)
	} else {
		fmt.Fprintf(tw, "\n%d would break, %d already broken; would delete %d manifests, %d blobs, %d layer links\n", c.WouldBreak, c.AlreadyBroken, c.Manifests, c.Blobs, c.LayerLinks)
	}
	if len(r.Advice) > 0 {
		fmt.Fprintf(tw, "\nWhat to do:\n  - %s\n", strings.Join(printableAll(r.Advice), "\n  - "))
	}
	if len(r.Notes) > 0 {
		notes := make([]string, len(r.Notes))
		for i, n := range r.Notes {
			notes[i] = n.Text
		}
		fmt.Fprintf(tw, "\nNotes:\n  - %s\n", strings.Join(printableAll(notes), "\n  - "))
	}
	return tw.Flush()
}

// printableAll is Printable of each line.
func printableAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = printable.Text(l)
	}
	return out
}
