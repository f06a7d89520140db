package report

import (
	"encoding/json"
	"fmt"
	"github.com/regcheck/regcheck/internal/version"
	"io"
	"path/filepath"
	"sort"

	"github.com/regcheck/regcheck/scan"
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
}

// SARIFFile locates a result in a file, at a line when line > 0.
func SARIFFile(path string, line int) SARIFLocation {
	loc := SARIFLocation{PhysicalLocation: SARIFPhysicalLocation{ArtifactLocation: SARIFArtifactLocation{URI: filepath.ToSlash(path)}}}
	if line > 0 {
		loc.PhysicalLocation.Region = &SARIFRegion{StartLine: line}
	}
	return loc
}

// WriteSARIF writes a SARIF 2.1.0 log of one run, indented.
func WriteSARIF(w io.Writer, run SARIFRun) error {
	if run.Results == nil {
		run.Results = []SARIFResult{}
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(SARIFLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []SARIFRun{run}})
}

// SARIFLevel is the SARIF level of a severity: critical and high are
// errors, warning is a warning, info a note.
func SARIFLevel(s scan.Severity) string {
	switch {
	case s >= scan.SeverityHigh:
		return "error"
	case s == scan.SeverityWarning:
		return "warning"
	}
	return "note"
}

// codeDescriptions are the rules' short descriptions, as docs/json.md
// explains the codes.
var codeDescriptions = map[scan.Code]string{
	scan.TagMissing:           "the tag does not exist",
	scan.ManifestMissing:      "a digest (pinned, or the tag's target) no longer exists",
	scan.ChildMissing:         "an index child a platform needs is gone",
	scan.BlobMissing:          "a config or layer blob is gone",
	scan.DigestMismatch:       "the bytes served do not hash to the digest asked for",
	scan.InvalidReference:     "the image reference cannot be parsed",
	scan.AttestationMissing:   "only attestation manifests are gone; the image still runs",
	scan.UnsupportedMedia:     "a manifest type regcheck does not walk",
	scan.ForeignLayer:         "a non-distributable layer, not checked",
	scan.Drift:                "the tag resolves to another digest than the container runs",
	scan.RunningDigestMissing: "the running digest is gone from the registry; only node caches hold it",
	scan.MutableReference:     "referenced by tag, not pinned by digest",
	scan.PullAlwaysMutable:    "imagePullPolicy Always on a tag",
	scan.PinnedDigestUntagged: "a pinned digest no tag points at: a garbage collector may delete it",
	scan.ImageIDOnly:          "the runtime reports an image ID, not a registry digest",
	scan.Unauthorized:         "the registry asked for credentials: the image could not be checked",
	scan.Forbidden:            "the registry refused access: the image could not be checked",
	scan.RateLimited:          "the registry rate-limited the check: the image could not be checked",
	scan.RegistryFault:        "the registry failed: the image could not be checked",
	scan.Unreachable:          "the registry could not be reached: the image could not be checked",
}

// SARIF writes the result as a SARIF 2.1.0 log for code scanning: one rule
// per finding code present, one result per finding and manifest file line
// using the image, images worst first. Code scanning rejects a whole log
// when one result has no file, so findings of images used only from the
// command line, stdin or a cluster are left out: -o json has them.
func SARIF(w io.Writer, r *scan.Result) error {
	run := SARIFRun{Tool: SARIFTool{Driver: SARIFDriver{Name: "regcheck", Version: ToolVersion(), InformationURI: InformationURI, Rules: []SARIFRule{}}}}
	var codes []scan.Code
	seen := map[scan.Code]bool{}
	for _, im := range r.Images {
		for _, f := range im.Findings {
			if !seen[f.Code] {
				seen[f.Code] = true
				codes = append(codes, f.Code)
			}
		}
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	index := map[scan.Code]int{}
	for i, c := range codes {
		desc := codeDescriptions[c]
		if desc == "" {
			desc = string(c)
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, SARIFRule{
			ID: string(c), Name: string(c), ShortDescription: SARIFText{desc},
			DefaultConfiguration: SARIFConfiguration{SARIFLevel(c.Severity())},
		})
		index[c] = i
	}
	for _, lf := range locatedFindings(r) {
		run.Results = append(run.Results, SARIFResult{
			RuleID: string(lf.Code), RuleIndex: index[lf.Code], Level: SARIFLevel(lf.Severity),
			Message: SARIFText{lf.text}, Locations: []SARIFLocation{SARIFFile(lf.file, lf.line)},
		})
	}
	return WriteSARIF(w, run)
}

// locatedFinding is a finding placed on one file line that uses its image.
type locatedFinding struct {
	scan.Finding
	file string
	line int
	text string // "reference: message", then the advice on its own line
}

// locatedFindings places every finding on each manifest (or image list)
// line using its image, worst images first, once per (code, line, text).
// Findings of images used from no file have no place and are left out:
// SARIF and GitHub annotations both need a file.
func locatedFindings(r *scan.Result) []locatedFinding {
	type key struct {
		code       scan.Code
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
func inFile(u scan.Use) bool {
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
