package report

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/internal/version"
	"github.com/regcheck/regcheck/types"
)

// SARIF 2.1.0, the parts GitHub code scanning reads. The model is shared by
// scan -o sarif (SARIF) and pin --check -o sarif.

// SARIFSchema is the $schema SARIF logs name.
const SARIFSchema = "https://json.schemastore.org/sarif-2.1.0.json"

// InformationURI is the tool's home page, as SARIF drivers name it.
const InformationURI = "https://github.com/regcheck/regcheck"

// SARIFLog is a SARIF log: its schema, version and runs.
type SARIFLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []SARIFRun `json:"runs"`
}

// SARIFRun is one run of a tool and what it found.
type SARIFRun struct {
	Tool    SARIFTool     `json:"tool"`
	Results []SARIFResult `json:"results"`
	// Invocations, when set, carry notifications that have no file to be
	// a result on (an input read from stdin).
	Invocations []SARIFInvocation `json:"invocations,omitempty"`
}

// SARIFInvocation is how the tool ran: whether it ran to the end, and what
// it has to say about the run itself.
type SARIFInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []SARIFNotification `json:"toolExecutionNotifications,omitempty"`
}

// SARIFNotification is a message about the run, at a level ("error",
// "warning" or "note"), about a file when it has a location.
type SARIFNotification struct {
	Level     string          `json:"level"`
	Message   SARIFText       `json:"message"`
	Locations []SARIFLocation `json:"locations,omitempty"`
}

// SARIFTool holds the driver: the tool itself.
type SARIFTool struct {
	Driver SARIFDriver `json:"driver"`
}

// SARIFDriver names the tool and lists its rules; results refer to a rule by
// id and index.
type SARIFDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []SARIFRule `json:"rules"`
}

// SARIFText is a plain-text message.
type SARIFText struct {
	Text string `json:"text"`
}

// SARIFRule is one kind of result.
type SARIFRule struct {
	ID                   string             `json:"id"`
	Name                 string             `json:"name"`
	ShortDescription     SARIFText          `json:"shortDescription"`
	DefaultConfiguration SARIFConfiguration `json:"defaultConfiguration"`
}

// SARIFConfiguration is a rule's default level.
type SARIFConfiguration struct {
	Level string `json:"level"`
}

// SARIFResult is one result: a rule, a level ("error", "warning" or "note"),
// a message and where.
type SARIFResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   SARIFText       `json:"message"`
	Locations []SARIFLocation `json:"locations"`
}

// SARIFLocation is where a result is.
type SARIFLocation struct {
	PhysicalLocation SARIFPhysicalLocation `json:"physicalLocation"`
}

// SARIFPhysicalLocation is a file and, when known, a line in it.
type SARIFPhysicalLocation struct {
	ArtifactLocation SARIFArtifactLocation `json:"artifactLocation"`
	Region           *SARIFRegion          `json:"region,omitempty"`
}

// SARIFArtifactLocation is a file's URI: a path with forward slashes.
type SARIFArtifactLocation struct {
	URI string `json:"uri"`
}

// SARIFRegion is a line of a file, from 1.
type SARIFRegion struct {
	StartLine int `json:"startLine"`
	// StartColumn is the column on StartLine, when known.
	StartColumn int `json:"startColumn,omitempty"`
}

// SARIFFile locates a result in a file, at a line when line > 0.
func SARIFFile(path string, line int) SARIFLocation {
	loc := SARIFLocation{PhysicalLocation: SARIFPhysicalLocation{ArtifactLocation: SARIFArtifactLocation{URI: filepath.ToSlash(path)}}}
	if line > 0 {
		loc.PhysicalLocation.Region = &SARIFRegion{StartLine: line}
	}
	return loc
}

// sarifInput locates an input error in its file, at its line and column
// when known.
func sarifInput(ie types.InputError) SARIFLocation {
	loc := SARIFFile(ie.Source, ie.Line)
	if r := loc.PhysicalLocation.Region; r != nil && ie.Column > 0 {
		r.StartColumn = ie.Column
	}
	return loc
}

// WriteSARIF writes a SARIF 2.1.0 log of one run, indented (WriteJSON).
// Messages, which viewers show as text, go through Printable, keeping
// line feeds.
func WriteSARIF(w io.Writer, run SARIFRun) error {
	results := make([]SARIFResult, len(run.Results))
	for i, r := range run.Results {
		r.Message.Text = printable.Lines(r.Message.Text)
		results[i] = r
	}
	run.Results = results
	invocations := make([]SARIFInvocation, len(run.Invocations))
	for i, inv := range run.Invocations {
		ns := make([]SARIFNotification, len(inv.ToolExecutionNotifications))
		for j, n := range inv.ToolExecutionNotifications {
			n.Message.Text = printable.Lines(n.Message.Text)
			ns[j] = n
		}
		inv.ToolExecutionNotifications = ns
		invocations[i] = inv
	}
	run.Invocations = invocations
	return WriteJSON(w, SARIFLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []SARIFRun{run}})
}

// SARIFLevel is the SARIF level of a severity: critical and high are
// errors, warning is a warning, info a note.
func SARIFLevel(s types.Severity) string {
	switch {
	case s >= types.SeverityHigh:
		return "error"
	case s == types.SeverityWarning:
		return "warning"
	}
	return "note"
}

