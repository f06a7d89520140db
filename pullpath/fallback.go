package pullpath

import "net/http"

// Step is a part of a pull that asks endpoints in turn.
type Step int

const (
	// StepResolve asks manifests/<tag or digest> (HEAD, then GET when the
	// answer lacks a digest or size) to learn the digest.
	StepResolve Step = iota
	// StepFetch asks manifests/<digest> and blobs/<digest> for content.
	StepFetch
)

// Outcome is an endpoint's final answer to one request, after the
// runtime's own retries on that endpoint.
type Outcome int

const (
	OutcomeOK          Outcome = iota // 2xx
	OutcomeNotFound                   // 404
	OutcomeRedirect                   // a 3xx the HTTP client did not follow
	OutcomeDenied                     // 401 or 403 once credentials were tried
	OutcomeClientError                // any other 4xx
	OutcomeServerError                // 5xx
	OutcomeTransport                  // no HTTP answer: DNS, connect, TLS, timeout, reset
	OutcomeBlocked                    // registries.conf blocked = true; no request made
	OutcomeTooLarge                   // containerd: a manifest over its 4 MiB limit
)

// Action is what the runtime does after an outcome.
type Action int

const (
	ActionUse  Action = iota // the endpoint serves the step
	ActionNext               // the runtime asks the next endpoint
	ActionFail               // the pull fails now, later endpoints unasked
)

// Rule is one row of a runtime's fallback table.
type Rule struct {
	Step    Step
	Outcome Outcome
	Action  Action
	Note    string
	Source  string // upstream file and function the rule was read in
}

// Fallback is how a runtime moves along Endpoints: per step and outcome,
// whether it uses the endpoint, asks the next, or fails.
type Fallback struct {
	Format string
	Rules  []Rule
	// Sticky is true when the endpoint that resolved the reference serves
	// every later fetch, with no fallback per blob (containers/image).
	Sticky bool
	// Report says which error the runtime reports when no endpoint serves.
	Report map[Step]string
	// Retries says what the runtime retries on one endpoint before an
	// outcome is final.
	Retries string
}

// Next is the action for outcome o at step s; ok is false when the table
// has no such row (the outcome cannot happen in that runtime).
func (f Fallback) Next(s Step, o Outcome) (a Action, ok bool) {
	for _, r := range f.Rules {
		if r.Step == s && r.Outcome == o {
			return r.Action, true
		}
	}
	return ActionFail, false
}

// ClassifyStatus is the outcome of an HTTP status, as the runtimes sort
// them (OutcomeDenied for 401 and 403).
func ClassifyStatus(code int) Outcome {
	switch {
	case code >= 200 && code < 300:
		return OutcomeOK
	case code == http.StatusNotFound:
		return OutcomeNotFound
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return OutcomeDenied
	case code >= 300 && code < 400:
		return OutcomeRedirect
	case code >= 400 && code < 500:
		return OutcomeClientError
	default:
		return OutcomeServerError
	}
}

// Fallback is the table for the runtime that reads this configuration.
func (c *Config) Fallback() Fallback { return FallbackFor(c.format) }

// FallbackFor is the table for a format's runtime: containerd for
// FormatContainerd and FormatK3s, containers/image (CRI-O, podman) for
// FormatRegistriesConf. An unknown format gives an empty table.
func FallbackFor(format string) Fallback {
	switch format {
	case FormatContainerd, FormatK3s:
		return Fallback{Format: format, Rules: containerdRules, Report: containerdReport, Retries: containerdRetries}
	case FormatRegistriesConf:
		return Fallback{Format: format, Rules: imageRules, Report: imageReport, Sticky: true, Retries: imageRetries}
	}
	return Fallback{Format: format}
}

const (
	srcResolve = "containerd core/remotes/docker/resolver.go (*dockerResolver).Resolve"
	srcFetch   = "containerd core/remotes/docker/fetcher.go dockerFetcher.Fetch"
	srcImage   = "containers/image docker/docker_image_src.go newImageSource"
)

