package pullpath

import "testing"

func TestFallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		format  string
		step    Step
		outcome Outcome
		want    Action
		ok      bool
	}{
		// containerd resolver.go Resolve: 404 and other statuses over 399
		// try the next host; a 3xx the client did not follow fails at once.
		{"containerd resolve 404", FormatContainerd, StepResolve, OutcomeNotFound, ActionNext, true},
		{"containerd resolve 5xx", FormatContainerd, StepResolve, OutcomeServerError, ActionNext, true},
		{"containerd resolve connection error", FormatContainerd, StepResolve, OutcomeTransport, ActionNext, true},
		{"containerd resolve 3xx", FormatContainerd, StepResolve, OutcomeRedirect, ActionFail, true},
		{"containerd resolve ok", FormatContainerd, StepResolve, OutcomeOK, ActionUse, true},
		// fetcher.go Fetch: any error tries the next host.
		{"containerd fetch 3xx", FormatContainerd, StepFetch, OutcomeRedirect, ActionNext, true},
		{"containerd fetch 401", FormatContainerd, StepFetch, OutcomeDenied, ActionNext, true},
		{"k3s is containerd", FormatK3s, StepResolve, OutcomeNotFound, ActionNext, true},
		{"containerd has no blocked", FormatContainerd, StepResolve, OutcomeBlocked, ActionFail, false},
		// containers/image newImageSource: any failure tries the next
		// source; blobs come only from the source that served the manifest.
		{"cri-o resolve 404", FormatRegistriesConf, StepResolve, OutcomeNotFound, ActionNext, true},
		{"cri-o resolve blocked", FormatRegistriesConf, StepResolve, OutcomeBlocked, ActionNext, true},
		{"cri-o fetch 404", FormatRegistriesConf, StepFetch, OutcomeNotFound, ActionFail, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := FallbackFor(tt.format).Next(tt.step, tt.outcome)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Next() = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if !FallbackFor(FormatRegistriesConf).Sticky || FallbackFor(FormatContainerd).Sticky {
		t.Errorf("Sticky: registries.conf must be, containerd must not")
	}
	if c := mustLoad(t, "testdata/certs.d"); c.Fallback().Format != FormatContainerd {
		t.Errorf("Config.Fallback() is for %q", c.Fallback().Format)
	}
}

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code int
		want Outcome
	}{
		{200, OutcomeOK}, {307, OutcomeRedirect}, {401, OutcomeDenied}, {403, OutcomeDenied},
		{404, OutcomeNotFound}, {429, OutcomeClientError}, {500, OutcomeServerError}, {503, OutcomeServerError},
	}
	for _, tt := range tests {
		if got := ClassifyStatus(tt.code); got != tt.want {
			t.Errorf("ClassifyStatus(%d) = %v, want %v", tt.code, got, tt.want)
		}
	}
}
