package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/results/protectresult"
)

// ProtectJSON writes protect's report as JSON (regcheck.protect/v1).
func ProtectJSON(w io.Writer, r *protectresult.Report) error { return WriteJSON(w, r) }

// Protect writes protect's report for people: the proof first (in-use
// images the run breaks without the shield and with it), what cannot be
// protected and why, then each kept manifest with its keep-tag, and what
// --release did.
func Protect(w io.Writer, r *protectresult.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	du := ""
	if r.DeleteUntagged {
		du = " --delete-untagged"
	}
	fmt.Fprintf(tw, "Shield against %s%s on %s, owner %s\n", r.Model, du, printable.Text(r.Storage), printable.Text(r.Owner))
	fmt.Fprintf(tw, "Proof: without the shield the run breaks %d in-use image(s); with it %d", r.Proof.BreakBefore, r.Proof.BreakAfter)
	if len(r.Unprotected) == 0 && len(r.Incomplete) == 0 {
		fmt.Fprint(tw, ": 0 in-use images would break")
	}
	fmt.Fprintln(tw)
	for _, why := range r.Incomplete {
		fmt.Fprintf(tw, "INCOMPLETE: %s\n", printable.Text(why))
	}
	if len(r.Unprotected) > 0 {
		fmt.Fprintf(tw, "\nCannot be protected (%d):\nREFERENCE\tWHY\n", len(r.Unprotected))
		for _, u := range r.Unprotected {
			fmt.Fprintf(tw, "%s\t%s\n", printable.Text(u.Reference), printable.Text(u.Reason))
		}
	}
	fmt.Fprintf(tw, "\nKeep set (%d manifests, %d keep-tags: %d to write, %d present, %d written, %d failed):\nREPOSITORY\tDIGEST\tTAG\tSTATUS\tWHY\n",
		r.Counts.Keep, r.Counts.Tags, r.Counts.Planned, r.Counts.Present, r.Counts.Written, r.Counts.Failed)
	for _, k := range r.Keep {
		tag, status := k.Tag, string(k.Status)
		if tag == "" {
			tag, status = "-", "kept by the collector"
		}
		if k.Error != "" {
			status += ": " + k.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable.Text(k.Repository), k.Digest, printable.Text(tag), printable.Text(status), printable.Text(k.Why))
	}
	if len(r.Released) > 0 {
		fmt.Fprintf(tw, "\nReleased (%d audited tags the keep set no longer needs):\nREPOSITORY\tTAG\tDIGEST\tRESULT\n", len(r.Released))
		for _, rl := range r.Released {
			res := "removed"
			if !rl.Removed {
				res = "left: " + rl.Reason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable.Text(rl.Repository), printable.Text(rl.Tag), rl.Digest, printable.Text(res))
		}
	}
	switch {
	case !r.Applied && r.Counts.Planned > 0:
		fmt.Fprintf(tw, "\nDry run: nothing written. --apply writes the %d tag(s) (needs push rights on each repository).\n", r.Counts.Planned)
	case r.Applied && r.Counts.Written == 0 && r.Counts.Failed == 0:
		fmt.Fprintln(tw, "\nNothing new written: every keep-tag is already there.")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "note: %s\n", printable.Text(n))
	}
	return tw.Flush()
}
