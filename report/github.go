package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/types"
)

// Annotation is one GitHub Actions annotation: a workflow command that
// marks a file's line in a run's summary and a pull request's diff.
type Annotation struct {
	// Level is "error", "warning" or "notice".
	Level string
	// File, Line and Col locate it; Line 0 marks the whole file, Col 0
	// the whole line.
	File string
	Line int
	Col  int
	// Title heads it; Message is its text and may span lines.
	Title   string
	Message string
}

// GitHubAnnotations writes each annotation as a workflow command,
// "::warning file=…,line=…,title=…::message", escaped as the Actions toolkit
// does: %, CR and LF everywhere, and : and , in properties too. Control
// characters are made visible first (Printable; line feeds in a message are
// kept and encoded). An annotation with no file names none.
func GitHubAnnotations(w io.Writer, as []Annotation) error {
	for _, a := range as {
		var props []string
		if a.File != "" {
			props = append(props, "file="+ghProperty(printable.Text(filepath.ToSlash(a.File))))
			if a.Line > 0 {
				props = append(props, fmt.Sprintf("line=%d", a.Line))
				if a.Col > 0 {
					props = append(props, fmt.Sprintf("col=%d", a.Col))
				}
			}
		}
		props = append(props, "title="+ghProperty(printable.Text(a.Title)))
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", a.Level, strings.Join(props, ","), ghData(printable.Lines(a.Message))); err != nil {
			return err
		}
	}
	return nil
}

// GitHubLevel is the annotation level of a SARIF level: "note" is "notice".
func GitHubLevel(sarifLevel string) string {
	if sarifLevel == "note" {
		return "notice"
	}
	return sarifLevel
}

var (
	ghDataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghPropertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func ghData(s string) string     { return ghDataEscaper.Replace(s) }
func ghProperty(s string) string { return ghPropertyEscaper.Replace(s) }

// GitHub writes a scan's findings as GitHub Actions annotations, one per
// finding and manifest line using the image (as SARIF places them), worst
// first; findings of images used from no file are left out, as in SARIF.
// Then one annotation per input not read: an error, or a notice for one
// skipped on purpose, on its file and line (stdin has none).
func GitHub(w io.Writer, r *types.Result) error {
	var as []Annotation
	for _, lf := range locatedFindings(r) {
		as = append(as, Annotation{Level: GitHubLevel(SARIFLevel(lf.Severity)), File: lf.file, Line: lf.line, Title: string(lf.Code), Message: lf.text})
	}
	for _, ie := range r.InputErrors {
		a := Annotation{Level: "error", Title: InputErrorRule, Line: ie.Line, Col: ie.Column, Message: ie.Message}
		if ie.Notice {
			a.Level, a.Title = "notice", InputSkippedRule
		}
		if inputInFile(ie) {
			a.File = ie.Source
		} else {
			a.Line, a.Col, a.Message = 0, 0, inputLocation(ie)+": "+ie.Message
		}
		as = append(as, a)
	}
	return GitHubAnnotations(w, as)
}
