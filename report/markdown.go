package report

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/types"
)

// Markdown writes the result as GitHub-flavoured Markdown, for a workflow's
// step summary ($GITHUB_STEP_SUMMARY) or a pull request comment: what to do
// first (per verdict, how many images and the one action), then the broken,
// unknown and at-risk images by namespace and workload with each finding
// and its advice, then the ok images folded in a <details> block, then the
// inputs not read. Every string from the scan is made printable
// (Printable) and escaped for Markdown: it cannot start a table cell,
// emphasis, a link, a code span or HTML.
//
// The document stays under MaxMarkdown characters, GitHub's limit for a
// comment: whole rows (an image with its findings, an ok image, an input
// not read) past it are left out, and the document says how many; the
// JSON report has everything.
func Markdown(w io.Writer, r *types.Result) error {
	b := &mdWriter{limit: MaxMarkdown - mdReserve}
	b.mdSummary(r)
	var act, ok []*types.Image
	for _, im := range r.Sorted() {
		if im.Verdict == types.OK {
			ok = append(ok, im)
		} else {
			act = append(act, im)
		}
	}
	b.mdActionable(act)
	b.mdOK(ok)
	b.mdInputErrors(r.InputErrors)
	if b.left > 0 {
		b.line("")
		b.line("_%s left out to stay under GitHub's %d-character limit for a comment; the JSON report (`-o json`) has everything._", plural(b.left, "row"), MaxMarkdown)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdSummary writes the heading, what to do per verdict, and a line on
// the run: how many images and requests, how long, when, which shard.
func (b *mdWriter) mdSummary(r *types.Result) {
	c := countOf(r)
	b.line("## regcheck: %d broken, %d unknown, %d at-risk, %d ok", c.Verdicts[types.Broken], c.Verdicts[types.Unknown], c.Verdicts[types.AtRisk], c.Verdicts[types.OK])
	b.line("")
	b.line("### What to do")
	b.line("")
	b.line("| verdict | images | what to do |")
	b.line("|---|--:|---|")
	for _, v := range verdictOrder {
		if n := c.Verdicts[v]; n > 0 || (v == types.OK && len(r.Images) == 0) {
			b.line("| **%s** | %d | %s |", v, n, verdictActions[v])
		}
	}
	if c.NotRead > 0 {
		b.line("| **inputs not read** | %d | %s |", c.NotRead, inputsAction)
	}
	b.line("")
	meta := fmt.Sprintf("%s, %s in %s", plural(len(r.Images), "image"), plural(c.Requests, "registry request"), r.Duration.Round(time.Millisecond))
	if !r.Started.IsZero() {
		meta += ", started " + r.Started.UTC().Format(time.RFC3339)
	}
	if r.Shard != nil {
		meta += fmt.Sprintf(", shard %d of %d", r.Shard.Index, r.Shard.Count)
	}
	b.line("%s.", meta)
}

// mdActionable writes the broken, unknown and at-risk images by namespace
// and workload. Headings go with the first row under them, so a heading
// is never left with its rows cut.
func (b *mdWriter) mdActionable(act []*types.Image) {
	if len(act) == 0 {
		return
	}
	b.line("")
	b.line("### Broken, unknown and at-risk images, by namespace and workload")
	shown := map[*types.Image]string{} // image → the workload its findings are under
	for _, g := range byWorkload(act) {
		head := &mdWriter{}
		head.line("")
		title := namespaceTitle(g.Namespace, g.Workloads)
		head.line("#### %s", mdTitle(title, g.Namespace))
		for _, wl := range g.Workloads {
			head.line("")
			if t := workloadTitle(wl); t != title {
				head.line("**%s**", mdTitle(t, wl.Name))
				head.line("")
			}
			for _, wi := range wl.Images {
				row := &mdWriter{}
				row.WriteString(head.String())
				head.Reset()
				row.mdImage(wi, shown, g.Namespace, wl)
				b.row(row.String())
			}
		}
	}
}

// mdOK writes the ok images, folded in a <details> block.
func (b *mdWriter) mdOK(ok []*types.Image) {
	if len(ok) == 0 {
		return
	}
	b.line("")
	b.line("<details><summary>%s: nothing to do</summary>", plural(len(ok), "ok image"))
	b.line("")
	b.line("| image | digest | used by |")
	b.line("|---|---|---|")
	for _, im := range ok {
		var us []string
		for _, u := range im.Uses {
			s := useString(u)
			if s == "" {
				s = useWhere(u)
			}
			us = append(us, mdText(s))
		}
		if len(us) == 0 {
			us = []string{"-"}
		}
		b.row(fmt.Sprintf("| %s | %s | %s |\n", mdCode(im.Reference), mdCode(short(im.Digest)), strings.Join(us, "<br>")))
	}
	b.line("")
	b.line("</details>")
}

// mdInputErrors writes the inputs not read, errors and notices.
func (b *mdWriter) mdInputErrors(ies []types.InputError) {
	if len(ies) == 0 {
		return
	}
	b.line("")
	b.line("### Inputs not read")
	b.line("")
	for _, ie := range ies {
		level := "error"
		if ie.Notice {
			level = "notice (skipped on purpose)"
		}
		b.row(fmt.Sprintf("- **%s** %s: %s\n", level, mdCode(inputLocation(ie)), mdText(types.Capped(ie.Message))))
	}
}

// mdImage writes one image of a workload: its verdict, reference and
// digest, where the workload uses it, then its findings with their advice;
// an image already shown under another workload points there instead.
func (b *mdWriter) mdImage(wi workloadImage, shown map[*types.Image]string, ns string, wl *workloadGroup) {
	im := wi.Image
	digest := ""
	if im.Digest != "" {
		digest = " " + mdCode(types.ShortDigest(im.Digest))
	}
	where := ""
	var ws []string
	for _, u := range wi.Uses {
		ws = append(ws, mdText(useWhere(u)))
	}
	if len(ws) > 0 {
		where = " — " + strings.Join(ws, "; ")
	}
	b.line("- **%s** %s%s%s", im.Verdict, mdCode(im.Reference), digest, where)
	if first, ok := shown[im]; ok {
		b.line("  - the same image as under %s: its findings are there", mdText(first))
		return
	}
	place := workloadTitle(wl)
	if ns != "" {
		place = ns + "/" + place
	}
	shown[im] = place
	for _, f := range im.Findings {
		advice := ""
		if f.Advice != "" {
			advice = "<br>→ " + mdText(shortDigests(f.Advice))
		}
		b.line("  - %s %s: %s%s", f.Severity, mdCode(string(f.Code)), mdText(shortDigests(f.Message)), advice)
	}
}

// MaxMarkdown is the most characters Markdown writes: GitHub's limit for
// an issue or pull request comment.
const MaxMarkdown = 65_536

// mdReserve is what Markdown keeps of MaxMarkdown for what it writes
// after the rows: the closing of a <details> block, the headings of the
// sections after, the line saying how many rows were left out.
const mdReserve = 1024

// mdWriter builds the document a line at a time; rows past limit bytes
// (when limit is set) are counted in left instead of written.
type mdWriter struct {
	strings.Builder
	limit, left int
}

// row writes s, a whole row, when it fits in the limit; else counts it.
func (b *mdWriter) row(s string) {
	if b.limit > 0 && (b.left > 0 || b.Len()+len(s) > b.limit) {
		b.left++
		return
	}
	b.WriteString(s)
}

func (b *mdWriter) line(format string, args ...any) {
	fmt.Fprintf(b, format, args...)
	b.WriteByte('\n')
}

// mdEscaper escapes what Markdown (GitHub's, CommonMark with tables and
// strikethrough) would read as markup inside a line: emphasis, code spans,
// links, table cells, HTML and entities. A line never starts with text from
// the scan, so block markup (#, -, 1.) needs no escape.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"|", `\|`, "~", `\~`, "<", "&lt;", ">", "&gt;", "&", "&amp;",
)

// mdText is s as Markdown text that shows s: printable, then escaped.
func mdText(s string) string { return mdEscaper.Replace(printable.Text(s)) }

// mdSafeCode matches what can go in a code span as it is: references,
// digests, codes, file paths. Other text is escaped instead.
var mdSafeCode = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9:@/._+=-]*$`)

// mdCode is s in a code span when nothing in it can end one, else mdText.
func mdCode(s string) string {
	if mdSafeCode.MatchString(s) {
		return "`" + s + "`"
	}
	return mdText(s)
}

// mdTitle is a group's title with its name in a code span: "namespace
// `dam-prod`".
func mdTitle(title, name string) string {
	if name == "" || !strings.HasSuffix(title, name) {
		return mdText(title)
	}
	return mdText(strings.TrimSuffix(title, name)) + mdCode(name)
}
