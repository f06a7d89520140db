package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/regcheck/regcheck/scan"
)

// Annotation is one GitHub Actions annotation: a workflow command that
// marks a file's line in a run's summary and a pull request's diff.
type Annotation struct {
	// Level is "error", "warning" or "notice".
	Level string
	// File and Line locate it; Line 0 marks the whole file.
	File string
	Line int
	// Title heads it; Message is its text and may span lines.
	Title   string
	Message string
}

// GitHubAnnotations writes each annotation as a workflow command,
// "::warning file=…,line=…,title=…::message", escaped as the Actions toolkit
// does: %, CR and LF everywhere, and : and , in properties too.
func GitHubAnnotations(w io.Writer, as []Annotation) error {
	for _, a := range as {
		props := "file=" + ghProperty(filepath.ToSlash(a.File))
		if a.Line > 0 {
			props += fmt.Sprintf(",line=%d", a.Line)
		}
		props += ",title=" + ghProperty(a.Title)
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", a.Level, props, ghData(a.Message)); err != nil {
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
func GitHub(w io.Writer, r *scan.Result) error {
	var as []Annotation
	for _, lf := range locatedFindings(r) {
		as = append(as, Annotation{Level: GitHubLevel(SARIFLevel(lf.Severity)), File: lf.file, Line: lf.line, Title: string(lf.Code), Message: lf.text})
	}
	return GitHubAnnotations(w, as)
}
