package report

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/types"
)

// PinCheckFormats are the formats PinCheck writes.
var PinCheckFormats = []string{"text", "json", "sarif", "github"}

// PinCheck writes what pin --check found to out in format (one of
// PinCheckFormats; text is one finding a line). Then, on notes, the files
// skipped on purpose (Helm templates, files that are not regular) when the
// format is not text, which shows them already, and a count of the
// references not pinned.
func PinCheck(out, notes io.Writer, format string, r *pinresult.Report) error {
	var err error
	switch format {
	case "text":
		err = pinFindings(out, r.Findings)
	case "json":
		err = pinJSON(out, r)
	case "sarif":
		err = pinSARIF(out, r)
	case "github":
		err = pinGitHub(out, r)
	default:
		return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(PinCheckFormats, ", "))
	}
	if err != nil {
		return err
	}
	unpinned, files := 0, map[string]bool{}
	for _, fd := range r.Findings {
		switch {
		case fd.Kind == pinresult.KindUnpinned || fd.Kind == pinresult.KindInvalid:
			unpinned++
			files[filepath.Clean(fd.File)] = true // M: the files holding one, not the files read; one file however written
		case format != "text" && (fd.Kind == pinresult.KindTemplate || fd.Kind == pinresult.KindSkipped):
			fmt.Fprintln(notes, printable.Text(fd.String()))
		}
	}
	_, err = fmt.Fprintf(notes, "%d unpinned references in %d files\n", unpinned, len(files))
	return err
}

// Pin writes what a pin run did. On out: with pinresult.Report.Written, the
// changes made, one a line ("file:line: ref → ref@digest"); otherwise a
// unified diff of each file that would change. On notes: in a preview, the
// pins that would move (the diff shows them only as lines); then every
// finding, and a summary with the registry requests sent.
func Pin(out, notes io.Writer, r *pinresult.Report) error {
	if r.Written {
		for _, ch := range r.Changes {
			if ch.Skipped == "" {
				fmt.Fprintln(out, printable.Text(changeLine(ch)))
			}
		}
	} else {
		for _, file := range r.Changed() {
			// The path is escaped; the lines are the file's, which YAML
			// keeps free of control characters (a file with one does
			// not parse, so is never changed).
			if _, err := out.Write(pinresult.Diff(printable.Text(file.Path), file.Old, file.New)); err != nil {
				return err
			}
		}
		for _, ch := range r.Changes {
			if ch.Skipped == "" && pinresult.Pinned(ch.Old) {
				fmt.Fprintln(notes, printable.Text(changeLine(ch)))
			}
		}
	}
	pinFindings(notes, r.Findings)
	pinned := 0
	for _, ch := range r.Changes {
		if ch.Skipped == "" && ch.Field == "image" {
			pinned++
		}
	}
	verb := "would pin"
	if r.Written {
		verb = "pinned"
	}
	_, err := fmt.Fprintf(notes, "%s %d references in %d of %d files; %s\n", verb, pinned, len(r.Changed()), len(r.Files), requestSummary(r.Requests))
	return err
}

// pinFindings writes each finding on a line.
func pinFindings(w io.Writer, findings []pinresult.Finding) error {
	for _, fd := range findings {
		if _, err := fmt.Fprintln(w, printable.Text(fd.String())); err != nil {
			return err
		}
	}
	return nil
}

// pinJSON writes the findings as {"files": n, "findings": [...]}.
func pinJSON(w io.Writer, r *pinresult.Report) error {
	findings := r.Findings
	if findings == nil {
		findings = []pinresult.Finding{}
	}
	return WriteJSON(w, struct {
		Files    int                 `json:"files"`
		Findings []pinresult.Finding `json:"findings"`
	}{len(r.Files), findings})
}

// pinSARIF writes the findings as SARIF 2.1.0: one rule per pin kind, one
// result per finding at its file and line; a finding of no file is a
// notification of the run's invocation.
func pinSARIF(w io.Writer, r *pinresult.Report) error {
	d := SARIFDriver{Name: "regcheck", Version: ToolVersion(), InformationURI: InformationURI}
	index := map[pinresult.Kind]int{}
	for i, k := range pinresult.Kinds {
		d.Rules = append(d.Rules, SARIFRule{
			ID: string(k), Name: string(k), ShortDescription: SARIFText{Text: k.Describe()},
			DefaultConfiguration: SARIFConfiguration{Level: k.Level()},
		})
		index[k] = i
	}
	run := SARIFRun{Tool: SARIFTool{Driver: d}, Results: []SARIFResult{}}
	var notes []SARIFNotification
	for _, fd := range r.Findings {
		if fd.File == "" {
			// Code scanning rejects a result with no file: a finding of
			// none (the cluster's image policies) is a notification.
			notes = append(notes, SARIFNotification{Level: fd.Kind.Level(), Message: SARIFText{string(fd.Kind) + ": " + fd.Message}})
			continue
		}
		run.Results = append(run.Results, SARIFResult{
			RuleID: string(fd.Kind), RuleIndex: index[fd.Kind], Level: fd.Kind.Level(),
			Message: SARIFText{Text: fd.Message}, Locations: []SARIFLocation{SARIFFile(fd.File, fd.Line)},
		})
	}
	if len(notes) > 0 {
		run.Invocations = []SARIFInvocation{{ExecutionSuccessful: true, ToolExecutionNotifications: notes}}
	}
	return WriteSARIF(w, run)
}

// pinGitHub writes the findings as GitHub Actions annotations.
func pinGitHub(w io.Writer, r *pinresult.Report) error {
	as := make([]Annotation, len(r.Findings))
	for i, fd := range r.Findings {
		as[i] = Annotation{Level: GitHubLevel(fd.Kind.Level()), File: fd.File, Line: fd.Line, Title: string(fd.Kind), Message: fd.Message}
	}
	return GitHubAnnotations(w, as)
}

// changeLine is "file:line: ref → ref@digest", or for a moved pin
// "file:line: repo:tag sha256:old → sha256:new".
func changeLine(ch pinresult.Change) string {
	oldName, oldDigest, moved := strings.Cut(ch.Old, "@")
	_, newDigest, _ := strings.Cut(ch.New, "@")
	switch {
	case ch.Field != "image":
		return fmt.Sprintf("%s:%d: %s %s → %s", ch.File, ch.Line, ch.Field, ch.Old, ch.New)
	case moved:
		return fmt.Sprintf("%s:%d: %s %s → %s", ch.File, ch.Line, oldName, oldDigest, newDigest)
	}
	return fmt.Sprintf("%s:%d: %s → %s", ch.File, ch.Line, ch.Old, ch.New)
}

// requestSummary is "N registry requests (kind n, …)".
func requestSummary(rc []types.RequestCount) string {
	total := 0
	byKind := map[string]int{}
	var kinds []string
	for _, c := range rc {
		total += c.Count
		if byKind[c.Kind] == 0 {
			kinds = append(kinds, c.Kind)
		}
		byKind[c.Kind] += c.Count
	}
	if total == 0 {
		return "0 registry requests"
	}
	slices.Sort(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, byKind[k])
	}
	return fmt.Sprintf("%d registry requests (%s)", total, strings.Join(parts, ", "))
}
