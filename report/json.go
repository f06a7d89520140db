package report

import (
	"io"

	"github.com/regcheck/regcheck/types"
)

// SchemaVersion is the version of the JSON document JSON writes. It changes
// only when a field is removed or changes meaning; fields may be added.
const SchemaVersion = "regcheck.scan/v1"

// Document is the JSON form of a scan, as documented in docs/json.md.
type Document struct {
	SchemaVersion string         `json:"schemaVersion"`
	Images        []*types.Image `json:"images"`
	// InputErrors are the inputs not read: files, lines, stdin. Those with
	// notice set were skipped on purpose; the others make the scan
	// incomplete. Never null.
	InputErrors []types.InputError `json:"inputErrors"`
	Summary     Summary            `json:"summary"`
}

// Summary counts images by verdict and requests by kind.
type Summary struct {
	Images     int                   `json:"images"`
	Verdicts   map[types.Verdict]int `json:"verdicts"`
	Findings   map[types.Code]int    `json:"findings"`
	Requests   map[string]int        `json:"requests"`
	RequestLog []types.RequestCount  `json:"requestsByHost"`
	DurationMS int64                 `json:"durationMs"`
	// Reasked counts the images a transient fault left unknown that were
	// asked again after a pause; Recovered, those that then got a verdict.
	Reasked   int `json:"reasked"`
	Recovered int `json:"recovered"`
	// RateLimits are the pull budgets registries said (RateLimit headers)
	// and the manifest GETs sent and withheld on each; [] when none.
	RateLimits []types.RateLimit `json:"rateLimits"`
	// Shard says which part of a scan split by repository this is
	// (--shard); absent for a whole scan.
	Shard *types.Shard `json:"shard,omitempty"`
}

// NewDocument builds the JSON document of a result: images worst first.
func NewDocument(r *types.Result) Document {
	s := Summary{
		Images:     len(r.Images),
		Verdicts:   r.Count(),
		Findings:   map[types.Code]int{},
		Requests:   map[string]int{},
		RequestLog: r.Requests,
		DurationMS: r.Duration.Milliseconds(),
		Reasked:    r.Reasked,
		Recovered:  r.Recovered,
		Shard:      r.Shard,
	}
	for _, im := range r.Images {
		for _, f := range im.Findings {
			s.Findings[f.Code]++
		}
	}
	for _, c := range r.Requests {
		s.Requests[c.Kind] += c.Count
	}
	if s.RequestLog == nil {
		s.RequestLog = []types.RequestCount{}
	}
	s.RateLimits = append([]types.RateLimit{}, r.RateLimits...)
	inputs := r.InputErrors
	if inputs == nil {
		inputs = []types.InputError{}
	}
	return Document{SchemaVersion: SchemaVersion, Images: r.Sorted(), InputErrors: inputs, Summary: s}
}

// JSON writes the result as an indented Document.
func JSON(w io.Writer, r *types.Result) error {
	return WriteJSON(w, NewDocument(r))
}