var containerdRules = []Rule{
	{StepResolve, OutcomeOK, ActionUse, "a HEAD without digest or size is followed by a GET on the same host; that GET's failure fails the pull", srcResolve},
	{StepResolve, OutcomeNotFound, ActionNext, "error priority 2", srcResolve},
	{StepResolve, OutcomeRedirect, ActionFail, "a 3xx status fails at once", srcResolve},
	{StepResolve, OutcomeDenied, ActionNext, "error priority 3 (priority 1 when the authorizer rejects the credentials)", srcResolve},
	{StepResolve, OutcomeClientError, ActionNext, "error priority 3", srcResolve},
	{StepResolve, OutcomeServerError, ActionNext, "error priority 3", srcResolve},
	{StepResolve, OutcomeTransport, ActionNext, "error priority 1", srcResolve},
	{StepResolve, OutcomeTooLarge, ActionNext, "error priority 4", srcResolve},
	{StepFetch, OutcomeOK, ActionUse, "", srcFetch},
	{StepFetch, OutcomeNotFound, ActionNext, "", srcFetch},
	{StepFetch, OutcomeRedirect, ActionNext, "any status over 299 is an error", srcFetch},
	{StepFetch, OutcomeDenied, ActionNext, "", srcFetch},
	{StepFetch, OutcomeClientError, ActionNext, "", srcFetch},
	{StepFetch, OutcomeServerError, ActionNext, "", srcFetch},
	{StepFetch, OutcomeTransport, ActionNext, "", srcFetch},
}

var containerdReport = map[Step]string{
	StepResolve: "the error of highest priority (transport 1, not found 2, other status 3, too large 4), the first host's among equals; " +
		"for a digest, when every host gave only 404s or transport errors for manifests/<digest>, every host is asked again for blobs/<digest> first",
	StepFetch: "the first host's error; a 404 is reported as \"could not fetch content descriptor ... not found\"",
}

const containerdRetries = "on one host (resolver.go doWithRetries, retryRequest): 401 retried with credentials; " +
	"405 to HEAD manifests retried as GET; 408 and 429 retried (5 attempts in all); 500, 503, 504 retried only on the last host, " +
	"and not after the same status twice; timeouts and EOF retried only on the last host; " +
	"with Endpoint.HTTPFallback, a TLS record or handshake-timeout error retries the request over http"

var imageRules = []Rule{
	{StepResolve, OutcomeOK, ActionUse, "the manifest fetch succeeds; this source serves the rest of the pull", srcImage},
	{StepResolve, OutcomeNotFound, ActionNext, "", srcImage},
	{StepResolve, OutcomeRedirect, ActionNext, "", srcImage},
	{StepResolve, OutcomeDenied, ActionNext, "", srcImage},
	{StepResolve, OutcomeClientError, ActionNext, "", srcImage},
	{StepResolve, OutcomeServerError, ActionNext, "", srcImage},
	{StepResolve, OutcomeTransport, ActionNext, "", srcImage},
	{StepResolve, OutcomeBlocked, ActionNext, "newDockerClient refuses it before any request", "containers/image docker/docker_client.go newDockerClient"},
	{StepFetch, OutcomeOK, ActionUse, "", "containers/image docker/docker_image_src.go GetBlob"},
	{StepFetch, OutcomeNotFound, ActionFail, "blobs come only from the source that served the manifest", "containers/image docker/docker_image_src.go GetBlob"},
	{StepFetch, OutcomeDenied, ActionFail, "", "containers/image docker/docker_image_src.go GetBlob"},
	{StepFetch, OutcomeClientError, ActionFail, "", "containers/image docker/docker_image_src.go GetBlob"},
	{StepFetch, OutcomeServerError, ActionFail, "", "containers/image docker/docker_image_src.go GetBlob"},
	{StepFetch, OutcomeTransport, ActionFail, "", "containers/image docker/docker_image_src.go GetBlob"},
}

var imageReport = map[Step]string{
	StepResolve: "the last source's (the registry's own) error, after \"(Mirrors also failed: [ref: error]...)\"; with one source, its error unchanged",
	StepFetch:   "the error of the source that served the manifest",
}

const imageRetries = "per source (docker/docker_client.go detectPropertiesHelper): a ping to https://host/v2/, and when the source is insecure and it fails, to http://; " +
	"401 answered with credentials for that host"
