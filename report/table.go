package report

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/types"
)

// Table writes one row per image, worst first, then each image's findings
// and what to do about them, then the inputs that were not read, then a
// summary line. Every string from the scan goes through Printable: the
// table is for a terminal.
func Table(w io.Writer, r *types.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERDICT\tIMAGE\tDIGEST\tUSED BY")
	for _, im := range r.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", printable.Text(string(im.Verdict)), printable.Text(im.Reference), printable.Text(short(im.Digest)), printable.Text(uses(im.Uses)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, im := range r.Sorted() {
		if len(im.Findings) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s  %s\n", strings.ToUpper(printable.Text(string(im.Verdict))), printable.Text(im.Reference))
		for _, f := range im.Findings {
			fmt.Fprintf(w, "  %-8s %-20s %s\n", f.Severity, printable.Text(string(f.Code)), printable.Text(shortDigests(f.Message)))
			if f.Advice != "" {
				fmt.Fprintf(w, "  %-8s %-20s → %s\n", "", "", printable.Text(shortDigests(f.Advice)))
			}
		}
		for _, u := range im.Uses {
			if s := useString(u); s != "" {
				fmt.Fprintf(w, "  used by  %s\n", printable.Text(s))
			}
		}
	}
	notRead, skipped := 0, 0
	for _, ie := range r.InputErrors {
		if ie.Notice {
			skipped++
		} else {
			notRead++
		}
	}
	if len(r.InputErrors) > 0 {
		// Headed with what the summary line counts: errors not read,
		// notices skipped.
		fmt.Fprintf(w, "\nINPUTS NOT READ (%d) AND SKIPPED (%d)\n", notRead, skipped)
		for _, ie := range r.InputErrors {
			level := "error"
			if ie.Notice {
				level = "notice"
			}
			fmt.Fprintf(w, "  %-8s %s: %s\n", level, printable.Text(inputLocation(ie)), printable.Text(ie.Message))
		}
	}
	c := r.Count()
	requests := 0
	for _, rc := range r.Requests {
		requests += rc.Count
	}
	inputs := ""
	if notRead+skipped > 0 {
		inputs = fmt.Sprintf("; %s not read, %d skipped", plural(notRead, "input"), skipped)
	}
	_, err := fmt.Fprintf(w, "\n%d images: %d broken, %d unknown, %d at-risk, %d ok (%d requests in %s)%s\n",
		len(r.Images), c[types.Broken], c[types.Unknown], c[types.AtRisk], c[types.OK], requests, r.Duration.Round(1e6), inputs)
	for _, rl := range r.RateLimits {
		if err == nil {
			_, err = fmt.Fprintf(w, "rate limit  %s\n", printable.Text(rateLimitText(rl)))
		}
	}
	return err
}

// inputLocation is an input error's "source:line:column",
// "source:line", or its source.
func inputLocation(ie types.InputError) string {
	switch {
	case ie.Line > 0 && ie.Column > 0:
		return fmt.Sprintf("%s:%d:%d", ie.Source, ie.Line, ie.Column)
	case ie.Line > 0:
		return fmt.Sprintf("%s:%d", ie.Source, ie.Line)
	}
	return ie.Source
}

// plural is "1 input", "2 inputs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// shortDigests abbreviates every digest in a sentence for the table; -o json
// keeps them whole.
func shortDigests(s string) string {
	return digestRE.ReplaceAllStringFunc(s, func(d string) string { return types.ShortDigest(d) + "…" })
}

// short abbreviates a digest for the table, "-" when there is none.
func short(d string) string {
	if d == "" {
		return "-"
	}
	return types.ShortDigest(d)
}

func uses(us []types.Use) string {
	if len(us) == 0 {
		return "-"
	}
	s := useString(us[0])
	if s == "" {
		s = us[0].Source
	}
	if len(us) > 1 {
		s += fmt.Sprintf(" (+%d)", len(us)-1)
	}
	return s
}

// useString names a use the way kubectl users read it: file:line, then
// kind namespace/name container (or volume, for an image volume).
func useString(u types.Use) string {
	var parts []string
	if u.File != "" {
		loc := u.File
		if u.Line > 0 {
			loc += fmt.Sprintf(":%d", u.Line)
		}
		parts = append(parts, loc)
	}
	if u.Kind != "" || u.Name != "" {
		obj := u.Name
		if u.Namespace != "" {
			obj = u.Namespace + "/" + u.Name
		}
		parts = append(parts, strings.TrimSpace(u.Kind+" "+obj))
	}
	if u.Container != "" {
		parts = append(parts, "container "+u.Container)
	}
	if u.Volume != "" {
		parts = append(parts, "volume "+u.Volume)
	}
	if u.Node != "" {
		parts = append(parts, "on "+u.Node)
	}
	return strings.Join(parts, " ")
}
