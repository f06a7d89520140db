package pullpath

import (
	"fmt"
	"testing"
)

// Every (step, outcome) of each runtime's table, as the source each row
// cites decides it; a row the runtime cannot meet is absent (ok false).
// A change to any row, an added row or a lost one fails here.
//
// containerd v2.4 core/remotes/docker/resolver.go (*dockerResolver).Resolve:
// a doWithRetries error (transport, and ErrInvalidAuthorization when the
// authorizer rejects the credentials) stores the error at priority 1 and
// continues with the next host; 404 stores priority 2 and continues; any
// other status over 399 (401, 403 included: the resolver does not stop on
// them) priority 3 and continues; a status 300–399 the client did not
// follow returns at once; a manifest over the limit continues at priority
// 4. fetcher.go dockerFetcher.Fetch: every error of one host (any status
// over 299, or no answer) tries the next host.
//
// containers/image v5 docker/docker_image_src.go newImageSource: every
// pull source is tried in order, any failure (a blocked source before a
// request, too) moving to the next; GetBlob reads only from the source
// that served the manifest, so any failure there fails the pull.
func TestFallbackEveryRow(t *testing.T) {
	const absent = Action(-1)
	steps := []Step{StepResolve, StepFetch}
	outcomes := []Outcome{OutcomeOK, OutcomeNotFound, OutcomeRedirect, OutcomeDenied, OutcomeClientError,
		OutcomeServerError, OutcomeTransport, OutcomeBlocked, OutcomeTooLarge}
	want := map[string]map[Step][]Action{ // indexed as outcomes
		FormatContainerd: {
			StepResolve: {ActionUse, ActionNext, ActionFail, ActionNext, ActionNext, ActionNext, ActionNext, absent, ActionNext},
			StepFetch:   {ActionUse, ActionNext, ActionNext, ActionNext, ActionNext, ActionNext, ActionNext, absent, absent},
		},
		FormatRegistriesConf: {
			StepResolve: {ActionUse, ActionNext, ActionNext, ActionNext, ActionNext, ActionNext, ActionNext, ActionNext, absent},
			StepFetch:   {ActionUse, ActionFail, absent, ActionFail, ActionFail, ActionFail, ActionFail, absent, absent},
		},
	}
	want[FormatK3s] = want[FormatContainerd]
	for format, byStep := range want {
		f := FallbackFor(format)
		rows := 0
		for _, s := range steps {
			for i, o := range outcomes {
				t.Run(fmt.Sprintf("%s/%d/%d", format, s, o), func(t *testing.T) {
					got, ok := f.Next(s, o)
					w := byStep[s][i]
					if w == absent {
						if ok {
							t.Errorf("%s has a row for step %d outcome %d (%v); the runtime cannot meet it", format, s, o, got)
						}
						return
					}
					rows++
					if !ok || got != w {
						t.Errorf("%s step %d outcome %d: %v (row %v), want %v", format, s, o, got, ok, w)
					}
				})
			}
		}
		if rows != len(f.Rules) {
			t.Errorf("%s: the table has %d rows, the runtime's rules %d", format, len(f.Rules), rows)
		}
	}
}

// Every status class, the gateway errors included: a 502 or a 504 is a
// server's fault, never a 404.
func TestClassifyEveryStatus(t *testing.T) {
	for code, want := range map[int]Outcome{
		200: OutcomeOK, 204: OutcomeOK, 301: OutcomeRedirect, 307: OutcomeRedirect, 400: OutcomeClientError,
		401: OutcomeDenied, 403: OutcomeDenied, 404: OutcomeNotFound, 405: OutcomeClientError, 408: OutcomeClientError,
		410: OutcomeClientError, 429: OutcomeClientError, 500: OutcomeServerError, 502: OutcomeServerError,
		503: OutcomeServerError, 504: OutcomeServerError,
	} {
		if got := ClassifyStatus(code); got != want {
			t.Errorf("ClassifyStatus(%d) = %v, want %v", code, got, want)
		}
	}
}
