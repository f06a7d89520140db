package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// gcCleanup writes a cleanup prediction for people: which cleanups, when
// and how many runs on the first lines; then what breaks, each loss with
// its rule and its fix; what is broken already; the signatures lost; and
// every deletion, by repository and run.
func gcCleanup(w io.Writer, r *gcresult.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	c := r.Cleanup
	fmt.Fprintf(tw, "Cleanup predicted at %s, %d run(s), through the registry API of %s\n", c.At.Format(time.RFC3339), c.Runs, strings.Join(r.Registries, ", "))
	for _, p := range c.Policies {
		fmt.Fprintf(tw, "  %s (%s): %s\n", printable.Text(p.Name), printable.Text(p.Source), cleanupRepos(p.Repositories))
	}
	for _, s := range c.States {
		fmt.Fprintf(tw, "  state %s (%s) for %s\n", printable.Text(s.File), s.Service, s.Repository)
	}
	cleanupBreaks(tw, "WOULD BREAK", r.WouldBreak)
	cleanupBreaks(tw, "ALREADY BROKEN", r.AlreadyBroken)
	if len(r.WouldLoseArtifacts) > 0 {
		fmt.Fprintf(tw, "\nWOULD LOSE SIGNATURES AND ATTESTATIONS (%d)\nIMAGE\tKIND\tARTIFACT\tREASON\n", len(r.WouldLoseArtifacts))
		for _, l := range r.WouldLoseArtifacts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable.Text(l.Reference), l.Kind, printable.Text(l.Ref), printable.Text(l.Reason))
		}
	}
	cleanupDeletions(tw, c.Deletions)
	for _, s := range r.Skipped {
		fmt.Fprintf(tw, "\nskipped %s: %s", printable.Text(s.Reference), printable.Text(s.Reason))
	}
	tags, manifests, archived := deletionCounts(c.Deletions)
	fmt.Fprintf(tw, "\n%d would break, %d already broken; would delete %d tags and %d manifests, archive %d\n", r.Counts.WouldBreak, r.Counts.AlreadyBroken, tags, manifests, archived)
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

func cleanupRepos(rs []string) string {
	if len(rs) == 0 {
		return "no repository examined"
	}
	return strings.Join(rs, ", ")
}

// cleanupBreaks writes one section of entries: each loss on a line of its
// own (code, platform, rule, what happens), then the fix.
func cleanupBreaks(tw io.Writer, title string, es []gcresult.Entry) {
	if len(es) == 0 {
		return
	}
	fmt.Fprintf(tw, "\n%s (%d)\nIMAGE\tVERDICT\tCODE\tPLATFORM\tWHAT HAPPENS\n", title, len(es))
	for _, e := range es {
		for i, l := range e.Losses {
			ref, verdict := printable.Text(e.Reference), string(e.Verdict)
			if i > 0 {
				ref, verdict = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ref, verdict, l.Code, l.Platform, printable.Text(l.Message))
		}
		if len(e.Losses) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t\t\t%s\n", printable.Text(e.Reference), e.Verdict, printable.Text(e.Reason))
		}
		if uses := useNames(e.Uses); uses != "" {
			fmt.Fprintf(tw, "\t\t\t\tused by %s\n", printable.Text(uses))
		}
		if e.Advice != "" {
			fmt.Fprintf(tw, "\t\t\t\tfix: %s\n", printable.Text(e.Advice))
		}
	}
}

// useNames names the workloads of uses, as kind namespace/name.
func useNames(uses []types.Use) string {
	var out []string
	for _, u := range uses {
		switch {
		case u.Name != "":
			out = append(out, strings.TrimSpace(u.Kind+" "+strings.Trim(u.Namespace+"/"+u.Name, "/")))
		case u.File != "":
			out = append(out, fmt.Sprintf("%s:%d", u.File, u.Line))
		}
	}
	return strings.Join(dedupeStrings(out), ", ")
}

func dedupeStrings(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// cleanupDeletions writes every deletion, by repository and run.
func cleanupDeletions(tw io.Writer, ds []gcresult.CleanupDeletion) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintf(tw, "\nWOULD DELETE (%d)\nREPOSITORY\tRUN\tKIND\tTAG OR DIGEST\tRULE\tELIGIBLE\n", len(ds))
	for _, d := range ds {
		what, rule := d.Digest, d.Rule
		if d.Kind == gcresult.TagRemoved {
			what = d.Tag
		}
		if d.WithManifest {
			rule = "with manifest " + types.ShortDigest(d.Digest)
		}
		eligible := ""
		if d.Eligible != nil {
			eligible = d.Eligible.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", d.Repository, d.Run, d.Kind, printable.Text(what), printable.Text(rule), eligible)
	}
}

// deletionCounts counts the tags removed (those going with a deleted
// manifest included), the manifests deleted and those archived.
func deletionCounts(ds []gcresult.CleanupDeletion) (tags, manifests, archived int) {
	for _, d := range ds {
		switch d.Kind {
		case gcresult.TagRemoved:
			tags++
		case gcresult.ManifestDeleted:
			manifests++
		case gcresult.ManifestArchived:
			archived++
		}
	}
	return tags, manifests, archived
}