// Rules of inputs that were not read, beside the finding codes.
const (
	InputErrorRule   = "input-error"   // a file or line that could not be read: the scan is incomplete
	InputSkippedRule = "input-skipped" // a file skipped on purpose (a Helm template, not a regular file)
)

// inputErrorRule is the SARIF rule of an input not read. An input skipped
// on purpose is a notification, not a result: code scanning would keep an
// alert open on every Helm template.
var inputErrorRule = SARIFRule{ID: InputErrorRule, Name: InputErrorRule,
	ShortDescription:     SARIFText{"an input could not be read: its images were not scanned"},
	DefaultConfiguration: SARIFConfiguration{"error"}}

// inputInFile reports whether an input error is about a file a repository
// can hold, rather than stdin.
func inputInFile(ie types.InputError) bool {
	return ie.Source != "" && ie.Source != "stdin" && ie.Source != "-"
}

// SARIF writes the result as a SARIF 2.1.0 log for code scanning: one rule
// per finding code present, one result per finding and manifest file line
// using the image, images worst first. Code scanning rejects a whole log
// when one result has no file, so findings of images used only from the
// command line, stdin or a cluster are left out: -o json has them. An input
// not read is a result of the rule input-error on its file and line; one
// read from stdin, and an input skipped on purpose (level note), is a
// notification of the run's invocation.
func SARIF(w io.Writer, r *types.Result) error {
	run := SARIFRun{Tool: SARIFTool{Driver: SARIFDriver{Name: "regcheck", Version: ToolVersion(), InformationURI: InformationURI, Rules: []SARIFRule{}}}}
	var codes []types.Code
	seen := map[types.Code]bool{}
	for _, im := range r.Images {
		for _, f := range im.Findings {
			if !seen[f.Code] {
				seen[f.Code] = true
				codes = append(codes, f.Code)
			}
		}
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	index := map[string]int{}
	for i, c := range codes {
		desc := c.Description() // the vocabulary's one table (package types)
		if desc == "" {
			desc = string(c)
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, SARIFRule{
			ID: string(c), Name: string(c), ShortDescription: SARIFText{desc},
			DefaultConfiguration: SARIFConfiguration{SARIFLevel(c.Severity())},
		})
		index[string(c)] = i
	}
	for _, lf := range locatedFindings(r) {
		run.Results = append(run.Results, SARIFResult{
			RuleID: string(lf.Code), RuleIndex: index[string(lf.Code)], Level: SARIFLevel(lf.Severity),
			Message: SARIFText{lf.text}, Locations: []SARIFLocation{SARIFFile(lf.file, lf.line)},
		})
	}
	var notes []SARIFNotification
	for _, ie := range r.InputErrors {
		if ie.Notice || !inputInFile(ie) {
			n := SARIFNotification{Level: "error", Message: SARIFText{inputLocation(ie) + ": " + ie.Message}}
			if ie.Notice {
				n.Level = "note"
			}
			if inputInFile(ie) {
				n.Locations = []SARIFLocation{sarifInput(ie)}
			}
			notes = append(notes, n)
			continue
		}
		i, ok := index[InputErrorRule]
		if !ok {
			i = len(run.Tool.Driver.Rules)
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, inputErrorRule)
			index[InputErrorRule] = i
		}
		run.Results = append(run.Results, SARIFResult{
			RuleID: InputErrorRule, RuleIndex: i, Level: "error",
			Message: SARIFText{ie.Message}, Locations: []SARIFLocation{sarifInput(ie)},
		})
	}
	if len(notes) > 0 {
		run.Invocations = []SARIFInvocation{{ExecutionSuccessful: true, ToolExecutionNotifications: notes}}
	}
	return WriteSARIF(w, run)
}

// locatedFinding is a finding placed on one file line that uses its image.
type locatedFinding struct {
	types.Finding
	file string
	line int
	text string // "reference: message", then the advice on its own line
}

// locatedFindings places every finding on each manifest (or image list)
// line using its image, worst images first, once per (code, line, text).
// Findings of images used from no file have no place and are left out:
// SARIF and GitHub annotations both need a file.
func locatedFindings(r *types.Result) []locatedFinding {
	type key struct {
		code       types.Code
		file, text string
		line       int
	}
	var out []locatedFinding
	done := map[key]bool{}
	for _, im := range r.Sorted() {
		for _, f := range im.Findings {
			text := fmt.Sprintf("%s: %s", im.Reference, f.Message)
			if f.Advice != "" {
				text += "\n" + f.Advice
			}
			for _, u := range im.Uses {
				k := key{f.Code, u.File, text, u.Line}
				if !inFile(u) || done[k] {
					continue
				}
				done[k] = true
				out = append(out, locatedFinding{Finding: f, file: u.File, line: u.Line, text: text})
			}
		}
	}
	return out
}

// inFile reports whether a use is a line of a file a repository can hold:
// a manifest, or an --images-from list other than stdin.
func inFile(u types.Use) bool {
	return u.File != "" && !(u.Source == "images-from" && u.File == "stdin")
}

// ToolVersion is regcheck's version for a SARIF tool entry; "" for a
// development build.
func ToolVersion() string {
	if v := version.String(); v != "dev" {
		return v
	}
	return ""
}
